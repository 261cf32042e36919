//! The store seam: a transition is written to the shared record, and what the store
//! answered is adopted into the cache under the lock, as the machine settles it
//! ([`machine::settle`]); a transition made without the store is applied to the cache
//! alone. Announced as a transition (the `on_transition` hooks).

use super::{Change, Committed};
use crate::breaker::cache::RecordCache;
use crate::breaker::circuit::Circuit;
use crate::breaker::dispatch::{Event, dispatch};
use crate::breaker::store_access::StoreCallError;
use crate::events::{CircuitInfo, TransitionCause};
use crate::protocol::CircuitState;
use crate::protocol::machine::{self, Settled};
use crate::protocol::{
    CircuitRecord, EpochTally, FailureReport, FleetTally, RecordWrite, SuspectReport, WriteOutcome,
};

/// The record a `trip` is made from, opened in the cache at once, or `None` when the
/// cached record may not trip (open already, or an override holds).
pub(super) fn opening(circuit: &Circuit, trip: &RecordWrite, now: u64) -> Option<CircuitRecord> {
    let mut cache = circuit.lock();
    if !machine::may_trip(cache.record(), now) {
        return None;
    }
    let base = cache.record().clone();
    cache.bump_version();
    circuit.adopt(&mut cache, trip.applied_to(Some(&base)));
    Some(base)
}

/// The record a probe's outcome is written on, and whether it hands the probe over.
pub(super) fn probe_base(circuit: &Circuit) -> (CircuitRecord, bool) {
    let cache = circuit.lock();
    (cache.record().clone(), cache.probe_hands_over())
}

/// A probe starts, admitted on a call that was `quiet` (or not).
pub(super) fn probe_started(circuit: &Circuit, quiet: bool) {
    circuit.lock().note_probe(quiet);
}

/// Writes `change` (or, `alone`, applies it without the store) and adopts the outcome.
pub(super) async fn commit(circuit: &Circuit, change: &Change, alone: bool, now: u64) -> Committed {
    let reply = match alone {
        true => None,
        false => Some(circuit.write_store(change.transition.clone()).await),
    };
    let mut cache = circuit.lock();
    let settled = match reply {
        Some(reply) => match heard(circuit, &mut cache, change, reply, now) {
            Heard::Reply(reply) => machine::settle(
                &change.base,
                &change.transition,
                reply,
                circuit.probe_owner(),
                now,
                circuit.thresholds(),
            ),
            Heard::Alone => machine::settle_alone(&change.base, &change.transition),
        },
        None => machine::settle_alone(&change.base, &change.transition),
    };
    let counts = adopt_settled(circuit, &mut cache, &change.transition, settled, now);
    Committed {
        counts,
        record: cache.record().clone(),
    }
}

/// What a write's reply tells the machine: the reply to settle on, or that this
/// environment now acts alone and applies the write without the store.
#[allow(
    clippy::large_enum_variant,
    reason = "one per transition written, held on the stack for its settling"
)]
enum Heard {
    Reply(Option<WriteOutcome>),
    Alone,
}

/// What a write's reply tells the machine, and what it tells of elections the store
/// refuses ([`RefusedElections`](crate::protocol::refusals::RefusedElections)): an election
/// that failed is a refusal, and once the refusals have lasted the bound it is made alone
/// (so the one election an environment acting alone sends the store each recovery window
/// costs no call); an answered one ends them. A write lost to the record the store
/// refuses elections on is no news while this environment acts alone: settled as if the
/// store had not answered, so what it decided alone stays.
fn heard(
    circuit: &Circuit,
    cache: &mut RecordCache,
    change: &Change,
    reply: Result<WriteOutcome, StoreCallError>,
    now: u64,
) -> Heard {
    let election = matches!(change.transition, RecordWrite::Elect { .. });
    match reply {
        Err(StoreCallError::Failed(_)) if election => {
            cache.election_refused(&change.base, now, circuit.thresholds());
            match cache.alone(now) {
                true => Heard::Alone,
                false => Heard::Reply(None),
            }
        }
        Err(_) => Heard::Reply(None),
        Ok(WriteOutcome::Lost(current)) => {
            let answered = current.clone().unwrap_or_default();
            if !election && cache.no_news(&answered, now) {
                return Heard::Reply(None);
            }
            match election {
                true => cache.write_answered(),
                false => cache.store_answered(&answered),
            }
            Heard::Reply(Some(WriteOutcome::Lost(current)))
        }
        Ok(WriteOutcome::Won) => {
            cache.write_answered();
            Heard::Reply(Some(WriteOutcome::Won))
        }
    }
}

/// Makes a settled transition the believed record; returns whether the transition counts
/// as this environment's.
fn adopt_settled(
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

/// Adds `report` to the fleet's counters, unless the cached record may not trip at
/// `now`; the fleet's tally if the store keeps one.
pub(super) async fn report(
    circuit: &Circuit,
    report: FailureReport,
    now: u64,
) -> Option<FleetTally> {
    if !machine::may_trip(circuit.lock().record(), now) {
        return None;
    }
    match circuit.report_to_fleet(report).await {
        Ok(Some(tally)) => Some(tally),
        Ok(None) => {
            circuit.reports().unsupported();
            None
        }
        // A report that fails is lost: its failures still count towards this
        // environment's own policy.
        Err(_) => None,
    }
}

/// Adds `report` to the counters of a suspicion, unless the cached record may not trip at
/// `now`; the epoch's tally if the store keeps one.
pub(super) async fn report_suspected(
    circuit: &Circuit,
    report: SuspectReport,
    now: u64,
) -> Option<EpochTally> {
    if !machine::may_trip(circuit.lock().record(), now) {
        return None;
    }
    match circuit.report_suspected_to_fleet(report).await {
        Ok(Some(tally)) => Some(tally),
        Ok(None) => {
            circuit.reports().unsupported();
            None
        }
        Err(_) => None,
    }
}

/// A rejection stands: what it reports.
pub(super) fn rejection(circuit: &Circuit, record: &CircuitRecord) -> Option<CircuitInfo> {
    Some(circuit.info_of(record))
}

/// Announces a committed transition from `from`, unless it stays in its state (a
/// hand-over).
pub(super) fn announce(
    circuit: &Circuit,
    from: CircuitState,
    to: CircuitState,
    opened_at: Option<u64>,
    cause: Option<TransitionCause>,
) {
    if from == to {
        return;
    }
    let event = Event::Transition {
        from,
        to,
        opened_at,
        cause,
    };
    dispatch(circuit, event);
}
