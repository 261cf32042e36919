//! Admission: whether a call runs, is rejected, probes or elects, from the shared record
//! and what this environment knows; and whether a circuit that reads closed may trip.

use super::{Admission, Local, Thresholds, expiration, secs};
use crate::protocol::record::{CircuitRecord, OverrideKind};
use crate::protocol::state::CircuitState;
use crate::protocol::write::RecordWrite;

/// A lease is live until (and including) its expiry second; the store's takeover
/// condition is `lease < now`.
pub(super) fn lease_live(record: &CircuitRecord, now_millis: u64) -> bool {
    record
        .probe_lease_expiry
        .is_some_and(|lease| secs(now_millis) <= lease)
}

pub(super) fn election(
    record: &CircuitRecord,
    me: &str,
    now_millis: u64,
    thresholds: &Thresholds,
) -> RecordWrite {
    RecordWrite::Elect {
        owner: me.to_owned(),
        expected_opened_at: record.opened_at,
        expected_successes: match record.state {
            CircuitState::HalfOpen => record.probe_successes,
            _ => 0,
        },
        now: secs(now_millis),
        lease_expiry: secs(now_millis).saturating_add(thresholds.probe_lease_secs),
        expiration: expiration(
            now_millis,
            thresholds.recovery_millis_of(record),
            thresholds,
        ),
    }
}

/// When this environment may elect itself (unix millis). The environment with the first
/// right (the one that committed the opening, or the owner of an expired lease) may at
/// once: at the record's recovery (the timeout, backed off by its reopens), or when its
/// lease runs out; so may a quiet environment that can reach the store, which then
/// verifies first. Every other environment waits the fallback longer (its cache age, a
/// second, and its jitter), so that in a fleet of busy environments, whose cached copies
/// all turn due at the same instant, one environment probes and the rest learn of it from
/// their next read instead of racing for the election.
pub(super) fn election_due(
    record: &CircuitRecord,
    me: &str,
    local: &Local,
    thresholds: &Thresholds,
) -> u64 {
    let since = match record.state {
        // The lease runs through its expiry second.
        CircuitState::HalfOpen => record
            .probe_lease_expiry
            .unwrap_or(0)
            .saturating_add(1)
            .saturating_mul(1000),
        _ => record
            .opened_at
            .unwrap_or(0)
            .saturating_mul(1000)
            .saturating_add(thresholds.recovery_millis_of(record)),
    };
    if has_first_right(record, me, local) || (local.quiet && !local.store_unreachable) {
        since
    } else {
        since.saturating_add(thresholds.fallback_millis)
    }
}

/// Unix seconds from which `record` may next admit a call at `now_secs`, for the
/// environment with the first right (see [`election_due`]; every other one waits its
/// fallback more): the backed-off recovery of an opening, the end of a probe's lease, and
/// for a forced open with an end the later of that end and the record's own due time.
/// `None` while calls run (closed, disabled, shadowed) or under a forced open until released.
pub(crate) fn retry_after(
    record: &CircuitRecord,
    now_secs: u64,
    thresholds: &Thresholds,
) -> Option<u64> {
    let own = match record.state {
        CircuitState::Closed => None,
        CircuitState::Open => record.opened_at.map(|opened_at| {
            opened_at
                .saturating_mul(1000)
                .saturating_add(thresholds.recovery_millis_of(record))
                .div_ceil(1000)
        }),
        CircuitState::HalfOpen => record
            .probe_lease_expiry
            .map(|lease| lease.saturating_add(1)),
    };
    match record.live_override(now_secs).map(|o| (o.kind, o.until)) {
        None => own,
        Some((OverrideKind::ForcedOpen, Some(until))) => {
            Some(own.map_or(until, |own| own.max(until)))
        }
        Some(_) => None,
    }
}

