//! What each DynamoDB request does to the item: its condition and its SET/REMOVE list (or
//! whole-item put), as `store/dynamodb` sends them, written out on the model's item. The
//! checker applies every breaker write both ways, by this and by `RecordWrite::applied_to`
//! (the in-memory store), and says where they differ. Powertools' requests are here too:
//! they are what a Powertools environment sends (3.34.0 and 3.37.0 alike).

use breaker_runtime::__protocol::OPENED_AT_UNTIL_RELEASED;
use breaker_runtime::CircuitState;
use breaker_runtime::store::{CircuitRecord, OverrideKind, RecordWrite};

use crate::item::Item;

/// `(attribute_not_exists(#ov) OR #ou <= :now)`: an override until released has no
/// `#ou`, so it blocks.
fn no_live_override(r: &CircuitRecord, now: u64) -> bool {
    r.operator_override
        .as_ref()
        .is_none_or(|o| o.until.is_some_and(|until| until <= now))
}

/// `REMOVE #ow, #le, #ps, #rc, #su, #opb`: an override, or a forced open released into an
/// opening, is a fresh start, as a trip is: no probe, nor its count, nor the reopens', nor a
/// suspicion, nor the trip's writer survives it.
fn fresh_start(r: &mut CircuitRecord) {
    r.half_open_owner = None;
    r.probe_lease_expiry = None;
    r.probe_successes = 0;
    r.reopen_count = 0;
    r.suspected_until = None;
    r.opened_by = None;
}

/// Whether the request's condition holds on `item`.
pub fn allows(transition: &RecordWrite, item: &Item) -> bool {
    let Some(r) = &item.record else {
        // Absent reads as "unreadable": the trip and the operator's writes accept it, and
        // the suspicion (`attribute_not_exists(#st)`).
        return matches!(
            transition,
            RecordWrite::Trip { .. }
                | RecordWrite::Reset { .. }
                | RecordWrite::Suspect { .. }
                | RecordWrite::Override { replaces: None, .. }
        );
    };
    match transition {
        RecordWrite::Trip { opened_at, .. } => {
            r.state == CircuitState::Closed && no_live_override(r, *opened_at)
        }
        RecordWrite::Elect {
            expected_opened_at,
            expected_successes,
            now,
            ..
        } => {
            let from_open = r.state == CircuitState::Open
                && r.half_open_owner.is_none()
                && r.opened_at == *expected_opened_at;
            let takeover = r.state == CircuitState::HalfOpen
                && r.probe_lease_expiry.is_some_and(|lease| lease < *now)
                && r.probe_successes == *expected_successes;
            let branches = match *expected_successes > 0 {
                // Only a takeover reads a count.
                true => takeover,
                false => from_open || takeover,
            };
            branches && no_live_override(r, *now)
        }
        RecordWrite::HandOver { owner, .. }
        | RecordWrite::Close { owner, .. }
        | RecordWrite::Reopen { owner, .. } => {
            r.state == CircuitState::HalfOpen && r.half_open_owner.as_deref() == Some(owner)
        }
        RecordWrite::Reset { now, .. } => no_live_override(r, *now),
        RecordWrite::Suspect { now, .. } => {
            r.state == CircuitState::Closed
                && no_live_override(r, *now)
                && r.suspected_until.is_none_or(|until| until <= *now)
        }
        RecordWrite::Override { replaces, .. } => match (replaces, &r.operator_override) {
            (None, stored) => stored.is_none(),
            (Some(read), Some(stored)) => read.same_as(stored),
            (Some(_), None) => false,
        },
        RecordWrite::Release { released, now, .. } => {
            let Some(stored) = &r.operator_override else {
                return false;
            };
            let live = stored.until.is_none_or(|until| until > *now);
            released.same_as(stored) && live == released.holds_at(*now)
        }
        _ => false,
    }
}

