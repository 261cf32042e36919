//! `Circuit`: the state one circuit shares between its clones, call sites and tasks, and
//! the lock-free part of it that the closed path reads and writes.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::cache::RecordCache;
use super::hooks::Hooks;
use super::permit::{Permit, PermitKind};
use super::rejection::{PublishedRejection, Rejected};
use crate::config::millis;
use crate::policy::{Sample, Window};
use crate::protocol::Rates;
use crate::protocol::machine::{self, Outcome, Thresholds};
use crate::store::StateStore;
use crate::{CircuitBreakerConfig, CircuitInfo, CircuitState, environment};

pub(super) struct Circuit {
    pub(super) name: Arc<str>,
    /// Written as probe owner: the process's id unless the config names one.
    pub(super) environment_id: Arc<str>,
    pub(super) store: Arc<dyn StateStore>,
    pub(super) config: CircuitBreakerConfig,
    pub(super) thresholds: Thresholds,
    pub(super) disabled: bool,
    pub(super) hooks: Hooks,
    /// Unix millis until which the circuit is known closed and fresh: the hot path's test.
    pub(super) closed_until: AtomicU64,
    /// The open path's test: until when the cached record rejects, and what it reports.
    pub(super) rejection: PublishedRejection,
    /// Consecutive counted failures while closed; [`WINDOWED`] under a rate policy.
    pub(super) failures: AtomicU32,
    /// A rate policy's window of recent calls, and its rates; `None`: consecutive failures.
    pub(super) window: Option<(Window, Rates)>,
    /// From this many milliseconds on a call is slow (a slow-call rate is set).
    pub(super) slow_call_millis: Option<u64>,
    /// A probe of this circuit is running in this process.
    pub(super) probe_in_flight: AtomicBool,
    /// A task of this process is reading the store; others use the cached record.
    pub(super) refreshing: AtomicBool,
    pub(super) cache: Mutex<RecordCache>,
}

impl Circuit {
    pub(super) fn new(
        name: Arc<str>,
        store: Arc<dyn StateStore>,
        config: CircuitBreakerConfig,
    ) -> Self {
        let environment_id: Arc<str> = match &config.environment_id {
            Some(id) => Arc::clone(id),
            None => environment::id().into(),
        };
        let jitter_millis =
            environment::jitter_millis(config.recovery_jitter(), &environment_id, &name);
        let thresholds = Thresholds {
            failure_threshold: config.failure_threshold,
            success_threshold: config.success_threshold,
            recovery_millis: millis(config.recovery_timeout),
            // Long enough for the first environment's election to reach every copy (the
            // cache age, plus a second for replica lag), then spread.
            fallback_millis: millis(config.local_cache_max_age)
                .saturating_add(1000)
                .saturating_add(jitter_millis),
            probe_lease_secs: config.probe_lease.as_secs().max(1),
            recovery_secs: config.recovery_timeout.as_secs_f64().ceil() as u64,
        };
        let window = config.sliding_window().map(|window| {
            let rates = Rates {
                failure: config.failure_rate(),
                slow: config.slow_call_rate(),
                minimum_calls: config.minimum_calls().unwrap_or(1),
            };
            (Window::new(window), rates)
        });
        let slow_call_millis = config.slow_call_duration().map(millis);
        let failures = AtomicU32::new(closed_counts_start(window.is_some()));
        Self {
            window,
            slow_call_millis,
            name,
            environment_id,
            store,
            config,
            thresholds,
            disabled: environment::breakers_disabled(),
            hooks: Hooks::default(),
            closed_until: AtomicU64::new(0),
            rejection: PublishedRejection::default(),
            failures,
            probe_in_flight: AtomicBool::new(false),
            refreshing: AtomicBool::new(false),
            cache: Mutex::new(RecordCache::default()),
        }
    }

    pub(super) fn name(&self) -> &Arc<str> {
        &self.name
    }

    pub(super) fn store(&self) -> &Arc<dyn StateStore> {
        &self.store
    }

    pub(super) fn now(&self) -> u64 {
        self.config.clock.now_millis()
    }

