//! `CircuitBreaker`: the public face of one circuit. The jobs behind it each have a module:
//!
//! - [`circuit`]: the state one circuit shares, composed of the parts below, kept consistent;
//! - [`closed_counts`]: what a closed circuit counts towards a trip, lock-free;
//! - [`cache`]: this environment's copy of the shared record and what it knows besides;
//! - [`rejection`]: the cached rejection, published for the open path to read lock-free;
//! - [`store_access`]: the circuit's store calls and the back-off after an error;
//! - [`admission`]: admission of one call: the closed path, a cached rejection, the slow path;
//! - [`permit`]: an admitted call and the report of how it ended;
//! - [`probe_slot`]: this process's one probe of a circuit;
//! - [`transitions`]: what a call's outcome leads to: a trip, a fleet report, the probe's
//!   outcome;
//! - [`seam`]: where transitions go (the store, or shadow mode's would-be record), chosen
//!   in one place;
//! - [`commit`]: the one commit seam every transition goes through, then one announcement;
//! - [`would_be`]: shadow mode's would-be record and its `on_shadow` hooks;
//! - [`registry`]: the circuits per name and store, and what a warm-up read for them;
//! - [`dispatch`]: the one way out of every event: metrics, log, hooks;
//! - [`hooks`]: the `on_transition` and `on_shadow` hooks;
//! - [`call`] and [`admitted`]: the hand-written futures of a guarded call;
//! - `owned` (feature `tower`): a permit's owned handle, for futures that own their breaker.
//!
//! Hot path (closed, cached): no clock read (the recent time is one atomic load of what the
//! clock thread read), one atomic load of the cached state, the call, and at most one
//! atomic store. Open path (a rejection from the cache): the recent time and a few atomic
//! loads, no lock, no allocation. Everything else takes the slow path under a short std
//! mutex that is never held across an await or a hook.

use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;
use std::time::Instant;

mod abandon;
mod admission;
mod admitted;
mod cache;
mod call;
mod circuit;
mod closed_counts;
mod commit;
mod dispatch;
mod fleet_reports;
mod hooks;
#[cfg(feature = "tower")]
mod owned;
mod permit;
mod probe_slot;
mod recording;
mod registry;
mod rejection;
mod run_admitted;
mod seam;
mod shedding;
mod slow_start;
mod store_access;
mod transitions;
mod would_be;

pub use admission::{PermitRequest, fast_permit, request_permit, request_permit_blocking};
pub use call::{GuardedCall, Stopped, guarded_call};
pub(crate) use circuit::KeyOf;
pub(crate) use hooks::Hooks;
#[cfg(feature = "tower")]
pub(crate) use owned::{Owned, OwnedFuture, SlowAdmission};
pub use permit::{ErrorVerdict, Permit, Recording, classify};
pub use run_admitted::{RunAdmitted, run_admitted};

use crate::config::CircuitBreakerConfig;
use crate::error::{CallAbandonedError, CircuitBreakerOpenError};
use crate::events::{CircuitInfo, CircuitTransition, ShadowEvent};
use crate::protocol::CircuitRecord;
use crate::protocol::CircuitState;
use crate::protocol::machine::Outcome;
use crate::store::StateStore;
use circuit::Circuit;

/// A circuit breaker without the attribute: for tower layers, queue consumers and any code
/// that can't use `#[circuit_breaker]`. Clones share one circuit.
///
/// ```
/// use std::sync::Arc;
/// use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError};
/// use breaker_runtime::store::InMemoryStore;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let config = CircuitBreakerConfig::builder().failure_threshold(2).build().unwrap();
/// let breaker = CircuitBreaker::new("payment-backend", Arc::new(InMemoryStore::new()), config);
///
/// for _ in 0..2 {
///     let _ = breaker.call(|| async { Err::<(), _>(anyhow::anyhow!("503")) }).await;
/// }
/// let rejected = breaker.call(|| async { Ok::<_, anyhow::Error>("never runs") }).await;
/// assert!(rejected.unwrap_err().downcast_ref::<CircuitBreakerOpenError>().is_some());
/// # }
/// ```
#[derive(Clone)]
pub struct CircuitBreaker {
    circuit: Arc<Circuit>,
}