/// The first right to probe: the owner of a (now expired) lease, or the environment that
/// committed the current opening.
pub(super) fn has_first_right(record: &CircuitRecord, me: &str, local: &Local) -> bool {
    match record.state {
        CircuitState::HalfOpen => record.half_open_owner.as_deref() == Some(me),
        _ => record.opened_at.is_some() && record.opened_at == local.committed_opening,
    }
}

/// Decides what a call does. An operator's override that holds decides alone: forced open
/// rejects (no probe, no election), disabled runs.
pub fn admit(
    record: &CircuitRecord,
    me: &str,
    now_millis: u64,
    thresholds: &Thresholds,
    local: &Local,
) -> Admission {
    match record.live_override(secs(now_millis)).map(|o| o.kind) {
        Some(OverrideKind::ForcedOpen) => return Admission::Reject,
        Some(OverrideKind::Disabled | OverrideKind::Shadow) => return Admission::Run,
        None => {}
    }
    match record.state {
        CircuitState::Closed => return Admission::Run,
        _ if local.probe_in_flight => return Admission::Reject,
        CircuitState::HalfOpen if lease_live(record, now_millis) => {
            // A lease kept over a probe's success covers the next probe only while the
            // probe's time is left (as an election's lease must); then the owner waits for
            // it to run out and elects itself again, so no taker probes beside it.
            let covers_a_probe = record.probe_lease_expiry.is_some_and(|lease| {
                secs(now_millis).saturating_add(thresholds.probe_secs) <= lease
            });
            return match record.half_open_owner.as_deref() == Some(me) && covers_a_probe {
                true => Admission::Probe,
                false => Admission::Reject,
            };
        }
        CircuitState::Open | CircuitState::HalfOpen => {}
    }
    if now_millis < election_due(record, me, local, thresholds) {
        return Admission::Reject;
    }
    let election = election(record, me, now_millis, thresholds);
    if local.store_unreachable {
        Admission::ElectAlone(election)
    } else if has_first_right(record, me, local) || local.verified {
        Admission::Elect(election)
    } else {
        Admission::Verify
    }
}

/// Whether this environment runs the circuit in shadow at `now`: an operator's shadow
/// holds, or the circuit is configured so and no other override holds (forced open
/// rejects, disabled runs without a verdict). In shadow every call runs, and the circuit's
/// verdicts are the would-be record's: [`would_admit`] instead of [`admit`].
pub(crate) fn shadowed(configured: bool, record: &CircuitRecord, now_millis: u64) -> bool {
    match record.live_override(secs(now_millis)).map(|o| o.kind) {
        Some(OverrideKind::Shadow) => true,
        Some(_) => false,
        None => configured,
    }
}

/// What a shadowed environment's own would-be record says of a call: the decision
/// [`admit`] makes for an environment that committed every opening itself and reads a
/// store that always answers, so that at the recovery timeout it elects itself at once.
pub(crate) fn would_admit(
    would_be: &CircuitRecord,
    me: &str,
    now_millis: u64,
    thresholds: &Thresholds,
    probe_in_flight: bool,
) -> Admission {
    let local = Local {
        probe_in_flight,
        committed_opening: would_be.opened_at,
        verified: true,
        ..Local::default()
    };
    admit(would_be, me, now_millis, thresholds, &local)
}

/// Whether calls may take the closed path without asking [`admit`]: the record says closed
/// and no forced open holds, or a disable holds; and no suspicion of the fleet's holds (its
/// calls are sampled for the fleet's counters, on the slow path).
pub(crate) fn runs_closed(record: &CircuitRecord, now_millis: u64) -> bool {
    let now = secs(now_millis);
    record.effective_state(now) == CircuitState::Closed && record.live_suspicion(now).is_none()
}

/// Whether this environment may trip the circuit it believes closed: not while an
/// operator's override holds (a disabled circuit never trips; the store would refuse the
/// trip anyway).
pub fn may_trip(record: &CircuitRecord, now_millis: u64) -> bool {
    record.state == CircuitState::Closed && record.live_override(secs(now_millis)).is_none()
}
