//! The shadow seam: a transition is applied to the would-be record
//! ([`WouldBe`](crate::breaker::would_be::WouldBe)) instead of the shared one, and nothing
//! is written anywhere shared (no store write, no fleet report), so the rest of the fleet
//! sees the circuit as its shared record says. Every call runs: a call the would-be record
//! rejects is reported as a would-be rejection; at its recovery timeout the next call is
//! the would-be probe, whose outcomes close or reopen it. Each verdict is dispatched as an
//! event (the `on_shadow` hooks).

use super::{Change, Committed};
use crate::breaker::circuit::Circuit;
use crate::breaker::dispatch::{Event, dispatch};
use crate::events::{CircuitInfo, ShadowDecision, TransitionCause};
use crate::protocol::machine::{self, Admission};
use crate::protocol::{CircuitRecord, RecordWrite};

/// What the would-be record says of a call at `now`, and that record. With the probe
/// slot, no other (would-be) probe runs in this process.
pub(super) fn admission(
    circuit: &Circuit,
    now: u64,
    with_slot: bool,
) -> (Admission, CircuitRecord) {
    let probe_in_flight = !with_slot && circuit.probe_in_flight();
    circuit.would_be().admission(
        circuit.probe_owner(),
        now,
        circuit.thresholds(),
        probe_in_flight,
    )
}

/// The would-be record a trip is made from, or `None` when it is not closed.
pub(super) fn opening(circuit: &Circuit, now: u64) -> Option<CircuitRecord> {
    let record = circuit.would_be().record();
    machine::may_trip(&record, now).then_some(record)
}

/// The would-be record a would-be probe's outcome is applied to; it never hands over.
pub(super) fn probe_base(circuit: &Circuit) -> (CircuitRecord, bool) {
    (circuit.would_be().record(), false)
}

/// A would-be probe starts: reported, with the would-be record it probes.
pub(super) fn probe_started(circuit: &Circuit) {
    let record = circuit.would_be().record();
    verdict(circuit, ShadowDecision::WouldProbe, &record, None);
}

/// Applies `change` to the would-be record, and republishes the circuit so that the
/// closed path runs only while the would-be record is closed.
pub(super) fn commit(circuit: &Circuit, change: &Change) -> Committed {
    let record = circuit.would_be().apply(&change.transition);
    circuit.counts().reset();
    circuit.publish(&circuit.lock());
    Committed {
        counts: true,
        record,
    }
}

/// A call the would-be record rejects runs: reported as a would-be rejection.
pub(super) fn rejection(circuit: &Circuit, record: &CircuitRecord) -> Option<CircuitInfo> {
    verdict(circuit, ShadowDecision::WouldReject, record, None);
    None
}

/// Reports a committed would-be transition as the verdict it is: an opening or a close
/// (an election is reported when the would-be probe starts; a hand-over is none).
pub(super) fn announce(
    circuit: &Circuit,
    transition: &RecordWrite,
    record: &CircuitRecord,
    cause: Option<TransitionCause>,
) {
    let decision = match transition {
        RecordWrite::Trip { .. } | RecordWrite::Reopen { .. } => ShadowDecision::WouldOpen,
        RecordWrite::Close { .. } => ShadowDecision::WouldClose,
        _ => return,
    };
    verdict(circuit, decision, record, cause);
}

/// Reports a verdict, on the would-be record as it is now (or was when judged).
fn verdict(
    circuit: &Circuit,
    decision: ShadowDecision,
    would_be: &CircuitRecord,
    cause: Option<TransitionCause>,
) {
    let event = Event::Verdict {
        decision,
        opened_at: would_be.opened_at,
        cause,
    };
    dispatch(circuit, event);
}
