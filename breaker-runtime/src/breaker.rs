//! `CircuitBreaker`: the one place where the state machine, the store, the local cache of
//! the shared record, the in-memory failure count and the hooks come together.
//!
//! Hot path (closed, cached): one clock read, one atomic load, the call, and at most one
//! atomic store. Everything else (cache refresh, transitions, probes) takes the slow path
//! under a short std mutex that is never held across an await or a hook.

use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::{Context, Poll};

mod call;
mod run;

#[doc(hidden)]
pub use call::{Guard, guard};
#[doc(hidden)]
pub use run::{Run, run};

use crate::blocking::block_on;
use crate::machine::{self, Admission, Outcome, Policy, ProbeStep, Write};
use crate::store::{CircuitRecord, StateStore, StoreError, WriteOutcome};
use crate::store_call::{self, StoreOp, StoreReply};
use crate::{
    CircuitBreakerConfig, CircuitBreakerOpenError, CircuitInfo, CircuitState, CircuitTransition,
    environment,
};

type TransitionHook = Box<dyn Fn(CircuitTransition) + Send + Sync>;

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
    inner: Arc<Inner>,
}

struct Inner {
    name: Arc<str>,
    store: Arc<dyn StateStore>,
    config: CircuitBreakerConfig,
    policy: Policy,
    disabled: bool,
    on_transition: OnceLock<TransitionHook>,
    /// Unix millis until which the circuit is known closed and fresh: the hot path's test.
    closed_until: AtomicU64,
    /// Consecutive counted failures while closed.
    failures: AtomicU32,
    /// A probe of this circuit is running in this process.
    probe_in_flight: AtomicBool,
    /// A task of this process is reading the store; others use the cached record.
    refreshing: AtomicBool,
    slow: Mutex<Slow>,
}

/// What the slow path knows. Guarded by `Inner::slow`.
#[derive(Debug, Default)]
struct Slow {
    record: CircuitRecord,
    /// The cached record is trusted until then (unix millis).
    fresh_until: u64,
    /// After a store error, the store is left alone until then (unix millis).
    store_retry_at: u64,
    /// Consecutive probe successes of this environment.
    probe_successes: u32,
    /// Bumped on every local transition, so a read that started before it is not adopted.
    version: u64,
    /// A write failed and was applied locally: this environment carries on alone until the
    /// store answers a read again.
    standalone: bool,
}

impl Slow {
    /// Until when the cached record is used without reading the store: while it is fresh,
    /// or while the store backs off after an error (unix millis).
    fn trusted_until(&self) -> u64 {
        self.fresh_until.max(self.store_retry_at)
    }
}

/// Which kind of call a [`Permit`] admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PermitKind {
    Closed,
    Probe,
    Bypass,
    Finished,
}

/// Admission of one call. Report how it ended with [`Permit::finish`] (or its blocking
/// twin); a permit dropped unfinished (a cancelled future) counts as ignored.
#[doc(hidden)]
#[must_use = "report the call's outcome with `finish`"]
pub struct Permit<'a> {
    inner: &'a Inner,
    kind: PermitKind,
}

impl fmt::Debug for Permit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("circuit", &self.inner.name)
            .field("kind", &self.kind)
            .finish()
    }
}

impl fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("name", &self.inner.name)
            .field("state", &self.state())
            .field("config", &self.inner.config)
            .field("store", &self.inner.store)
            .finish()
    }
}

impl CircuitBreaker {
    /// A circuit named `name` whose shared state lives in `store`.
    pub fn new(
        name: impl Into<String>,
        store: Arc<dyn StateStore>,
        config: CircuitBreakerConfig,
    ) -> Self {
        let name: Arc<str> = name.into().into();
        let jitter_millis = environment::jitter_millis(config.recovery_jitter);
        let policy = Policy {
            failure_threshold: config.failure_threshold,
            success_threshold: config.success_threshold,
            recovery_millis: config.recovery_timeout.as_millis() as u64 + jitter_millis,
            probe_lease_secs: config.probe_lease.as_secs().max(1),
            recovery_secs: config.recovery_timeout.as_secs_f64().ceil() as u64,
        };
        let disabled = environment::breakers_disabled();
        Self {
            inner: Arc::new(Inner {
                name,
                store,
                config,
                policy,
                disabled,
                on_transition: OnceLock::new(),
                closed_until: AtomicU64::new(0),
                failures: AtomicU32::new(0),
                probe_in_flight: AtomicBool::new(false),
                refreshing: AtomicBool::new(false),
                slow: Mutex::new(Slow::default()),
            }),
        }
    }