/// The item a request that passed its condition leaves.
pub fn leaves(transition: &RecordWrite, item: &Item) -> Item {
    let current = item.read();
    let ttl = transition.expiration();
    let record = match transition {
        // Whole-item puts: the record the transition leaves on nothing.
        RecordWrite::Trip { .. }
        | RecordWrite::Close { .. }
        | RecordWrite::Reopen { .. }
        | RecordWrite::Reset { .. } => transition.applied_to(None),
        RecordWrite::Elect {
            owner,
            lease_expiry,
            expected_successes,
            ..
        } => {
            let mut r = current;
            r.state = CircuitState::HalfOpen;
            r.half_open_owner = Some(owner.clone());
            r.probe_lease_expiry = Some(*lease_expiry);
            if *expected_successes == 0 {
                // `REMOVE #ps`: an OPEN item may carry a count a Powertools reopen kept.
                r.probe_successes = 0;
            }
            r
        }
        RecordWrite::HandOver {
            probe_successes,
            lease_expiry,
            ..
        } => {
            let mut r = current;
            r.probe_successes = *probe_successes;
            r.probe_lease_expiry = Some(*lease_expiry);
            r
        }
        RecordWrite::Override { set, .. } => {
            let mut r = current;
            match set.kind {
                OverrideKind::ForcedOpen => {
                    r.state = CircuitState::Open;
                    r.opened_at = Some(set.until.unwrap_or(OPENED_AT_UNTIL_RELEASED));
                }
                OverrideKind::Disabled | OverrideKind::Shadow => {
                    r.state = CircuitState::Closed;
                    r.failure_count = 0;
                    r.opened_at = None;
                }
            }
            fresh_start(&mut r);
            r.operator_override = Some(set.clone());
            r
        }
        RecordWrite::Release { released, now, .. } => {
            let mut r = current;
            if released.kind == OverrideKind::ForcedOpen && released.holds_at(*now) {
                r.state = CircuitState::Open;
                r.opened_at = Some(*now);
                fresh_start(&mut r);
            }
            r.operator_override = None;
            r
        }
        // `SET #st = :closed, #fc = if_not_exists(#fc, :zero), #su = :until, #ex = :ttl`.
        RecordWrite::Suspect { until, .. } => {
            let mut r = current;
            r.state = CircuitState::Closed;
            r.suspected_until = Some(*until);
            r
        }
        _ => current,
    };
    Item {
        record: Some(record),
        ttl,
    }
}

/// Powertools' trip (`save_open`): an unconditional whole-item put.
pub fn powertools_trip(failures: u32, now: u64, ttl: u64) -> Item {
    Item {
        record: Some(CircuitRecord::open(now, failures)),
        ttl: Some(ttl),
    }
}

/// Powertools' election or takeover (`try_acquire_half_open`): a whole-item put on `OPEN`
/// without an owner and the `opened_at` it read, or on `HALF_OPEN` with `lease <= now`
/// (where breaker's takeover needs `lease < now`).
pub fn powertools_elect(
    item: &Item,
    owner: &str,
    read_opened_at: u64,
    now: u64,
    lease: u64,
    ttl: u64,
) -> Option<Item> {
    let r = item.record.as_ref()?;
    let open = r.state == CircuitState::Open
        && r.half_open_owner.is_none()
        && r.opened_at == Some(read_opened_at);
    let expired =
        r.state == CircuitState::HalfOpen && r.probe_lease_expiry.is_some_and(|l| l <= now);
    (open || expired).then(|| Item {
        record: Some(CircuitRecord::half_open(
            r.opened_at.unwrap_or(read_opened_at),
            r.failure_count,
            owner,
            lease,
        )),
        ttl: Some(ttl),
    })
}

/// Powertools' close (`save_closed`) and reopen (`save_reopen`, `reopened_at`): an
/// unconditional `UpdateItem` that sets the state, `failure_count` 0 and the TTL, sets or
/// removes `opened_at`, removes the owner and lease, and keeps every other attribute
/// (`probe_successes`, `reopen_count`, the override's).
pub fn powertools_end(item: &Item, reopened_at: Option<u64>, ttl: u64) -> Item {
    let mut r = item.read();
    r.state = match reopened_at {
        Some(_) => CircuitState::Open,
        None => CircuitState::Closed,
    };
    r.failure_count = 0;
    r.opened_at = reopened_at;
    r.half_open_owner = None;
    r.probe_lease_expiry = None;
    Item {
        record: Some(r),
        ttl: Some(ttl),
    }
}
