//! The transitions of one circuit as this environment makes them after a call: the trip
//! (by its own policy, or by the counters of a suspicion of the fleet), the suspicion, and
//! the probe's outcome, each committed through the seam the circuit chose
//! ([`super::commit`]).

use std::future::Future;
use std::time::Duration;

use super::circuit::Circuit;
use super::commit::Change;
use super::fleet_reports::Report;
use super::probe_slot::ProbeSlot;
use super::seam::Seam;
use crate::events::{FailureKind, TransitionCause};
use crate::protocol::CircuitState;
use crate::protocol::fleet::{epoch_trips, fleet_suspects, suspect_failures};
use crate::protocol::machine::{self, Outcome};
use crate::protocol::{FailureReport, RecordWrite, SuspectReport};
use breaker_rules::TTL_GRACE_SECS;

/// CLOSED → OPEN after `failures` failures (`cause` says whose and of what kind), through
/// the seam the circuit is on now. The store seam opens locally at once, then writes; a
/// lost write adopts the stored state, a failed one stays open locally.
/// A failure that asked to stay away `open_for` writes it into the opening.
pub(super) async fn trip(
    circuit: &Circuit,
    failures: u32,
    cause: TransitionCause,
    open_for: Option<Duration>,
) {
    let now = circuit.now();
    let seam = circuit.seam(&circuit.lock(), now);
    let owner = circuit.probe_owner();
    let trip = machine::trip(owner, failures, now, circuit.thresholds(), open_for);
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
    /// A trip after the failures counted, with the time the last failure asked for.
    Trip(u32, TransitionCause, Option<Duration>),
    Report(Report),
}

/// The end of the suspicion the circuit's cached record shows at `now` (unix millis), if
/// one holds and this environment takes part in it (it is not
/// [`busy`](super::fleet_reports::FleetReports::busy)).
pub(super) fn live_suspicion(circuit: &Circuit, now: u64) -> Option<u64> {
    let epoch = circuit.lock().record().live_suspicion(now / 1000)?;
    let counts = circuit.counts();
    let busy = match counts.throttle() {
        Some(throttle) => circuit.reports().busy_over(
            now,
            counts.calls(),
            throttle.minimum_requests(),
            throttle.window_millis(),
        ),
        None => circuit.reports().busy(
            now,
            counts.calls(),
            counts.consecutive().is_some(),
            circuit.thresholds().failure_threshold,
        ),
    };
    (!busy).then_some(epoch)
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
        return Some(FollowUp::Trip(failures, cause, outcome.asked_open_for()));
    }
    if !outcome.is_failure() {
        return None;
    }
    if counts.throttle().is_some() {
        // The throttle may shed from now on: calls leave the closed path.
        circuit.publish(&circuit.lock());
        // A load shed is load, not a fault: the fleet's counters, which open the circuit
        // for everyone, do not see it.
        if outcome == Outcome::Overloaded {
            return None;
        }
    }
    let now = circuit.now();
    circuit
        .reports()
        .on_failure(
            now,
            counts.calls(),
            counts.consecutive(),
            circuit.thresholds().failure_threshold,
            abandoned_after,
            live_suspicion(circuit, now),
        )
        .map(FollowUp::Report)
}

/// [`count_closed`] of a call sampled for a suspicion of the fleet: its success is
/// reported too (for the successes the suspicion's counters estimate).
pub(super) fn count_sampled(
    circuit: &Circuit,
    outcome: Outcome,
    started: u64,
    kind: FailureKind,
) -> Option<FollowUp> {
    let follow_up = count_closed(circuit, outcome, started, kind, None);
    if follow_up.is_some() || outcome != Outcome::Success {
        return follow_up;
    }
    let now = circuit.now();
    let epoch = live_suspicion(circuit, now)?;
    circuit
        .reports()
        .on_sampled_success(now, circuit.counts().calls(), epoch)
        .map(FollowUp::Report)
}

/// Writes what [`count_closed`] left to do.
pub(super) async fn follow_up(circuit: &Circuit, follow_up: FollowUp) {
    match follow_up {
        FollowUp::Trip(failures, cause, open_for) => {
            trip(circuit, failures, cause, open_for).await;
        }
        FollowUp::Report(report) => report_failures(circuit, report).await,
    }
}