impl fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("name", self.circuit.name())
            .field("state", &self.state())
            .field("config", self.circuit.config())
            .field("store", self.circuit.store())
            .finish()
    }
}

impl CircuitBreaker {
    /// A circuit named `name` whose shared state lives in `store`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig};
    /// use breaker_runtime::store::InMemoryStore;
    /// let breaker = CircuitBreaker::new("ce", Arc::new(InMemoryStore::new()), CircuitBreakerConfig::default());
    /// assert_eq!(breaker.name(), "ce");
    /// assert_eq!(breaker.config().failure_threshold(), 5);
    /// ```
    pub fn new(
        name: impl Into<String>,
        store: Arc<dyn StateStore>,
        config: CircuitBreakerConfig,
    ) -> Self {
        Self {
            circuit: registry::own_circuit(name.into().into(), store, config),
        }
    }

    /// The circuit of `key` in the keyed circuit `name`, on `store` (which maps the name to
    /// the key's item); seeded as known closed until `closed_until` (unix millis) when the
    /// keyed circuit's index says so.
    pub(crate) fn for_key(
        name: Arc<str>,
        key: KeyOf,
        store: Arc<dyn StateStore>,
        config: CircuitBreakerConfig,
        closed_until: Option<u64>,
    ) -> Self {
        let circuit = Arc::new(Circuit::new(name, Some(key), store, config));
        if let Some(until) = closed_until {
            circuit.adopt_seeded(None, until);
        }
        Self { circuit }
    }

    /// The circuit every call site naming `name` with `store` shares, created by the first
    /// with its `config` (a later site with another config is logged, naming both).
    #[track_caller]
    pub(crate) fn shared(
        name: &str,
        store: Arc<dyn StateStore>,
        config: CircuitBreakerConfig,
    ) -> Self {
        Self {
            circuit: registry::shared_circuit(name, store, config),
        }
    }

    /// Hands what a warm-up read of `name` on `store` (from `read_started` on) to the
    /// circuit the call sites share, and keeps it for circuits created later.
    pub(crate) fn warmed(
        name: &str,
        store: &Arc<dyn StateStore>,
        record: Option<CircuitRecord>,
        read_started: Instant,
    ) {
        registry::warmed(name, store, record, read_started);
    }

    /// The store the circuit's shared state lives in.
    pub(crate) fn store(&self) -> &Arc<dyn StateStore> {
        self.circuit.store()
    }

    /// Takes a record a warm-up read (the read started at `read_started`) as the circuit's
    /// cache, unless the circuit already knows something of its own.
    pub(crate) fn adopt_warmed(&self, record: Option<CircuitRecord>, read_started: Instant) {
        self.circuit.adopt_warmed(record, read_started);
    }

    /// Adds a hook that runs after each transition this environment commits, outside every
    /// lock. Every hook added to the circuit (through any clone, and by every
    /// `#[circuit_breaker]` call site naming it) runs, in the order added; a panic in one
    /// is caught and logged, and the others still run.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig};
    /// use breaker_runtime::store::InMemoryStore;
    /// let breaker = CircuitBreaker::new("ce", Arc::new(InMemoryStore::new()), CircuitBreakerConfig::default())
    ///     .with_on_transition(|t| println!("{} {} -> {}", t.name, t.from_state, t.to_state))
    ///     .with_on_transition(|t| println!("metrics: {}", t.to_state));
    /// # drop(breaker);
    /// ```
    pub fn with_on_transition(
        self,
        hook: impl Fn(CircuitTransition) + Send + Sync + 'static,
    ) -> Self {
        self.circuit.hooks().push(Arc::new(hook));
        self
    }

