//! `Circuit`: the state one circuit shares between its clones, call sites and tasks, and
//! the lock-free part of it that the closed path reads and writes.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::cache::RecordCache;
use super::hooks::Hooks;
use super::permit::{Permit, PermitKind};
use super::rejection::{PublishedRejection, Rejected};
use crate::config::millis;
use crate::machine::{self, Outcome, Policy};
use crate::store::StateStore;
use crate::{CircuitBreakerConfig, CircuitInfo, CircuitState, environment};

pub(super) struct Circuit {
    pub(super) name: Arc<str>,
    /// Written as probe owner: the process's id unless the config names one.
    pub(super) environment_id: Arc<str>,
    pub(super) store: Arc<dyn StateStore>,
    pub(super) config: CircuitBreakerConfig,
    pub(super) policy: Policy,
    pub(super) disabled: bool,
    pub(super) hooks: Hooks,
    /// Unix millis until which the circuit is known closed and fresh: the hot path's test.
    pub(super) closed_until: AtomicU64,
    /// The open path's test: until when the cached record rejects, and what it reports.
    pub(super) rejection: PublishedRejection,
    /// Consecutive counted failures while closed.
    pub(super) failures: AtomicU32,
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
        let policy = Policy {
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
        Self {
            name,
            environment_id,
            store,
            config,
            policy,
            disabled: environment::breakers_disabled(),
            hooks: Hooks::default(),
            closed_until: AtomicU64::new(0),
            rejection: PublishedRejection::default(),
            failures: AtomicU32::new(0),
            probe_in_flight: AtomicBool::new(false),
            refreshing: AtomicBool::new(false),
            cache: Mutex::new(RecordCache::default()),
        }
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
            true => Ok(Permit::new(self, PermitKind::Closed)),
            false => Err(now),
        }
    }

    /// Counts a closed call's outcome without locking. Returns the failure count when the
    /// machine says it trips the circuit.
    #[inline]
    pub(super) fn count_closed(&self, outcome: Outcome) -> Option<u32> {
        match outcome {
            Outcome::Success => {
                self.note_closed_success();
                None
            }
            Outcome::Failure => {
                let failures = self.failures.fetch_add(1, Ordering::AcqRel) + 1;
                machine::trips(failures, &self.policy).then_some(failures)
            }
            Outcome::Ignored => None,
        }
    }

    /// A closed call succeeded: the consecutive failures start again.
    #[inline]
    pub(super) fn note_closed_success(&self) {
        // Load first: a healthy circuit never writes the shared cache line.
        if self.failures.load(Ordering::Relaxed) != 0 {
            self.failures.store(0, Ordering::Relaxed);
        }
    }

    /// What a rejection (or [`CircuitBreaker::info`](super::CircuitBreaker::info)) reports.
    pub(super) fn info(&self) -> CircuitInfo {
        let cache = self.lock();
        self.info_of(&cache.record)
    }

    pub(super) fn info_of(&self, record: &crate::store::CircuitRecord) -> CircuitInfo {
        self.report(Rejected {
            state: record.state,
            failure_count: record.failure_count,
            opened_at: record.opened_at,
        })
    }

    /// What a rejection reports: no allocation (the name is shared).
    #[inline]
    pub(super) fn report(&self, rejected: Rejected) -> CircuitInfo {
        let failure_count = match rejected.state {
            CircuitState::Closed => self.failures.load(Ordering::Relaxed),
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
