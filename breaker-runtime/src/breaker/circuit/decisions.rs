//! The circuit's decisions on its cached record: admit or reject a call, the open path
//! without a store call, this process's probe slot, and what a rejection reports.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::Circuit;
use crate::breaker::cache::RecordCache;
use crate::breaker::rejection::Rejected;
use crate::events::CircuitInfo;
use crate::protocol::machine::{self, Admission};
use crate::protocol::{CircuitRecord, CircuitState};

impl Circuit {
    /// Whether a call at `now` is rejected on the cached record: the seam rejects calls,
    /// and the machine says so (`with_slot`: as for [`decide`](Self::decide)).
    pub(super) fn rejects(&self, cache: &RecordCache, now: u64, with_slot: bool) -> bool {
        self.seam(cache, now).rejects_calls()
            && self.decide(cache, now, with_slot, false, false) == Admission::Reject
    }

    /// What the state machine says of a call at `now`, given the cached record. `with_slot`:
    /// the caller holds this process's probe slot, so no other probe runs here; `verified`:
    /// the cached record was just read strongly consistently.
    pub(in crate::breaker) fn decide(
        &self,
        cache: &RecordCache,
        now: u64,
        with_slot: bool,
        verified: bool,
        quiet: bool,
    ) -> Admission {
        let probe_in_flight = !with_slot && self.probe_in_flight.load(Ordering::Acquire);
        let local = cache.local(now, probe_in_flight, verified, quiet);
        machine::admit(
            cache.record(),
            &self.probe_owner,
            now,
            &self.thresholds,
            &local,
        )
    }

    /// [`decide`](Self::decide) on the cached record, taken under the lock with it.
    pub(in crate::breaker) fn decide_cached(
        &self,
        now: u64,
        with_slot: bool,
        verified: bool,
        quiet: bool,
    ) -> (Admission, CircuitRecord) {
        let cache = self.lock();
        let admission = self.decide(&cache, now, with_slot, verified, quiet);
        (admission, cache.record().clone())
    }

    /// The open path without a future or a store call, at `now`: when the cached record
    /// needs no refresh and says reject, the slow path would decide the same. The
    /// published rejection decides without the lock; the record itself when there is none
    /// (or it was being republished).
    #[inline(never)]
    pub(in crate::breaker) fn reject_from_cache(&self, now: u64) -> Option<CircuitInfo> {
        if self.disabled {
            return None;
        }
        match self.rejection.at(now) {
            Some(rejected) => Some(self.info_from(rejected)),
            None => self.reject_from_record(now),
        }
    }

    /// [`reject_from_cache`](Self::reject_from_cache) under the lock, from the record.
    #[cold]
    #[inline(never)]
    pub(super) fn reject_from_record(&self, now: u64) -> Option<CircuitInfo> {
        let cache = self.lock();
        if now >= cache.trusted_until() {
            return None;
        }
        match self.rejects(&cache, now, false) {
            true => Some(self.info_of(cache.record())),
            false => None,
        }
    }

    /// Claims this process's one probe slot; false if another call holds it.
    pub(in crate::breaker) fn claim_probe(&self) -> bool {
        self.probe_in_flight
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Whether a probe (or a would-be probe) of this circuit runs in this process.
    pub(in crate::breaker) fn probe_in_flight(&self) -> bool {
        self.probe_in_flight.load(Ordering::Acquire)
    }

    pub(in crate::breaker) fn release_probe(&self) {
        self.probe_in_flight.store(false, Ordering::Release);
    }

    /// What a rejection (or [`CircuitBreaker::info`](super::CircuitBreaker::info)) reports.
    pub(in crate::breaker) fn info(&self) -> CircuitInfo {
        let cache = self.lock();
        self.info_of(cache.record())
    }

    /// What `record` reports now: the state an override makes the circuit act on.
    pub(in crate::breaker) fn info_of(&self, record: &CircuitRecord) -> CircuitInfo {
        self.info_from(Rejected::of(record, self.now(), &self.thresholds))
    }

    /// What a rejection reports: no allocation (the name is shared).
    #[inline]
    pub(super) fn info_from(&self, rejected: Rejected) -> CircuitInfo {
        let failure_count = match rejected.state {
            CircuitState::Closed => self.counts.failures(),
            _ => rejected.failure_count,
        };
        CircuitInfo {
            name: Arc::clone(self.name()),
            state: rejected.state,
            failure_count,
            opened_at_unix_secs: rejected.opened_at,
            retry_after_unix_secs: rejected.retry_after,
            key: self.key().cloned(),
            slow_start: false,
            shed: false,
        }
    }
}