    /// Sets the hook that runs after each transition this environment commits. A panic in
    /// it is caught and logged. Only the first hook set on a circuit is kept.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig};
    /// use breaker_runtime::store::InMemoryStore;
    /// let breaker = CircuitBreaker::new("ce", Arc::new(InMemoryStore::new()), CircuitBreakerConfig::default())
    ///     .with_on_transition(|t| println!("{} {} -> {}", t.circuit_name, t.from_state, t.to_state));
    /// # drop(breaker);
    /// ```
    pub fn with_on_transition(
        self,
        hook: impl Fn(CircuitTransition) + Send + Sync + 'static,
    ) -> Self {
        let _ = self.inner.on_transition.set(Box::new(hook));
        self
    }

    /// The circuit's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The circuit's config.
    pub fn config(&self) -> &CircuitBreakerConfig {
        &self.inner.config
    }

    /// Runs `f` unless the circuit is open; every `Err` counts as a failure. A rejected call
    /// returns `Err(CircuitBreakerOpenError.into())`. A panic in `f` counts and is resumed.
    ///
    /// An `async fn` in all but the signature: nothing happens until the future is polled,
    /// and it is `Send` when `f` and its future are. It is a hand-written future because
    /// that makes the closed path cheaper (see `docs/performance.md`).
    pub fn call<T, E, F, Fut>(&self, f: F) -> impl Future<Output = Result<T, E>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: From<CircuitBreakerOpenError>,
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
    pub fn call_with<T, E, F, Fut>(
        &self,
        counts: impl Fn(&E) -> bool,
        f: F,
    ) -> impl Future<Output = Result<T, E>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: From<CircuitBreakerOpenError>,
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
    pub fn call_blocking_with<T, E>(
        &self,
        counts: impl Fn(&E) -> bool,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<CircuitBreakerOpenError>,
    {
        let permit = match self.acquire_blocking() {
            Ok(permit) => permit,
            Err(circuit) => return Err(CircuitBreakerOpenError { circuit }.into()),
        };
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(result) => {
                permit.finish_blocking(classify(&result, &counts));
                result
            }
            Err(panic) => {
                permit.finish_blocking(Outcome::Failure);
                resume_unwind(panic)
            }
        }
    }

    /// The state this environment believes the circuit is in, from its cache (no I/O).
    pub fn state(&self) -> CircuitState {
        self.inner.lock().record.state
    }

    /// The current state, re-read from the store if the cache is stale; runs nothing.
    pub async fn info(&self) -> CircuitInfo {
        self.inner.refresh_if_stale(self.inner.now()).await;
        self.inner.info()
    }

    /// Asks to run one call once [`fast_permit`](Self::fast_permit) said no. `Err` carries
    /// what a rejection reports.
    ///
    /// Not an `async fn`: a rejection from the cached record is ready at once; only the slow
    /// path is a (boxed) future. (Called first, it still decides right, by the slow path.)
    #[doc(hidden)]
    pub fn acquire(&self) -> Acquire<'_> {
        match self.inner.reject_from_cache() {
            Some(circuit) => Acquire::Rejected(Some(circuit)),
            None => Acquire::Slow(Box::pin(self.inner.acquire_slow())),
        }
    }

    /// The closed path's admission, decided inline; `None` means [`acquire`](Self::acquire)
    /// must decide (open, half-open, stale cache).
    #[doc(hidden)]
    #[inline]
    pub fn fast_permit(&self) -> Option<Permit<'_>> {
        self.inner.fast_permit()
    }

    /// The blocking twin of [`acquire`](Self::acquire).
    #[doc(hidden)]
    #[inline]
    pub fn acquire_blocking(&self) -> Result<Permit<'_>, CircuitInfo> {
        if let Some(permit) = self.inner.fast_permit() {
            return Ok(permit);
        }
        match self.inner.reject_from_cache() {
            Some(circuit) => Err(circuit),
            None => block_on(self.inner.acquire_slow()),
        }
    }
}