    /// The closed path's admission: a permit when the circuit is bypassed, or known closed
    /// and fresh; `None` sends the call to the slow path.
    #[inline]
    pub(super) fn fast_permit(&self) -> Option<Permit<'_>> {
        self.fast_admission().ok()
    }

    /// [`fast_permit`](Self::fast_permit), or the time it read (unix millis), so that the
    /// open path that follows does not read the clock again.
    #[inline]
    pub(super) fn fast_admission(&self) -> Result<Permit<'_>, u64> {
        if self.disabled {
            return Ok(Permit::new(self, PermitKind::Bypass));
        }
        let closed_until = self.closed_until.load(Ordering::Acquire);
        let now = self.now();
        match now < closed_until {
            true => Ok(Permit::new_at(self, PermitKind::Closed, now)),
            false => Err(now),
        }
    }

    /// Counts a closed call's outcome without locking; `started`: when it was admitted
    /// (unix millis, read only when the policy needs it). Returns the failure count when
    /// the machine says it trips the circuit.
    #[inline]
    pub(super) fn count_closed(&self, outcome: Outcome, started: u64) -> Option<u32> {
        if let Some((window, rates)) = &self.window {
            let (slow, at) = self.timed(started);
            let sample = match outcome {
                Outcome::Success => Sample::new(false, slow),
                Outcome::Failure => Sample::new(true, slow),
                Outcome::Ignored => return None,
            };
            let counts = window.record(sample, at)?;
            return machine::trips_on_rate(counts, rates).then_some(counts.failures);
        }
        match outcome {
            Outcome::Success => {
                self.note_closed_success(started);
                None
            }
            Outcome::Failure => {
                let failures = self.failures.fetch_add(1, Ordering::AcqRel) + 1;
                machine::trips(failures, &self.thresholds).then_some(failures)
            }
            Outcome::Ignored => None,
        }
    }

    /// A closed call succeeded: the consecutive failures start again, or the window counts
    /// a good call. False when the call was slow: [`count_closed`](Self::count_closed)
    /// must count it, out of line (it may trip the circuit).
    #[inline]
    pub(super) fn note_closed_success(&self, started: u64) -> bool {
        // One load decides: a healthy circuit under the default policy reads 0 and never
        // writes the shared cache line; a rate policy's circuit holds WINDOWED.
        if self.failures.load(Ordering::Relaxed) != 0 {
            return self.note_success_after_failures(started);
        }
        true
    }

    /// [`note_closed_success`](Self::note_closed_success) after failures, or under a rate
    /// policy. Out of line: inlined, the window's bookkeeping added about 25 instructions
    /// to every call of the default policy, which never needs it.
    #[inline(never)]
    fn note_success_after_failures(&self, started: u64) -> bool {
        let Some((window, _)) = &self.window else {
            self.failures.store(0, Ordering::Relaxed);
            return true;
        };
        let (slow, at) = self.timed(started);
        if slow {
            return false;
        }
        window.record(Sample::new(false, false), at);
        true
    }

    /// Whether a call admitted at `started` and ending now was slow, and the time it
    /// counts at in a window: its end when slow calls are timed, else its admission.
    #[inline]
    fn timed(&self, started: u64) -> (bool, u64) {
        match self.slow_call_millis {
            Some(slow) => {
                let now = self.now();
                (now.saturating_sub(started) >= slow, now)
            }
            None => (false, started),
        }
    }

    /// Whether a permit must carry its admission time: a slow-call rate times calls, a
    /// time-based window places them.
    #[inline]
    pub(super) fn times_calls(&self) -> bool {
        matches!(self.window, Some((Window::Time(_), _))) || self.slow_call_millis.is_some()
    }

    /// How a probe that ended with `outcome` counts: a slow probe fails.
    pub(super) fn probe_outcome(&self, outcome: Outcome, started: u64) -> Outcome {
        match outcome {
            Outcome::Success if self.timed(started).0 => Outcome::Failure,
            outcome => outcome,
        }
    }

    /// The closed state's counts start again (the circuit changed state).
    pub(super) fn reset_closed_counts(&self) {
        self.failures.store(
            closed_counts_start(self.window.is_some()),
            Ordering::Relaxed,
        );
        if let Some((window, _)) = &self.window {
            window.reset();
        }
    }

    /// What a rejection (or [`CircuitBreaker::info`](super::CircuitBreaker::info)) reports.
    pub(super) fn info(&self) -> CircuitInfo {
        let cache = self.lock();
        self.info_of(&cache.record)
    }

    /// What `record` reports now: the state an override makes the circuit act on.
    pub(super) fn info_of(&self, record: &crate::protocol::CircuitRecord) -> CircuitInfo {
        self.report(Rejected {
            state: record.effective_state(self.now() / 1000),
            failure_count: record.failure_count,
            opened_at: record.opened_at,
        })
    }

    /// What a rejection reports: no allocation (the name is shared).
    #[inline]
    pub(super) fn report(&self, rejected: Rejected) -> CircuitInfo {
        let failure_count = match (rejected.state, &self.window) {
            (CircuitState::Closed, None) => self.failures.load(Ordering::Relaxed),
            (CircuitState::Closed, Some((window, _))) => window.counts(self.now()).failures,
            _ => rejected.failure_count,
        };
        CircuitInfo {
            name: Arc::clone(&self.name),
            state: rejected.state,
            failure_count,
            opened_at: rejected.opened_at,
        }
    }
}

/// What [`Circuit::failures`] holds under a rate policy, which counts in its window
/// instead: never 0, so the closed path's one load sends every success to the window.
const WINDOWED: u32 = u32::MAX;

/// [`Circuit::failures`] when the closed state's counts start.
fn closed_counts_start(windowed: bool) -> u32 {
    match windowed {
        true => WINDOWED,
        false => 0,
    }
}