    /// Adds a hook that runs with each verdict of the circuit while it is in shadow
    /// ([`CircuitBreakerConfigBuilder::shadow`](crate::CircuitBreakerConfigBuilder::shadow),
    /// or an operator's `breaker shadow`): a call it would have rejected (and ran), an
    /// opening, a probe or a close it would have made. Hooks run outside every lock, each
    /// with its panic caught, like `on_transition` hooks.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, emf};
    /// use breaker_runtime::store::InMemoryStore;
    /// let config = CircuitBreakerConfig::builder().shadow(true).build().unwrap();
    /// let breaker = CircuitBreaker::new("ce", Arc::new(InMemoryStore::new()), config)
    ///     .with_on_shadow(|event| println!("{} {}", event.name, event.decision))
    ///     .with_on_shadow(emf::log_shadow);
    /// # drop(breaker);
    /// ```
    pub fn with_on_shadow(self, hook: impl Fn(ShadowEvent) + Send + Sync + 'static) -> Self {
        self.circuit.would_be().hooks().push(Arc::new(hook));
        self
    }

    /// The circuit's name.
    pub fn name(&self) -> &str {
        self.circuit.name()
    }

    /// The circuit's config.
    pub fn config(&self) -> &CircuitBreakerConfig {
        self.circuit.config()
    }

    /// Runs `f` unless the circuit is open; every `Err` counts as a failure. A rejected call
    /// returns `Err(CircuitBreakerOpenError.into())`, a call abandoned at its deadline
    /// `Err(CallAbandonedError.into())`. A panic in `f` counts and is resumed.
    ///
    /// An `async fn` in all but the signature: nothing happens until the future is polled,
    /// and it is `Send` when `f` and its future are. It is a hand-written future because
    /// that makes the closed path cheaper (see `docs/performance.md`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig};
    /// use breaker_runtime::store::InMemoryStore;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let breaker = CircuitBreaker::new("api", Arc::new(InMemoryStore::new()), CircuitBreakerConfig::default());
    /// let answer: Result<u32, anyhow::Error> = breaker.call(|| async { Ok(42) }).await;
    /// assert_eq!(answer.unwrap(), 42);
    /// # }
    /// ```
    pub fn call<T, E, F, Fut>(&self, f: F) -> impl Future<Output = Result<T, E>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: From<CircuitBreakerOpenError> + From<CallAbandonedError>,
    {
        self.call_with(|_: &E| true, f)
    }

    /// Like [`call`](Self::call), counting only the errors for which `counts` is true.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitState};
    /// use breaker_runtime::store::InMemoryStore;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let config = CircuitBreakerConfig::builder().failure_threshold(1).build().unwrap();
    /// let breaker = CircuitBreaker::new("api", Arc::new(InMemoryStore::new()), config);
    /// let is_5xx = |e: &anyhow::Error| e.to_string().starts_with('5');
    /// let _ = breaker.call_with(is_5xx, || async { Err::<(), _>(anyhow::anyhow!("404")) }).await;
    /// assert_eq!(breaker.state(), CircuitState::Closed);
    /// # }
    /// ```
    pub fn call_with<T, E, V, F, Fut>(
        &self,
        counts: impl Fn(&E) -> V,
        f: F,
    ) -> impl Future<Output = Result<T, E>>
    where
        V: ErrorVerdict,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: From<CircuitBreakerOpenError> + From<CallAbandonedError>,
    {
        call::CallWith::new(self, counts, f)
    }

    /// The blocking twin of [`call`](Self::call), for sync code inside or outside a tokio
    /// runtime.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig};
    /// use breaker_runtime::store::InMemoryStore;
    /// let breaker = CircuitBreaker::new("fs", Arc::new(InMemoryStore::new()), CircuitBreakerConfig::default());
    /// let n: Result<u32, Box<dyn std::error::Error + Send + Sync>> = breaker.call_blocking(|| Ok(7));
    /// assert_eq!(n.unwrap(), 7);
    /// ```
    pub fn call_blocking<T, E>(&self, f: impl FnOnce() -> Result<T, E>) -> Result<T, E>
    where
        E: From<CircuitBreakerOpenError>,
    {
        self.call_blocking_with(|_: &E| true, f)
    }