impl<'a> Permit<'a> {
    /// Reports how the admitted call ended. Like [`CircuitBreaker::fast_permit`], the closed
    /// path completes inline; only a transition (trip, probe outcome) is a boxed future.
    #[inline]
    pub fn finish(mut self, outcome: Outcome) -> Finish<'a> {
        if self.finished_inline(outcome) {
            return Finish::Done;
        }
        self.finish_other(outcome)
    }

    /// Every outcome but the closed path's success, out of line so that the hot path inlines.
    #[inline(never)]
    fn finish_other(mut self, outcome: Outcome) -> Finish<'a> {
        let kind = std::mem::replace(&mut self.kind, PermitKind::Finished);
        let inner = self.inner;
        if let Some(trip_failures) = inner.finish_fast(kind, outcome) {
            Finish::Slow(Box::pin(inner.trip(trip_failures)))
        } else if kind == PermitKind::Probe {
            Finish::Slow(Box::pin(inner.finish_probe(outcome)))
        } else {
            Finish::Done
        }
    }

    /// The blocking twin of [`finish`](Self::finish).
    #[inline]
    pub fn finish_blocking(mut self, outcome: Outcome) {
        if !self.finished_inline(outcome) {
            self.finish_other_blocking(outcome);
        }
    }

    /// Records the closed path's success, the one outcome that needs no lock and no
    /// store, inline in the caller; false for any other outcome.
    #[inline]
    fn finished_inline(&mut self, outcome: Outcome) -> bool {
        let inline = self.kind == PermitKind::Closed && outcome == Outcome::Success;
        if inline {
            self.kind = PermitKind::Finished;
            self.inner.note_closed_success();
        }
        inline
    }

    /// The blocking twin of [`finish_other`](Self::finish_other).
    #[inline(never)]
    fn finish_other_blocking(mut self, outcome: Outcome) {
        let kind = std::mem::replace(&mut self.kind, PermitKind::Finished);
        if let Some(trip_failures) = self.inner.finish_fast(kind, outcome) {
            block_on(self.inner.trip(trip_failures));
        } else if kind == PermitKind::Probe {
            block_on(self.inner.finish_probe(outcome));
        }
    }
}

/// The future of [`CircuitBreaker::acquire`]: ready at once when the cache rejects.
#[doc(hidden)]
#[must_use = "futures do nothing unless awaited"]
pub enum Acquire<'a> {
    /// Rejected from the cached record, decided inline.
    Rejected(Option<CircuitInfo>),
    /// The slow path: cache refresh, election.
    Slow(Pin<Box<dyn Future<Output = Result<Permit<'a>, CircuitInfo>> + Send + 'a>>),
}

impl fmt::Debug for Acquire<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Rejected(_) => "Acquire::Rejected",
            Self::Slow(_) => "Acquire::Slow",
        })
    }
}

impl<'a> Future for Acquire<'a> {
    type Output = Result<Permit<'a>, CircuitInfo>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Self::Rejected(circuit) => Poll::Ready(Err(circuit
                .take()
                .expect("Acquire polled after completion"))),
            Self::Slow(slow) => slow.as_mut().poll(cx),
        }
    }
}

/// The future of [`Permit::finish`]: done at once unless the outcome is a transition.
#[doc(hidden)]
#[must_use = "futures do nothing unless awaited"]
pub enum Finish<'a> {
    /// Recorded inline.
    Done,
    /// A trip or a probe outcome being written.
    Slow(Pin<Box<dyn Future<Output = ()> + Send + 'a>>),
}

impl fmt::Debug for Finish<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Done => "Finish::Done",
            Self::Slow(_) => "Finish::Slow",
        })
    }
}

impl Future for Finish<'_> {
    type Output = ();

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.get_mut() {
            Self::Done => Poll::Ready(()),
            Self::Slow(slow) => slow.as_mut().poll(cx),
        }
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if self.kind == PermitKind::Probe {
            // Cancelled mid-probe: free the slot so the next call can probe.
            self.inner.probe_in_flight.store(false, Ordering::Release);
        }
    }
}

/// Counts an `Err` only if the classifier says so.
#[doc(hidden)]
pub fn classify<T, E>(result: &Result<T, E>, counts: impl Fn(&E) -> bool) -> Outcome {
    match result {
        Ok(_) => Outcome::Success,
        Err(e) if counts(e) => Outcome::Failure,
        Err(_) => Outcome::Ignored,
    }
}

