//! What each DynamoDB request does to the item. Breaker's and the operator's writes are the
//! very requests `store/dynamodb` sends, evaluated on the model's item by [`crate::expression`]
//! (so a change to a condition or update string changes what the model explores); the
//! checker applies each both ways, so and by `RecordWrite::applied_to` (the in-memory
//! store), and says where they differ. Powertools' requests are written out here: they are
//! what a Powertools environment sends (3.34.0 and 3.37.0 alike).

use breaker_runtime::__protocol::{item_as_stored, record_as_read, request_as_sent};
use std::cell::RefCell;
use std::collections::HashMap;

use breaker_runtime::CircuitState;
use breaker_runtime::store::{CircuitRecord, RecordWrite};

use crate::expression::{Bindings, Request, Write};
use crate::item::Item;

/// What the store's own request for `transition` does to `item` (its condition, then its
/// whole-item put or update expression, evaluated as DynamoDB does by [`crate::expression`]): the
/// item it leaves, or `None` when the condition fails. A request DynamoDB would refuse, or
/// an item the store could not read back, stops the check with the reason.
pub fn as_sent(transition: &RecordWrite, item: &Item) -> Option<Item> {
    thread_local! {
        // The checker asks of one write on one item several times (its condition, then
        // what it leaves, then the same through the in-memory reading's check).
        static SEEN: RefCell<HashMap<(RecordWrite, Item), Option<Item>>> = RefCell::default();
    }
    let key = (transition.clone(), item.clone());
    if let Some(seen) = SEEN.with(|seen| seen.borrow().get(&key).cloned()) {
        return seen;
    }
    let after = evaluate(transition, item);
    SEEN.with(|seen| {
        let mut seen = seen.borrow_mut();
        if seen.len() > 500_000 {
            seen.clear();
        }
        seen.insert(key, after.clone());
    });
    after
}

fn evaluate(transition: &RecordWrite, item: &Item) -> Option<Item> {
    let sent = request_as_sent(transition);
    let write = match (sent.put, sent.update) {
        (Some(whole), None) => Write::Put(whole),
        (None, Some(update)) => Write::Update(update),
        other => panic!("a request is a put or an update, not {other:?}"),
    };
    let request = Request {
        condition: sent.condition,
        write,
        bindings: Bindings {
            names: sent.names,
            values: sent.values,
        },
    };
    let stored = item.record.as_ref().map(|r| item_as_stored(r, item.ttl));
    let after = request
        .applied_to(stored.as_ref())
        .unwrap_or_else(|problem| panic!("the store's request for {transition:?}: {problem}"))?;
    let (record, ttl) = record_as_read(&after).unwrap_or_else(|malformed| {
        panic!("{transition:?} on {item:?} leaves an item the store cannot read: {malformed}")
    });
    Some(Item {
        record: Some(record),
        ttl,
    })
}

/// Whether the store's request for `transition` passes its condition on `item`.
pub fn allows(transition: &RecordWrite, item: &Item) -> bool {
    as_sent(transition, item).is_some()
}

/// The item the store's request for `transition` leaves on `item`, whose condition holds.
pub fn leaves(transition: &RecordWrite, item: &Item) -> Item {
    as_sent(transition, item).expect("leaves() is asked only of a request whose condition holds")
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
    // The item as a breaker reads it back: the attributes kept on a closed item that are
    // read only on an opening (`opened_by`, `open_until`) read as absent.
    let (record, ttl) = record_as_read(&item_as_stored(&r, Some(ttl)))
        .unwrap_or_else(|malformed| panic!("Powertools' end leaves {r:?}: {malformed}"));
    Item {
        record: Some(record),
        ttl,
    }
}
