//! The shared item as the model holds it: the record (absent: no item) and its TTL, with
//! the hashing the checker needs to tell states apart.

use std::hash::{Hash, Hasher};

use breaker_runtime::__protocol::RefusedElections;
use breaker_runtime::CircuitState;
use breaker_runtime::store::CircuitRecord;

/// One circuit's item: what DynamoDB holds. `record: None`: there is no item.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Item {
    /// The decoded attributes (`probe_successes` and `reopen_count` included, on any state).
    pub record: Option<CircuitRecord>,
    /// The TTL attribute; `None`: absent (an override until released removes it).
    pub ttl: Option<u64>,
}

impl Item {
    /// The record a breaker reads: an absent item is a closed circuit.
    pub fn read(&self) -> CircuitRecord {
        self.record.clone().unwrap_or_default()
    }

    /// Whether both readers decode it: breaker (`AttributeNames::decode`) and Powertools
    /// (`_item_to_record`) need `opened_at` on `OPEN`, and the owner and lease on
    /// `HALF_OPEN`.
    pub fn decodes(&self) -> bool {
        self.record.as_ref().is_none_or(|r| match r.state {
            CircuitState::Closed => true,
            CircuitState::Open => r.opened_at.is_some(),
            CircuitState::HalfOpen => r.half_open_owner.is_some() && r.probe_lease_expiry.is_some(),
        })
    }
}

impl Hash for Item {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.ttl.hash(state);
        if let Some(r) = &self.record {
            r.state.hash(state);
            r.failure_count.hash(state);
            r.opened_at.hash(state);
            r.half_open_owner.hash(state);
            r.probe_lease_expiry.hash(state);
            r.probe_successes.hash(state);
            r.reopen_count.hash(state);
            r.suspected_until.hash(state);
            r.opened_by.hash(state);
            r.operator_override
                .as_ref()
                .map(|o| (o.kind, o.until, &o.by, o.at))
                .hash(state);
        }
    }
}

/// A record in a breaker's cache, hashable.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Cached(pub CircuitRecord);

impl Hash for Cached {
    fn hash<H: Hasher>(&self, state: &mut H) {
        Item {
            record: Some(self.0.clone()),
            ttl: None,
        }
        .hash(state);
    }
}

/// A breaker's refused elections, hashable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusals(pub RefusedElections);

impl Hash for Refusals {
    fn hash<H: Hasher>(&self, state: &mut H) {
        Cached(self.0.stored.clone()).hash(state);
        self.0.alone_from.hash(state);
        self.0.recent_until.hash(state);
    }
}
