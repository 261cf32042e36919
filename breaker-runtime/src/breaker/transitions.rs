//! The transitions of one circuit as this environment makes them after a call: the trip
//! and the probe's outcome, and how any transition (an election too) is committed to the
//! cache as the machine says ([`machine::settle`]) and only then announced (log and
//! hooks), outside every lock.

use std::future::Future;

use super::cache::RecordCache;
use super::circuit::Circuit;
use super::probe_slot::ProbeSlot;
use super::shadow;
use super::store_access::StoreCallError;
use crate::events::{CircuitTransition, FailureKind, TransitionCause};
use crate::protocol::CircuitState;
use crate::protocol::fleet::fleet_trips;
use crate::protocol::machine::{self, Outcome, Settled};
use crate::protocol::{CircuitRecord, FailureReport, RecordWrite, WriteOutcome};

/// CLOSED → OPEN after `failures` failures (`cause` says whose and of what kind). Opens
/// locally at once, then writes; a lost write adopts the stored state, a failed one stays
/// open locally.
pub(super) async fn trip(circuit: &Circuit, failures: u32, cause: TransitionCause) {
    let now = circuit.now();
    if shadow::trip(circuit, failures, cause, now) {
        return;
    }
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
        announce(
            circuit,
            CircuitState::Closed,
            CircuitState::Open,
            opened_at,
            Some(cause),
        );
    }
}

/// What a closed call's outcome leaves to do after it: a trip of this environment's
/// policy, or a report to the fleet's counters.
#[derive(Debug)]
pub(super) enum FollowUp {
    Trip(u32, TransitionCause),
    Report(FailureReport),
}

/// Counts a closed call that ended with `outcome` (a failure of `kind`), admitted at
/// `started` (and abandoned, if `abandoned_after` gives the call count at its start);
/// returns what is left to write.
pub(super) fn count_closed(
    circuit: &Circuit,
    outcome: Outcome,
    started: u64,
    kind: FailureKind,
    abandoned_after: Option<u64>,
) -> Option<FollowUp> {
    let counts = circuit.counts();
    if let Some(failures) = counts.count(outcome, started, circuit.thresholds()) {
        let cause = TransitionCause::Failures {
            kind,
            count: failures,
        };
        return Some(FollowUp::Trip(failures, cause));
    }
    if outcome != Outcome::Failure {
        return None;
    }
    circuit
        .reports()
        .on_failure(
            circuit.now(),
            counts.calls(),
            counts.consecutive(),
            circuit.thresholds().failure_threshold,
            abandoned_after,
        )
        .map(FollowUp::Report)
}

/// Writes what [`count_closed`] left to do.
pub(super) async fn follow_up(circuit: &Circuit, follow_up: FollowUp) {
    match follow_up {
        FollowUp::Trip(failures, cause) => trip(circuit, failures, cause).await,
        FollowUp::Report(report) => report_failures(circuit, report).await,
    }
}

/// Reports failures to the fleet's counters, and trips the circuit if the window's
/// totals meet the fleet-wide policy. A report that fails is lost: its failures still
/// count towards this environment's own policy.
async fn report_failures(circuit: &Circuit, report: FailureReport) {
    let Some(policy) = circuit.config().fleet_policy() else {
        return;
    };
    // A stale copy may miss that the circuit opened while this call ran (a hanging call
    // runs for seconds): a read is cheaper than a report, and the item's read budget three
    // times its write budget.
    let now = circuit.now();
    circuit.refresh_if_stale(now).await;
    let may_trip = {
        let cache = circuit.lock();
        // In shadow a fleet trip opens the would-be record only.
        machine::may_trip(cache.record(), now) || circuit.shadowed(&cache, now)
    };
    if !may_trip {
        return;
    }
    match circuit.report_store(report).await {
        Ok(Some(tally)) if fleet_trips(&tally, &policy) => {
            let failures = u32::try_from(tally.failures).unwrap_or(u32::MAX);
            let cause = TransitionCause::Fleet {
                failures: tally.failures,
                calls: tally.calls,
            };
            trip(circuit, failures, cause).await;
        }
        Ok(Some(_)) => {}
        Ok(None) => circuit.reports().unsupported(),
        Err(_) => {}
    }
}

/// A probe ended: count it, and close or reopen when the machine says so. The future
/// holds the probe slot from its creation until the write is settled, and frees it even
/// if it is dropped unpolled or cancelled.
pub(super) fn end_probe(
    circuit: &Circuit,
    outcome: Outcome,
    kind: FailureKind,
) -> impl Future<Output = ()> + Send + '_ {
    let slot = ProbeSlot::taken_over(circuit);
    async move {
        let _slot = slot;
        settle_probe(circuit, outcome, kind).await;
    }
}

async fn settle_probe(circuit: &Circuit, outcome: Outcome, kind: FailureKind) {
    let now = circuit.now();
    if shadow::end_probe(circuit, outcome, kind, now) {
        return;
    }
    let (base, hand_on) = {
        let cache = circuit.lock();
        (cache.record().clone(), cache.probe_hands_on())
    };
    let transition = machine::on_probe_outcome(
        outcome,
        &base,
        circuit.environment_id(),
        now,
        circuit.thresholds(),
        hand_on,
    );
    let reply = circuit.write_store(transition.clone()).await;
    let (committed, opened_at) = {
        let mut cache = circuit.lock();
        let committed = commit(circuit, &mut cache, &base, &transition, reply, now);
        (committed, cache.record().opened_at)
    };
    if committed {
        let cause =
            (outcome == Outcome::Failure).then_some(TransitionCause::Failures { kind, count: 1 });
        announce(
            circuit,
            CircuitState::HalfOpen,
            transition.to_state(),
            opened_at,
            cause,
        );
    }
}

/// Commits the store's answer to `transition`, written from `base`, as the machine
/// settles it. Returns whether the transition counts as this environment's.
pub(super) fn commit(
    circuit: &Circuit,
    cache: &mut RecordCache,
    base: &CircuitRecord,
    transition: &RecordWrite,
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
    commit_settled(circuit, cache, transition, settled, now)
}

/// Makes a settled transition the believed record.
pub(super) fn commit_settled(
    circuit: &Circuit,
    cache: &mut RecordCache,
    transition: &RecordWrite,
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
    circuit.adopt(cache, settled.record);
    settled.committed
}

/// Logs a committed transition and runs the hooks, outside every lock.
pub(super) fn announce(
    circuit: &Circuit,
    from_state: CircuitState,
    to_state: CircuitState,
    opened_at: Option<u64>,
    cause: Option<TransitionCause>,
) {
    if from_state == to_state {
        return;
    }
    let name = circuit.name();
    let why = cause.as_ref().map_or("", TransitionCause::as_str);
    tracing::info!(circuit = %name, from = %from_state, to = %to_state, cause = why, "circuit transition");
    let transition = CircuitTransition {
        name: name.to_string(),
        from_state,
        to_state,
        opened_at,
        cause,
    };
    circuit.hooks().run(&transition, name);
}
