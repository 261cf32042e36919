//! The transitions of one circuit as this environment makes them after a call: the trip
//! (by its own policy, or by the fleet's counters) and the probe's outcome, each committed
//! through the seam the circuit chose ([`super::commit`]).

use std::future::Future;

use super::circuit::Circuit;
use super::commit::Change;
use super::probe_slot::ProbeSlot;
use super::seam::Seam;
use crate::events::{FailureKind, TransitionCause};
use crate::protocol::CircuitState;
use crate::protocol::FailureReport;
use crate::protocol::fleet::fleet_trips;
use crate::protocol::machine::{self, Outcome};

/// CLOSED → OPEN after `failures` failures (`cause` says whose and of what kind), through
/// the seam the circuit is on now. The store seam opens locally at once, then writes; a
/// lost write adopts the stored state, a failed one stays open locally.
pub(super) async fn trip(circuit: &Circuit, failures: u32, cause: TransitionCause) {
    let now = circuit.now();
    let seam = circuit.seam(&circuit.lock(), now);
    let trip = machine::trip(failures, now, circuit.thresholds());
    let Some(base) = seam.opening(circuit, &trip, now) else {
        // Open already, or an override holds: nothing counts towards a trip (a disabled
        // circuit must not trip the moment it is released), whichever policy counts them.
        circuit.counts().reset();
        return;
    };
    let change = Change {
        from: CircuitState::Closed,
        base,
        transition: trip,
        cause: Some(cause),
    };
    seam.commit(circuit, change, false, now).await;
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

/// Reports failures to the fleet's counters through the seam (the shadow seam reports
/// nothing), and trips the circuit if the window's totals meet the fleet-wide policy. A
/// report that fails is lost: its failures still count towards this environment's own
/// policy.
async fn report_failures(circuit: &Circuit, report: FailureReport) {
    let Some(policy) = circuit.config().fleet_policy() else {
        return;
    };
    // A stale copy may miss that the circuit opened while this call ran (a hanging call
    // runs for seconds): a read is cheaper than a report, and the item's read budget three
    // times its write budget.
    let now = circuit.now();
    circuit.refresh_if_stale(now).await;
    let seam = circuit.seam(&circuit.lock(), now);
    let Some(tally) = seam.report(circuit, report, now).await else {
        return;
    };
    if fleet_trips(&tally, &policy) {
        let failures = u32::try_from(tally.failures).unwrap_or(u32::MAX);
        let cause = TransitionCause::Fleet {
            failures: tally.failures,
            calls: tally.calls,
        };
        trip(circuit, failures, cause).await;
    }
}

/// A probe (admitted through `seam`) ended: count it, and hand it over, close or reopen
/// as the machine says. The future holds the probe slot from its creation until the
/// commit is done, and frees it even if it is dropped unpolled or cancelled.
pub(super) fn end_probe(
    circuit: &Circuit,
    seam: Seam,
    outcome: Outcome,
    kind: FailureKind,
) -> impl Future<Output = ()> + Send + '_ {
    let slot = ProbeSlot::taken_over(circuit);
    async move {
        let _slot = slot;
        let now = circuit.now();
        let (base, hand_on) = seam.probe_base(circuit);
        let transition = machine::on_probe_outcome(
            outcome,
            &base,
            circuit.probe_owner(),
            now,
            circuit.thresholds(),
            hand_on,
        );
        let cause =
            (outcome == Outcome::Failure).then_some(TransitionCause::Failures { kind, count: 1 });
        let change = Change {
            from: CircuitState::HalfOpen,
            base,
            transition,
            cause,
        };
        seam.commit(circuit, change, false, now).await;
    }
}
