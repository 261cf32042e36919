//! The transitions of one circuit as this environment makes them: the probe election on
//! the slow path's admission, the trip, the probe's outcome. Each is written to the store,
//! committed to the cache as the machine says ([`machine::settle`]), and only then
//! announced (log and hooks), outside every lock.

use std::future::Future;
use std::sync::atomic::Ordering;

use super::cache::RecordCache;
use super::circuit::Circuit;
use super::permit::{Permit, PermitKind};
use super::store_access::StoreCallError;
use crate::protocol::machine::{self, Admission, Outcome, Settled};
use crate::protocol::{CircuitRecord, Transition, WriteOutcome};
use crate::{CircuitInfo, CircuitState, CircuitTransition};

impl Circuit {
    /// Admission when the cache cannot decide alone: refresh a stale cache, then run,
    /// reject, probe, or elect this environment to probe (after a strongly consistent read
    /// when it has no first right; locally when the store cannot be reached).
    pub(super) async fn permit_slow(&self) -> Result<Permit<'_>, CircuitInfo> {
        if self.disabled {
            return Ok(Permit::new(self, PermitKind::Bypass));
        }
        let now = self.now();
        self.refresh_if_stale(now).await;
        let (admission, record) = {
            let cache = self.lock();
            (
                self.admission(&cache, now, false, false),
                cache.record.clone(),
            )
        };
        match admission {
            Admission::Run => return Ok(Permit::new(self, PermitKind::Closed)),
            Admission::Reject => return Err(self.info_of(&record)),
            _ => {}
        }
        // One probe, election or verifying read per process at a time.
        let Some(slot) = self.claim_probe() else {
            return Err(self.info_of(&record));
        };
        let (mut admission, mut record) = self.admission_with_slot(now, false);
        if admission == Admission::Verify {
            let answered = self.read_and_adopt(now, true).await;
            (admission, record) = self.admission_with_slot(now, answered);
        }
        match admission {
            Admission::Run => Ok(Permit::new(self, PermitKind::Closed)),
            Admission::Reject | Admission::Verify => Err(self.info_of(&record)),
            Admission::Probe => Ok(slot.into_permit()),
            Admission::ElectAlone(election) => {
                let settled = machine::settle_alone(&record, &election);
                self.commit_settled(&mut self.lock(), &record, &election, settled, now);
                self.announce(record.state, CircuitState::HalfOpen, record.opened_at);
                Ok(slot.into_permit())
            }
            Admission::Elect(election) => {
                let reply = self.write_store(election.clone()).await;
                let (believed, won) = {
                    let mut cache = self.lock();
                    let won = self.commit(&mut cache, &record, &election, reply, now);
                    (cache.record.clone(), won)
                };
                if won {
                    self.announce(record.state, CircuitState::HalfOpen, believed.opened_at);
                    return Ok(slot.into_permit());
                }
                drop(slot);
                match believed.state {
                    CircuitState::Closed => Ok(Permit::new(self, PermitKind::Closed)),
                    _ => Err(self.info_of(&believed)),
                }
            }
        }
    }

    /// The admission of a caller that holds the probe slot, on the cached record;
    /// `verified`: that record was just read strongly consistently.
    fn admission_with_slot(&self, now: u64, verified: bool) -> (Admission, CircuitRecord) {
        let cache = self.lock();
        (
            self.admission(&cache, now, true, verified),
            cache.record.clone(),
        )
    }

    /// CLOSED → OPEN after `failures` consecutive failures. Opens locally at once, then
    /// writes; a lost write adopts the stored state, a failed one stays open locally.
    pub(super) async fn trip(&self, failures: u32) {
        let now = self.now();
        let trip = machine::trip(failures, now, &self.thresholds);
        let base = {
            let mut cache = self.lock();
            if !machine::may_trip(&cache.record, now) {
                // Open already, or an override holds: nothing counts towards a trip (a
                // disabled circuit must not trip the moment it is released), whichever
                // policy counts them.
                self.reset_closed_counts();
                return;
            }
            let base = cache.record.clone();
            cache.version += 1;
            self.adopt(&mut cache, trip.applied_to(Some(&base)));
            base
        };
        let reply = self.write_store(trip.clone()).await;
        let (committed, opened_at) = {
            let mut cache = self.lock();
            let committed = self.commit(&mut cache, &base, &trip, reply, now);
            (committed, cache.record.opened_at)
        };
        if committed {
            self.announce(CircuitState::Closed, CircuitState::Open, opened_at);
        }
    }

    /// A probe ended: count it, and close or reopen when the machine says so. The future
    /// holds the probe slot from its creation until the write is settled, and frees it
    /// even if it is dropped unpolled or cancelled.
    pub(super) fn end_probe(&self, outcome: Outcome) -> impl Future<Output = ()> + Send + '_ {
        let slot = ProbeSlot(self);
        async move {
            let _slot = slot;
            self.settle_probe(outcome).await;
        }
    }

    async fn settle_probe(&self, outcome: Outcome) {
        let now = self.now();
        let (next, base) = {
            let mut cache = self.lock();
            if outcome == Outcome::Success {
                cache.probe_successes += 1;
            }
            let next = machine::on_probe_outcome(
                outcome,
                cache.probe_successes,
                &self.environment_id,
                now,
                &self.thresholds,
            );
            (next, cache.record.clone())
        };
        let Some(transition) = next else {
            return;
        };
        let reply = self.write_store(transition.clone()).await;
        let (committed, opened_at) = {
            let mut cache = self.lock();
            let committed = self.commit(&mut cache, &base, &transition, reply, now);
            (committed, cache.record.opened_at)
        };
        if committed {
            self.announce(CircuitState::HalfOpen, transition.to_state(), opened_at);
        }
    }

    /// Commits the store's answer to `transition`, written from `base`, as the machine
    /// settles it. Returns whether the transition counts as this environment's.
    fn commit(
        &self,
        cache: &mut RecordCache,
        base: &CircuitRecord,
        transition: &Transition,
        reply: Result<WriteOutcome, StoreCallError>,
        now: u64,
    ) -> bool {
        let settled = machine::settle(
            base,
            transition,
            reply.ok(),
            &self.environment_id,
            now,
            &self.thresholds,
        );
        self.commit_settled(cache, base, transition, settled, now)
    }

    /// Makes a settled transition the believed record. An election that counts resets the
    /// probe successes, unless the machine says they carry over (a re-election of its own).
    fn commit_settled(
        &self,
        cache: &mut RecordCache,
        base: &CircuitRecord,
        transition: &Transition,
        settled: Settled,
        now: u64,
    ) -> bool {
        cache.version += 1;
        if settled.won {
            cache.fresh_until = self.fresh_from(now);
        }
        if let Some(opened_at) = machine::committed_opening(transition, &settled) {
            match settled.won {
                true => cache.committed_opening = Some(opened_at),
                false => cache.local_opening = Some(opened_at),
            }
        }
        let elected = settled.committed && matches!(transition, Transition::Elect { .. });
        if elected && !machine::keeps_probe_progress(base, &self.environment_id) {
            cache.probe_successes = 0;
        }
        self.adopt(cache, settled.record);
        settled.committed
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

    pub(super) fn release_probe(&self) {
        self.probe_in_flight.store(false, Ordering::Release);
    }

    /// Logs a committed transition and runs the hooks, outside every lock.
    fn announce(&self, from_state: CircuitState, to_state: CircuitState, opened_at: Option<u64>) {
        if from_state == to_state {
            return;
        }
        tracing::info!(circuit = %self.name, from = %from_state, to = %to_state, "circuit transition");
        self.hooks.run(&CircuitTransition {
            circuit_name: self.name.to_string(),
            from_state,
            to_state,
            opened_at,
        });
    }
}

/// A claimed probe slot, released when dropped (a lost election, a call cancelled while
/// its election is written, a probe outcome settled) unless it becomes a probe's
/// [`Permit`], which releases it when the probe ends.
struct ProbeSlot<'a>(&'a Circuit);

impl<'a> ProbeSlot<'a> {
    fn into_permit(self) -> Permit<'a> {
        let circuit = self.0;
        std::mem::forget(self);
        Permit::new(circuit, PermitKind::Probe)
    }
}

impl Drop for ProbeSlot<'_> {
    fn drop(&mut self) {
        self.0.release_probe();
    }
}
