//! The transitions of one circuit as this environment makes them after a call: the trip
//! and the probe's outcome, and how any transition (an election too) is committed to the
//! cache as the machine says ([`machine::settle`]) and only then announced (log and
//! hooks), outside every lock.

use std::future::Future;

use super::cache::RecordCache;
use super::circuit::Circuit;
use super::probe_slot::ProbeSlot;
use super::store_access::StoreCallError;
use crate::protocol::machine::{self, Outcome, Settled};
use crate::protocol::{CircuitRecord, Transition, WriteOutcome};
use crate::state::{CircuitState, CircuitTransition};

/// CLOSED → OPEN after `failures` consecutive failures. Opens locally at once, then
/// writes; a lost write adopts the stored state, a failed one stays open locally.
pub(super) async fn trip(circuit: &Circuit, failures: u32) {
    let now = circuit.now();
    let trip = machine::trip(failures, now, circuit.thresholds());
    let base = {
        let mut cache = circuit.lock();
        if !machine::may_trip(cache.record(), now) {
            // Open already, or an override holds: nothing counts towards a trip (a
            // disabled circuit must not trip the moment it is released), whichever
            // policy counts them.
            circuit.counts().reset();
            return;
        }
        let base = cache.record().clone();
        cache.bump_version();
        circuit.adopt(&mut cache, trip.applied_to(Some(&base)));
        base
    };
    let reply = circuit.write_store(trip.clone()).await;
    let (committed, opened_at) = {
        let mut cache = circuit.lock();
        let committed = commit(circuit, &mut cache, &base, &trip, reply, now);
        (committed, cache.record().opened_at)
    };
    if committed {
        announce(circuit, CircuitState::Closed, CircuitState::Open, opened_at);
    }
}

/// A probe ended: count it, and close or reopen when the machine says so. The future
/// holds the probe slot from its creation until the write is settled, and frees it even
/// if it is dropped unpolled or cancelled.
pub(super) fn end_probe(
    circuit: &Circuit,
    outcome: Outcome,
) -> impl Future<Output = ()> + Send + '_ {
    let slot = ProbeSlot::taken_over(circuit);
    async move {
        let _slot = slot;
        settle_probe(circuit, outcome).await;
    }
}

async fn settle_probe(circuit: &Circuit, outcome: Outcome) {
    let now = circuit.now();
    let (next, base) = {
        let mut cache = circuit.lock();
        let successes = match outcome {
            Outcome::Success => cache.count_probe_success(),
            _ => cache.probe_successes(),
        };
        let next = machine::on_probe_outcome(
            outcome,
            successes,
            circuit.environment_id(),
            now,
            circuit.thresholds(),
        );
        (next, cache.record().clone())
    };
    let Some(transition) = next else {
        return;
    };
    let reply = circuit.write_store(transition.clone()).await;
    let (committed, opened_at) = {
        let mut cache = circuit.lock();
        let committed = commit(circuit, &mut cache, &base, &transition, reply, now);
        (committed, cache.record().opened_at)
    };
    if committed {
        announce(
            circuit,
            CircuitState::HalfOpen,
            transition.to_state(),
            opened_at,
        );
    }
}

/// Commits the store's answer to `transition`, written from `base`, as the machine
/// settles it. Returns whether the transition counts as this environment's.
pub(super) fn commit(
    circuit: &Circuit,
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
        circuit.environment_id(),
        now,
        circuit.thresholds(),
    );
    commit_settled(circuit, cache, base, transition, settled, now)
}

/// Makes a settled transition the believed record. An election that counts resets the
/// probe successes, unless the machine says they carry over (a re-election of its own).
pub(super) fn commit_settled(
    circuit: &Circuit,
    cache: &mut RecordCache,
    base: &CircuitRecord,
    transition: &Transition,
    settled: Settled,
    now: u64,
) -> bool {
    cache.bump_version();
    if settled.won {
        cache.refreshed(now);
    }
    if let Some(opened_at) = machine::committed_opening(transition, &settled) {
        cache.note_opening(opened_at, settled.won);
    }
    let elected = settled.committed && matches!(transition, Transition::Elect { .. });
    if elected && !machine::keeps_probe_progress(base, circuit.environment_id()) {
        cache.reset_probe_successes();
    }
    circuit.adopt(cache, settled.record);
    settled.committed
}

/// Logs a committed transition and runs the hooks, outside every lock.
pub(super) fn announce(
    circuit: &Circuit,
    from_state: CircuitState,
    to_state: CircuitState,
    opened_at: Option<u64>,
) {
    if from_state == to_state {
        return;
    }
    let name = circuit.name();
    tracing::info!(circuit = %name, from = %from_state, to = %to_state, "circuit transition");
    circuit.hooks().run(&CircuitTransition {
        circuit_name: name.to_string(),
        from_state,
        to_state,
        opened_at,
    });
}
