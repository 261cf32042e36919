//! Warm-up at init: the records of a function's circuits read in one batched request, and
//! the store's connection opened, before the first invocation, so that the first guarded
//! call of a new execution environment is a cache hit instead of a store round trip.
//!
//! A circuit that exists reads the answer into its cache at once; one that does not yet (an
//! attribute's circuit is created by its first call) finds it here when it is created, and
//! trusts it for its `local_cache_max_age` from the read, as if it had read it itself.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::breaker::CircuitBreaker;
use crate::config::CircuitBreakerConfig;
use crate::default_store::{DefaultStoreError, default_store, try_default_store};
use crate::store::{StateStore, same_store};
use crate::{environment, store_runtime};

mod error;
pub use error::WarmUpError;

/// Reads the shared records of the circuits named `circuits` on the
/// [default store](crate::default_store) in one batched request, before the first
/// invocation: the circuits of `#[circuit_breaker]` call sites that name no
/// `persistence_store`. Call it once in `main`, after
/// [`set_default_store`](crate::set_default_store) if you use it.
///
/// An outage fails open: a store that errs or does not answer within the timeout (1 s,
/// see [`WarmUp::timeout`]) is logged and returned as [`WarmUpError::Unavailable`]; the
/// circuits then read the store on their first call, as without a warm-up. Returns how
/// many records were read.
///
/// A misconfiguration is an error to stop the function on
/// ([`WarmUpError::is_misconfiguration`]), or every call of every execution environment
/// fails open until it is fixed: a table that does not exist or whose access is denied
/// ([`WarmUpError::Misconfigured`], its message naming the table and the missing
/// permission), or, inside a Lambda function, a default store that is missing or invalid
/// ([`WarmUpError::DefaultStore`]: `CIRCUIT_BREAKER_TABLE` unset, blank or not a table
/// name, without `CIRCUIT_BREAKER_STORE=memory`; its message names the variable).
/// For `CircuitBreaker` values, circuits on other stores and a timeout of your own, see
/// [`WarmUp`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// // In `main`, before `breaker_runtime::lambda::run`:
/// let warmed = breaker_runtime::warm_up(["payment-backend", "cost-explorer"]).await;
/// assert_eq!(warmed, Ok(2));
/// # }
/// ```
///
/// In a function's `main`, stop on a misconfiguration and go on through an outage:
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), breaker_runtime::WarmUpError> {
/// if let Err(error) = breaker_runtime::warm_up(["inventory-api"]).await
///     && error.is_misconfiguration()
/// {
///     return Err(error);
/// }
/// # Ok(()) }
/// ```
pub async fn warm_up<I>(circuits: I) -> Result<usize, WarmUpError>
where
    I: IntoIterator,
    I::Item: AsRef<str>,
{
    WarmUp::new().circuits(circuits).run().await
}

/// A warm-up of several circuits, on one or more stores: one batched read per store.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, WarmUp};
/// use breaker_runtime::store::{InMemoryStore, StateStore};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
/// let queue = CircuitBreaker::new("queue", Arc::clone(&store), CircuitBreakerConfig::default());
/// let warmed = WarmUp::new()
///     .circuits(["payment-backend"]) // attribute call sites on the default store
///     .circuits_in(&store, ["ledger"]) // call sites with `persistence_store = <this Arc>`
///     .breaker(&queue) // a `CircuitBreaker` value
///     .timeout(Duration::from_millis(500))
///     .run()
///     .await;
/// assert_eq!(warmed, Ok(3));
/// # }
/// ```
#[derive(Debug, Default)]
#[must_use = "a warm-up does nothing until `run` is awaited"]
pub struct WarmUp {
    /// Circuits by store, in the order their stores were first named.
    groups: Vec<Group>,
    timeout: Option<Duration>,
    /// Circuits were named on a default store unfit for a Lambda function.
    default_store_problem: Option<DefaultStoreError>,
}

/// What one store is asked for.
#[derive(Debug)]
struct Group {
    store: Arc<dyn StateStore>,
    names: Vec<Arc<str>>,
    breakers: Vec<CircuitBreaker>,
}

impl WarmUp {
    /// A warm-up of nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds circuits on the [default store](crate::default_store) by name. A default
    /// store unfit for a Lambda function makes [`run`](Self::run) fail.
    pub fn circuits<I>(mut self, circuits: I) -> Self
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let store = try_default_store().unwrap_or_else(|problem| {
            self.default_store_problem = Some(problem);
            default_store()
        });
        self.circuits_in(&store, circuits)
    }

    /// Adds circuits on `store` by name: the call sites whose `persistence_store` is this
    /// `Arc` (or a clone of it).
    pub fn circuits_in<I>(mut self, store: &Arc<dyn StateStore>, circuits: I) -> Self
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let group = self.group(store);
        for circuit in circuits {
            let circuit = circuit.as_ref();
            if !group.names.iter().any(|name| &**name == circuit) {
                group.names.push(circuit.into());
            }
        }
        self
    }

    /// Adds a `CircuitBreaker` value (and so every clone of it).
    pub fn breaker(mut self, breaker: &CircuitBreaker) -> Self {
        let group = self.group(breaker.store());
        if !group.names.iter().any(|name| **name == *breaker.name()) {
            group.names.push(breaker.name().into());
        }
        group.breakers.push(breaker.clone());
        self
    }

    /// How long the whole warm-up may take; by default the default `store_timeout`, 1 s.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Reads every circuit's record, one batched read per store, and hands each to its
    /// circuit. Returns how many records were read; on an error (logged), the circuits
    /// of the stores that answered are warm and the others read on their first call.
    /// A [`DefaultStoreError`] is returned before any read. See [`WarmUpError`] for which
    /// errors should stop the function.
    pub async fn run(self) -> Result<usize, WarmUpError> {
        if environment::breakers_disabled() {
            return Ok(0);
        }
        if let Some(problem) = self.default_store_problem {
            // Logged at ERROR once already, when the default store was resolved.
            return Err(problem.into());
        }
        let timeout = self
            .timeout
            .unwrap_or_else(|| CircuitBreakerConfig::default().store_timeout());
        let deadline = Instant::now() + timeout;
        let mut read = 0;
        for group in self.groups {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let started = Instant::now();
            let (store, names) = (Arc::clone(&group.store), group.names.clone());
            // One batched read, which also leaves the store's connection open on the store
            // runtime.
            let records = store_runtime::run(remaining.max(Duration::from_millis(1)), async move {
                let names: Vec<&str> = names.iter().map(|name| &**name).collect();
                store.read_many(&names).await
            })
            .await;
            let records = match records {
                Ok(records) => records,
                Err(error) => return Err(logged(error.into(), &group.names)),
            };
            read += records.len();
            for (name, record) in group.names.iter().zip(records) {
                // Kept first: a circuit created from now on finds it, one created before
                // is the shared one or among those below.
                CircuitBreaker::warmed(name, &group.store, record.clone(), started);
                for breaker in group.breakers.iter().filter(|b| b.name() == &**name) {
                    breaker.adopt_warmed(record.clone(), started);
                }
            }
        }
        Ok(read)
    }

    fn group(&mut self, store: &Arc<dyn StateStore>) -> &mut Group {
        let index = match self.groups.iter().position(|g| same_store(&g.store, store)) {
            Some(index) => index,
            None => {
                self.groups.push(Group {
                    store: Arc::clone(store),
                    names: Vec::new(),
                    breakers: Vec::new(),
                });
                self.groups.len() - 1
            }
        };
        &mut self.groups[index]
    }
}

/// `error`, logged: a misconfiguration at ERROR, an outage at WARN.
fn logged(error: WarmUpError, circuits: &[Arc<str>]) -> WarmUpError {
    if error.is_misconfiguration() {
        tracing::error!(%error, ?circuits, "circuit breaker warm-up: the store is misconfigured; every call fails open until it is fixed");
    } else {
        tracing::warn!(%error, ?circuits, "circuit breaker warm-up failed; these circuits read the store on their first call");
    }
    error
}