/// Reports to the fleet's counters through the seam (the shadow seam reports nothing): a
/// window's report may raise a suspicion, a report to a suspicion's counters may trip the
/// circuit. A report that fails is lost: its failures still count towards this
/// environment's own policy.
async fn report_failures(circuit: &Circuit, report: Report) {
    // A stale copy may miss that the circuit opened while this call ran (a hanging call
    // runs for seconds): a read is cheaper than a report, and the item's read budget three
    // times its write budget.
    let now = circuit.now();
    circuit.refresh_if_stale(now).await;
    match (report, live_suspicion(circuit, now)) {
        // The refresh showed a suspicion the call did not know of when it failed (it ran
        // longer than the copy is trusted: a hanging call): its failures are the
        // suspicion's.
        (Report::Window(report), Some(epoch)) => {
            let report = circuit.reports().moved_to_epoch(&report, epoch, now);
            report_epoch(circuit, report, now).await;
        }
        (Report::Window(report), None) => report_window(circuit, report, now).await,
        (Report::Epoch(report), _) => report_epoch(circuit, report, now).await,
    }
}

/// A window's report: a suspicion, if the window's totals meet the fleet-wide policy.
async fn report_window(circuit: &Circuit, report: FailureReport, now: u64) {
    let Some(policy) = circuit.config().fleet_policy() else {
        return;
    };
    let seam = circuit.seam(&circuit.lock(), now);
    let Some(tally) = seam.report(circuit, report, now).await else {
        return;
    };
    // Only the first reports to meet the rule write the suspicion: in a fleet whose calls
    // fail at once, thousands of reports meet it within a second, and each lost write costs
    // the circuit's item a write unit.
    let before = tally.failures.saturating_sub(u64::from(report.failures));
    if fleet_suspects(&tally, &policy) && before < 3 * suspect_failures(&policy) {
        suspect(circuit, report.window_secs, now).await;
    }
}

/// A report to a suspicion's counters: a trip, if some run of its slices meets the
/// fleet-wide policy.
async fn report_epoch(circuit: &Circuit, report: SuspectReport, now: u64) {
    let Some(policy) = circuit.config().fleet_policy() else {
        return;
    };
    let seam = circuit.seam(&circuit.lock(), now);
    let Some(tally) = seam.report_suspected(circuit, report, now).await else {
        return;
    };
    if let Some(throttle) = circuit.counts().throttle() {
        throttle.fleet_evidence(&tally, report.epoch.saturating_mul(1000));
        circuit.publish(&circuit.lock());
    }
    if let Some((failures, calls)) = epoch_trips(&tally, &policy) {
        let cause = TransitionCause::Fleet { failures, calls };
        trip(
            circuit,
            u32::try_from(failures).unwrap_or(u32::MAX),
            cause,
            None,
        )
        .await;
    }
}

/// Raises a suspicion of the fleet for one window (`window_secs`) from `now`, unless the
/// cached record may not trip or already shows one. Committed through the seam like a
/// transition (never announced: the state stays closed).
async fn suspect(circuit: &Circuit, window_secs: u64, now: u64) {
    let seam = circuit.seam(&circuit.lock(), now);
    let base = circuit.lock().record().clone();
    let secs = now / 1000;
    if !machine::may_trip(&base, now) || base.live_suspicion(secs).is_some() {
        return;
    }
    let until = secs.saturating_add(window_secs.max(1));
    let change = Change {
        from: CircuitState::Closed,
        base,
        transition: RecordWrite::Suspect {
            now: secs,
            until,
            expiration: until.saturating_add(TTL_GRACE_SECS),
        },
        cause: None,
    };
    seam.commit(circuit, change, false, now).await;
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
        let (base, hand_over) = seam.probe_base(circuit);
        let transition = machine::on_probe_outcome(
            outcome,
            &base,
            circuit.probe_owner(),
            now,
            circuit.thresholds(),
            hand_over,
        );
        let cause = outcome
            .is_failure()
            .then_some(TransitionCause::Failures { kind, count: 1 });
        let change = Change {
            from: CircuitState::HalfOpen,
            base,
            transition,
            cause,
        };
        seam.commit(circuit, change, false, now).await;
    }
}
