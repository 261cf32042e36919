//! This environment's copy of a circuit's shared record: when it is trusted, how it is
//! refreshed (one reader per circuit at a time), and how a new record is adopted and
//! published to the hot path.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{MutexGuard, PoisonError};
use std::time::Instant;

use super::circuit::Circuit;
use crate::config::millis;
use crate::protocol::CircuitRecord;
use crate::protocol::machine::{self, Admission, Local};
use crate::{CircuitInfo, CircuitState};

/// What the slow path knows of the shared record. Guarded by `Circuit::cache`.
#[derive(Debug, Default)]
pub(super) struct RecordCache {
    pub(super) record: CircuitRecord,
    /// The cached record is trusted until then (unix millis).
    pub(super) fresh_until: u64,
    /// After a store error, the store is left alone until then (unix millis).
    pub(super) store_retry_at: u64,
    /// Consecutive probe successes of this environment.
    pub(super) probe_successes: u32,
    /// Bumped on every local transition, so a read that started before it is not adopted.
    pub(super) version: u64,
    /// The `opened_at` of an opening this environment committed (its trip or reopen won):
    /// the first right to probe it.
    pub(super) committed_opening: Option<u64>,
    /// The `opened_at` of an opening this environment applied on its own (its trip or reopen
    /// got no answer), until a read answers: then the item says who opened it. (Openings
    /// are in whole seconds; many environments of a fleet open in the same one.)
    pub(super) local_opening: Option<u64>,
    /// The last read could not reach the store: elections are made locally.
    pub(super) store_unreachable: bool,
}

impl RecordCache {
    /// Until when the cached record is used without reading the store: while it is fresh,
    /// or while the store backs off after an error (unix millis).
    pub(super) fn trusted_until(&self) -> u64 {
        self.fresh_until.max(self.store_retry_at)
    }
}

impl Circuit {
    pub(super) fn lock(&self) -> MutexGuard<'_, RecordCache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// When a record read or written at `now` stops being trusted.
    pub(super) fn fresh_from(&self, now: u64) -> u64 {
        now.saturating_add(millis(self.config.local_cache_max_age))
    }

    /// Makes `record` the believed state and republishes the hot-path flag.
    pub(super) fn adopt(&self, cache: &mut RecordCache, record: CircuitRecord) {
        if record.state != cache.record.state {
            if record.state == CircuitState::Closed || cache.record.state == CircuitState::Closed {
                self.reset_closed_counts();
            }
            cache.probe_successes = 0;
        }
        cache.record = record;
        self.publish(cache);
    }

    /// Tells the hot path until when the circuit is known closed (0: it is not), and the
    /// open path until when the cached record rejects.
    pub(super) fn publish(&self, cache: &RecordCache) {
        let closed_until = match machine::runs_closed(&cache.record, self.now()) {
            true => cache.trusted_until(),
            false => 0,
        };
        self.closed_until.store(closed_until, Ordering::Release);
        self.publish_rejection(cache, self.now());
    }

    /// Takes a record a warm-up read (from `read_started` on) as if this circuit had read
    /// it then: trusted for `local_cache_max_age` from the read. Only a circuit that has
    /// neither read nor written anything yet takes it; what it knows is newer.
    pub(super) fn adopt_warmed(&self, record: Option<CircuitRecord>, read_started: Instant) {
        let Some(left) = self
            .config
            .local_cache_max_age
            .checked_sub(read_started.elapsed())
        else {
            return;
        };
        let mut cache = self.lock();
        if cache.trusted_until() != 0 || cache.version != 0 {
            return;
        }
        cache.fresh_until = self.now().saturating_add(millis(left));
        self.adopt(&mut cache, record.unwrap_or_default());
    }

    /// Re-reads the shared record when the cache is stale. Only one task per circuit reads;
    /// the others go on with the cached record.
    pub(super) async fn refresh_if_stale(&self, now: u64) {
        if now < self.lock().trusted_until() {
            return;
        }
        if self.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let _reading = ClearOnDrop(&self.refreshing);
        // Whether it answered shows in the cache: a failed read leaves it as it was.
        self.read_and_adopt(now, false).await;
    }

    /// Reads the shared record and adopts it, unless a local transition happened meanwhile.
    /// A read that fails changes nothing this environment knows: a circuit known to be
    /// closed stays closed (fail open), one known to be open stays open until its recovery.
    /// Returns whether the store answered.
    pub(super) async fn read_and_adopt(&self, now: u64, consistent: bool) -> bool {
        let version = self.lock().version;
        let read = self.read_store(consistent).await;
        let mut cache = self.lock();
        match read {
            Ok(record) => {
                cache.store_unreachable = false;
                cache.local_opening = None;
                cache.fresh_until = self.fresh_from(now);
                if cache.version == version {
                    self.adopt(&mut cache, record.unwrap_or_default());
                } else {
                    self.publish(&cache);
                }
                true
            }
            Err(error) => {
                if error.unreachable() {
                    cache.store_unreachable = true;
                    // Who may elect itself, and when, can change with it.
                    self.publish(&cache);
                }
                false
            }
        }
    }

    /// What the state machine says of a call at `now`, given the cached record. `with_slot`:
    /// the caller holds this process's probe slot, so no other probe runs here; `verified`:
    /// the cached record was just read strongly consistently.
    pub(super) fn admission(
        &self,
        cache: &RecordCache,
        now: u64,
        with_slot: bool,
        verified: bool,
    ) -> Admission {
        let local = Local {
            probe_in_flight: !with_slot && self.probe_in_flight.load(Ordering::Acquire),
            // An opening applied on its own gives the first right only to an environment
            // that cannot reach the store: one that was merely throttled cannot tell whose
            // trip landed, and waits, reads and verifies like any other.
            committed_opening: match cache.store_unreachable {
                true => cache.local_opening.or(cache.committed_opening),
                false => cache.committed_opening,
            },
            verified,
            store_unreachable: cache.store_unreachable,
        };
        machine::admit(
            &cache.record,
            &self.environment_id,
            now,
            &self.thresholds,
            &local,
        )
    }

    /// The open path without a future or a store call, at `now`: when the cached record
    /// needs no refresh and says reject, [`permit_slow`](Self::permit_slow) would decide
    /// the same. The published rejection decides without the lock; the record itself
    /// when there is none (or it was being republished).
    #[inline(never)]
    pub(super) fn reject_from_cache(&self, now: u64) -> Option<CircuitInfo> {
        if self.disabled {
            return None;
        }
        match self.rejection.at(now) {
            Some(rejected) => Some(self.report(rejected)),
            None => self.reject_from_record(now),
        }
    }

    /// [`reject_from_cache`](Self::reject_from_cache) under the lock, from the record.
    #[cold]
    #[inline(never)]
    fn reject_from_record(&self, now: u64) -> Option<CircuitInfo> {
        let cache = self.lock();
        if now >= cache.trusted_until() {
            return None;
        }
        match self.admission(&cache, now, false, false) {
            Admission::Reject => Some(self.info_of(&cache.record)),
            _ => None,
        }
    }
}

/// Clears a flag when dropped, so a cancelled reader does not block refreshes forever.
struct ClearOnDrop<'a>(&'a AtomicBool);

impl Drop for ClearOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}