impl Inner {
    fn now(&self) -> u64 {
        self.config.clock.now_millis()
    }

    fn lock(&self) -> MutexGuard<'_, Slow> {
        self.slow.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[inline]
    fn fast_permit(&self) -> Option<Permit<'_>> {
        if self.disabled {
            return Some(Permit {
                inner: self,
                kind: PermitKind::Bypass,
            });
        }
        let closed_until = self.closed_until.load(Ordering::Acquire);
        (self.now() < closed_until).then_some(Permit {
            inner: self,
            kind: PermitKind::Closed,
        })
    }

    /// Records a closed call's outcome without locking. Returns the failure count when it
    /// reaches the threshold and the circuit must trip.
    #[inline]
    fn finish_fast(&self, kind: PermitKind, outcome: Outcome) -> Option<u32> {
        if kind != PermitKind::Closed {
            return None;
        }
        match outcome {
            Outcome::Success => {
                self.note_closed_success();
                None
            }
            Outcome::Failure => {
                let failures = self.failures.fetch_add(1, Ordering::AcqRel) + 1;
                (failures >= self.policy.failure_threshold).then_some(failures)
            }
            Outcome::Ignored => None,
        }
    }

    /// A closed call succeeded: the consecutive failures start again.
    #[inline]
    fn note_closed_success(&self) {
        // Load first: a healthy circuit never writes the shared cache line.
        if self.failures.load(Ordering::Relaxed) != 0 {
            self.failures.store(0, Ordering::Relaxed);
        }
    }

    fn info(&self) -> CircuitInfo {
        let slow = self.lock();
        self.info_of(&slow.record)
    }

    fn info_of(&self, record: &CircuitRecord) -> CircuitInfo {
        let failure_count = match record.state {
            CircuitState::Closed => self.failures.load(Ordering::Relaxed),
            _ => record.failure_count,
        };
        CircuitInfo {
            name: self.name.to_string(),
            state: record.state,
            failure_count,
            opened_at: record.opened_at,
        }
    }

    /// Makes `record` the believed state and republishes the hot-path flag.
    fn adopt(&self, slow: &mut Slow, record: CircuitRecord) {
        if record.state != slow.record.state {
            if record.state == CircuitState::Closed || slow.record.state == CircuitState::Closed {
                self.failures.store(0, Ordering::Relaxed);
            }
            slow.probe_successes = 0;
        }
        slow.record = record;
        self.publish(slow);
    }

    fn publish(&self, slow: &Slow) {
        let closed_until = match slow.record.state {
            CircuitState::Closed => slow.trusted_until(),
            _ => 0,
        };
        self.closed_until.store(closed_until, Ordering::Release);
    }

    /// Calls the store unless it is backing off after an error; errors start the back-off.
    async fn store(&self, op: StoreOp) -> Result<StoreReply, StoreError> {
        let now = self.now();
        if now < self.lock().store_retry_at {
            return Err(StoreError::new("store backing off after an error"));
        }
        let reply = store_call::run(
            Arc::clone(&self.store),
            Arc::clone(&self.name),
            op,
            self.config.store_timeout,
        )
        .await;
        if let Err(error) = &reply {
            tracing::warn!(circuit = %self.name, %error, "circuit breaker store failed; failing open");
            let mut slow = self.lock();
            let retry_at = self.now() + self.config.store_error_backoff.as_millis() as u64;
            slow.store_retry_at = retry_at;
            slow.fresh_until = slow.fresh_until.max(retry_at);
            self.publish(&slow);
        }
        reply
    }

    /// Re-reads the shared record when the cache is stale. Only one task per circuit reads;
    /// the others go on with the cached record.
    async fn refresh_if_stale(&self, now: u64) {
        let version = {
            let slow = self.lock();
            if now < slow.trusted_until() {
                return;
            }
            slow.version
        };
        if self.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let _reading = ClearOnDrop(&self.refreshing);
        let reply = self.store(StoreOp::Read).await;
        let mut slow = self.lock();
        match reply {
            Ok(StoreReply::Record(record)) => {
                slow.standalone = false;
                slow.fresh_until = self.fresh_from(now);
                if slow.version == version {
                    self.adopt(&mut slow, record.unwrap_or_default());
                } else {
                    self.publish(&slow);
                }
            }
            Ok(StoreReply::Write(_)) => {}
            Err(_) if slow.version == version && !slow.standalone => {
                // Fail open: without the store, this environment starts again from closed.
                self.adopt(&mut slow, CircuitRecord::closed());
            }
            Err(_) => {}
        }
    }

    /// What the state machine says of a call at `now`, given the cached record.
    fn admission(&self, slow: &Slow, now: u64) -> Admission {
        let in_flight = self.probe_in_flight.load(Ordering::Acquire);
        machine::admit(
            &slow.record,
            environment::id(),
            now,
            &self.policy,
            in_flight,
        )
    }

    /// The open path without a future or a store call: when the cached record needs no
    /// refresh and says reject, [`acquire_slow`](Self::acquire_slow) would decide the same.
    #[cold]
    #[inline(never)]
    fn reject_from_cache(&self) -> Option<CircuitInfo> {
        let now = self.now();
        let slow = self.lock();
        if now >= slow.trusted_until() {
            return None;
        }
        match self.admission(&slow, now) {
            Admission::Reject => Some(self.info_of(&slow.record)),
            _ => None,
        }
    }

    async fn acquire_slow(&self) -> Result<Permit<'_>, CircuitInfo> {
        if self.disabled {
            return Ok(Permit {
                inner: self,
                kind: PermitKind::Bypass,
            });
        }
        let now = self.now();
        self.refresh_if_stale(now).await;
        let (admission, record) = {
            let slow = self.lock();
            (self.admission(&slow, now), slow.record.clone())
        };
        match admission {
            Admission::Run => {
                return Ok(Permit {
                    inner: self,
                    kind: PermitKind::Closed,
                });
            }
            Admission::Reject => return Err(self.info_of(&record)),
            Admission::Probe | Admission::Elect(_) => {}
        }
        let Some(slot) = self.claim_probe() else {
            return Err(self.info_of(&record));
        };
        let election = match admission {
            Admission::Elect(election) => election,
            _ => return Ok(slot.into_permit()),
        };
        let reply = self.store(StoreOp::Elect(election.clone())).await;
        let (believed, won) = {
            let mut slow = self.lock();
            let base = slow.record.clone();
            // If the store does not answer, this environment probes on its own authority.
            let won = self.settle(&mut slow, &base, Write::Elect(&election), reply, now)
                // Lost to a record naming this environment the owner: an election of ours
                // landed earlier but its reply never came back (a cancelled call, a timeout).
                || matches!(
                    machine::admit(&slow.record, environment::id(), now, &self.policy, false),
                    Admission::Probe
                );
            if won {
                slow.probe_successes = 0;
            }
            (slow.record.clone(), won)
        };
        if won {
            self.fire(record.state, CircuitState::HalfOpen, believed.opened_at);
            return Ok(slot.into_permit());
        }
        drop(slot);
        match believed.state {
            CircuitState::Closed => Ok(Permit {
                inner: self,
                kind: PermitKind::Closed,
            }),
            _ => Err(self.info_of(&believed)),
        }
    }

    /// When a record read or written at `now` stops being trusted.
    fn fresh_from(&self, now: u64) -> u64 {
        now + self.config.local_cache_max_age.as_millis() as u64
    }

    /// Commits the answer to a transition write made from `base`: the written record if it
    /// won, the record that beat it if it lost; if the store did not answer, the write is
    /// applied locally and this environment carries on alone until the store answers a
    /// read. Returns whether the transition counts as committed (won, or applied locally).
    fn settle(
        &self,
        slow: &mut Slow,
        base: &CircuitRecord,
        write: Write<'_>,
        reply: Result<StoreReply, StoreError>,
        now: u64,
    ) -> bool {
        slow.version += 1;
        let (next, committed) = match reply {
            Ok(StoreReply::Write(outcome)) => {
                let won = outcome == WriteOutcome::Won;
                if won {
                    slow.fresh_until = self.fresh_from(now);
                }
                (machine::after_write(base, write, outcome), won)
            }
            _ => {
                slow.standalone = true;
                (machine::applied(base, write), true)
            }
        };
        self.adopt(slow, next);
        committed
    }

    /// This process's one probe slot, if no other call holds it.
    fn claim_probe(&self) -> Option<ProbeSlot<'_>> {
        self.probe_in_flight
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
            // `then`, not `then_some`: a slot built and dropped on a failed claim would
            // release the slot its holder still uses.
            .then(|| ProbeSlot(self))
    }

    fn release_probe(&self) {
        self.probe_in_flight.store(false, Ordering::Release);
    }

    /// CLOSED → OPEN after `failures` consecutive failures. Opens locally at once, then
    /// writes; a lost write adopts the stored state, a failed one stays open locally.
    async fn trip(&self, failures: u32) {
        let now = self.now();
        let Some(trip) = machine::on_closed_failure(failures, now, &self.policy) else {
            return;
        };
        let base = {
            let mut slow = self.lock();
            if slow.record.state != CircuitState::Closed {
                return;
            }
            let base = slow.record.clone();
            slow.version += 1;
            let opened = machine::applied(&base, Write::Trip(&trip));
            self.adopt(&mut slow, opened);
            base
        };
        let reply = self.store(StoreOp::Trip(trip.clone())).await;
        // A lost trip adopts the winner's record; a failed one stays open locally.
        let committed = self.settle(&mut self.lock(), &base, Write::Trip(&trip), reply, now);
        if committed {
            self.fire(
                CircuitState::Closed,
                CircuitState::Open,
                Some(trip.opened_at),
            );
        }
    }

    /// A probe ended: count it, and close or reopen when the machine says so.
    async fn finish_probe(&self, outcome: Outcome) {
        let now = self.now();
        let (step, base) = {
            let mut slow = self.lock();
            if outcome == Outcome::Success {
                slow.probe_successes += 1;
            }
            let step = machine::on_probe_outcome(
                outcome,
                slow.probe_successes,
                environment::id(),
                now,
                &self.policy,
            );
            (step, slow.record.clone())
        };
        let (op, write, to_state) = match &step {
            ProbeStep::Continue => return self.release_probe(),
            ProbeStep::Close(close) => (
                StoreOp::Close(close.clone()),
                Write::Close,
                CircuitState::Closed,
            ),
            ProbeStep::Reopen(reopen) => (
                StoreOp::Reopen(reopen.clone()),
                Write::Reopen(reopen),
                CircuitState::Open,
            ),
        };
        let reply = self.store(op).await;
        let (committed, opened_at) = {
            let mut slow = self.lock();
            // If the store does not answer, this environment closes or reopens on its own.
            let committed = self.settle(&mut slow, &base, write, reply, now);
            (committed, slow.record.opened_at)
        };
        self.release_probe();
        if committed {
            self.fire(CircuitState::HalfOpen, to_state, opened_at);
        }
    }

    /// Logs a committed transition and runs the hook, outside every lock.
    fn fire(&self, from_state: CircuitState, to_state: CircuitState, opened_at: Option<u64>) {
        if from_state == to_state {
            return;
        }
        tracing::info!(circuit = %self.name, from = %from_state, to = %to_state, "circuit transition");
        let Some(hook) = self.on_transition.get() else {
            return;
        };
        let transition = CircuitTransition {
            circuit_name: self.name.to_string(),
            from_state,
            to_state,
            opened_at,
        };
        if catch_unwind(AssertUnwindSafe(|| hook(transition))).is_err() {
            tracing::error!(circuit = %self.name, "on_transition hook panicked; the transition stands");
        }
    }
}

/// A claimed probe slot, released when dropped (a lost election, or a call cancelled while
/// its election is written) unless it becomes a probe's [`Permit`], which releases it when
/// the probe ends.
struct ProbeSlot<'a>(&'a Inner);

impl<'a> ProbeSlot<'a> {
    fn into_permit(self) -> Permit<'a> {
        let inner = self.0;
        std::mem::forget(self);
        Permit {
            inner,
            kind: PermitKind::Probe,
        }
    }
}

impl Drop for ProbeSlot<'_> {
    fn drop(&mut self) {
        self.0.release_probe();
    }
}

/// Clears a flag when dropped, so a cancelled reader does not block refreshes forever.
struct ClearOnDrop<'a>(&'a AtomicBool);

impl Drop for ClearOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}