    /// The blocking twin of [`call_with`](Self::call_with).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitState};
    /// use breaker_runtime::store::InMemoryStore;
    /// let config = CircuitBreakerConfig::builder().failure_threshold(1).build().unwrap();
    /// let breaker = CircuitBreaker::new("fs", Arc::new(InMemoryStore::new()), config);
    /// let unless_not_found = |e: &anyhow::Error| e.to_string() != "not found";
    /// let missing: Result<(), anyhow::Error> =
    ///     breaker.call_blocking_with(unless_not_found, || Err(anyhow::anyhow!("not found")));
    /// assert!(missing.is_err());
    /// assert_eq!(breaker.state(), CircuitState::Closed);
    /// ```
    // A hint, so that a build without LTO inlines the closed path into the caller too.
    #[inline]
    pub fn call_blocking_with<T, E, V: ErrorVerdict>(
        &self,
        counts: impl Fn(&E) -> V,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<CircuitBreakerOpenError>,
    {
        // The closed path's permit never meets the slow path's (returned in memory, with a
        // rejection's size), so it stays in registers: merged, a build with LTO copied it
        // through the stack and paid store-forwarding stalls, 10 ns a call.
        match admission::fast_admission(&self.circuit) {
            Ok(permit) => run_blocking(permit, counts, f),
            Err(now) => self.call_blocking_slow(now, counts, f),
        }
    }

    /// [`call_blocking_with`](Self::call_blocking_with) once the closed path said no at
    /// `now`: a rejection, or the slow path's admission, then the call.
    #[cold]
    #[inline(never)]
    fn call_blocking_slow<T, E, V: ErrorVerdict>(
        &self,
        now: u64,
        counts: impl Fn(&E) -> V,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<CircuitBreakerOpenError>,
    {
        // The rejection first, straight from the cache: the slow admission's result (a
        // permit or a rejection) would carry it through one more copy.
        if let Some(circuit) = admission::reject_from_cache(&self.circuit, now) {
            return Err(CircuitBreakerOpenError::new(circuit).into());
        }
        match admission::permit_slow_blocking(&self.circuit) {
            Ok(permit) => run_blocking(permit, counts, f),
            Err(circuit) => Err(CircuitBreakerOpenError::new(circuit).into()),
        }
    }

    /// The state this environment believes the circuit is in and acts on, from its cache
    /// (no I/O): an operator's override that holds decides (forced open: `Open`, disabled:
    /// `Closed`), whatever state a Powertools environment stored under it.
    pub fn state(&self) -> CircuitState {
        let now = self.circuit.now() / 1000;
        self.circuit.lock().record().effective_state(now)
    }

    /// The current state, re-read from the store if the cache is stale; runs nothing.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitState};
    /// use breaker_runtime::store::InMemoryStore;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let breaker = CircuitBreaker::new("api", Arc::new(InMemoryStore::new()), CircuitBreakerConfig::default());
    /// let info = breaker.info().await;
    /// assert_eq!((&*info.name, info.state), ("api", CircuitState::Closed));
    /// # }
    /// ```
    pub async fn info(&self) -> CircuitInfo {
        self.circuit.refresh_if_stale(self.circuit.now()).await;
        self.circuit.info()
    }
}

/// Runs an admitted blocking call and records how it ended; a panic counts and is resumed.
#[inline(always)]
fn run_blocking<T, E, V: ErrorVerdict>(
    permit: Permit<&Circuit>,
    counts: impl Fn(&E) -> V,
    f: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => {
            permit.record_blocking(classify(&result, &counts));
            result
        }
        Err(panic) => {
            permit.record_blocking(Outcome::Failure);
            resume_unwind(panic)
        }
    }
}
