//! A keyed circuit's index item (`{circuit}#keys`) and the census of its key items.
//!
//! The index is one DynamoDB item per keyed circuit naming the keys whose items must be
//! read: top-level attributes `k:{encoded key}` = token, `open_keys` (their count),
//! `key_index` = 1, and no TTL attribute. It is held to one item's limits like any other, and
//! it is the one item whose size grows with the keys, so its units follow its size as
//! DynamoDB's do: a write costs 1 WCU per started KB of the larger of the item before and
//! after it (a write whose condition fails, of the item as it is); a read 1 RCU per started
//! 4 KB (half for an eventually consistent one).
//!
//! The conditions are the runtime's ([`KeyIndexWrite::apply`], docs/dynamodb.md): **Add**
//! `attribute_not_exists(k) AND (attribute_not_exists(open_keys) OR open_keys < cap)`;
//! **Refresh** `attribute_exists(k)`; **Remove** `k = token`. A failed Add tells the caller
//! why from the old item (ALL_OLD): the key is there already, or the cap holds.
//!
//! The census follows every key item's state as writes land, so a run knows at each
//! instant how many keys are open or half-open, and whether each of them is named by its
//! index (the design's invariant: open keys ≤ `open_keys` ≤ cap at every instant).

use std::collections::HashSet;
use std::sync::Arc;

use breaker_runtime::__protocol::{key_index_id, split_key_item_id};
use breaker_runtime::CircuitState;
use breaker_runtime::store::{CircuitRecord, KeyIndex, KeyIndexOutcome, KeyIndexWrite};

use super::{Consistency, Cost, Item, ItemModel, RequestOutcome, Served};

#[cfg(test)]
mod tests;

/// The attribute-name prefix of an index entry.
const ENTRY_PREFIX: &str = "k:";

/// One index item as stored: the index (no TTL attribute: the runtime's writes remove it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexItem {
    /// The entries and their count.
    pub index: KeyIndex,
}

/// Bytes DynamoDB counts for a number: about one per two significant digits, plus one.
fn number_bytes(n: u64) -> usize {
    let digits = n.checked_ilog10().map_or(1, |d| d as usize + 1);
    digits.div_ceil(2) + 1
}

/// Bytes of one entry: its attribute's name and its token.
fn entry_bytes(encoded_key: &str, token: u64) -> usize {
    ENTRY_PREFIX.len() + encoded_key.len() + number_bytes(token)
}

impl IndexItem {
    /// The item's size as DynamoDB counts it (attribute names and values), with `id` as its
    /// key attribute's value.
    ///
    /// ```
    /// use breaker_sim::model::IndexItem;
    /// let mut item = IndexItem::default();
    /// let empty = item.size_bytes("downstream#keys");
    /// item.index.entries.insert("tenant-0100".into(), 1_700_000_000_000_123);
    /// item.index.open_keys = 1;
    /// // "k:tenant-0100" (13 bytes) and a 16-digit token (9).
    /// assert_eq!(item.size_bytes("downstream#keys") - empty, 22);
    /// ```
    pub fn size_bytes(&self, id: &str) -> usize {
        let fixed = "id".len()
            + id.len()
            + "key_index".len()
            + number_bytes(1)
            + "open_keys".len()
            + number_bytes(u64::from(self.index.open_keys));
        let suspected = match self.index.suspected_keys {
            0 => 0,
            n => "suspected_keys".len() + number_bytes(u64::from(n)),
        };
        fixed
            + suspected
            + self
                .index
                .entries
                .iter()
                .chain(&self.index.suspected)
                .map(|(key, token)| entry_bytes(key, *token))
                .sum::<usize>()
    }
}

/// The bytes a write may add to the item.
fn growth(write: &KeyIndexWrite) -> usize {
    match write {
        KeyIndexWrite::Add { key, token, .. }
        | KeyIndexWrite::Refresh { key, token }
        | KeyIndexWrite::Suspect { key, token, .. } => entry_bytes(key, *token),
        _ => 0,
    }
}

/// What the model knows about the key items and indexes of every keyed circuit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyCensus {
    /// Key items OPEN or HALF_OPEN now.
    pub open_key_items: u32,
    /// The most at any instant.
    pub max_open_key_items: u32,
    /// The largest `open_keys` any index held.
    pub max_index_open_keys: u32,
    /// The largest size any index reached, bytes.
    pub max_index_bytes: usize,
    /// Writes after which an OPEN or HALF_OPEN key item was not named by its index: the
    /// design's invariant says 0.
    pub unindexed_open_keys: u64,
    /// Adds refused because the cap held.
    pub cap_refusals: u64,
    /// Suspicions not named because the index named as many as it may.
    pub suspicion_refusals: u64,
    /// Ids of the key items OPEN or HALF_OPEN now.
    open: HashSet<String>,
    /// Ids of the key items that have been OPEN or HALF_OPEN.
    ever_open: HashSet<String>,
}

impl KeyCensus {
    /// Whether the key item `id` has been OPEN or HALF_OPEN at some instant.
    pub fn ever_open(&self, id: &str) -> bool {
        self.ever_open.contains(id)
    }
}

/// A key item's id split into its index's id and its encoded key.
fn key_item_parts(id: &str) -> Option<(String, &str)> {
    let (circuit, encoded) = split_key_item_id(id)?;
    Some((key_index_id(circuit), encoded))
}

fn not_closed(record: Option<&CircuitRecord>) -> bool {
    record.is_some_and(|r| r.state != CircuitState::Closed)
}

impl Item {
    fn index_as_of(&self, at_ms: u64) -> Option<&Arc<IndexItem>> {
        self.index
            .iter()
            .rev()
            .find(|(time, _)| *time <= at_ms)
            .and_then(|(_, index)| index.as_ref())
    }

    fn current_index(&self) -> Option<&Arc<IndexItem>> {
        self.index.back().and_then(|(_, index)| index.as_ref())
    }

    fn write_index(&mut self, now_ms: u64, index: IndexItem, max_lag_ms: u64) {
        self.index.push_back((now_ms, Some(Arc::new(index))));
        let horizon = now_ms.saturating_sub(max_lag_ms);
        while self.index.len() >= 2 && self.index[1].0 <= horizon {
            self.index.pop_front();
        }
    }
}

impl ItemModel {
    /// GetItem of `circuit`'s index at `now_ms`, its units by its size.
    pub fn read_index(
        &mut self,
        circuit: &str,
        now_ms: u64,
        consistency: Consistency,
    ) -> Served<Option<KeyIndex>> {
        let id = key_index_id(circuit);
        let lag = match consistency {
            Consistency::Eventual => self.rng.between(0, self.config.max_lag_ms),
            Consistency::Strong => 0,
        };
        let seen = self
            .items
            .get(&id)
            .and_then(|item| item.index_as_of(now_ms.saturating_sub(lag)))
            .cloned();
        let quarters =
            seen.as_ref()
                .map_or(1, |item| item.size_bytes(&id).div_ceil(4096).max(1)) as u32;
        let halves = match consistency {
            Consistency::Eventual => quarters,
            Consistency::Strong => 2 * quarters,
        };
        self.request(&id, now_ms, Cost::ReadHalves(halves), move |_| {
            (
                Ok(seen.map(|item| item.index.clone())),
                RequestOutcome::Served,
            )
        })
    }

    /// A conditional UpdateItem of `circuit`'s index at `now_ms`, applied as the runtime's
    /// [`KeyIndexWrite::apply`] says (so the model cannot disagree with the protocol).
    pub fn apply_index(
        &mut self,
        circuit: &str,
        write: &KeyIndexWrite,
        now_ms: u64,
    ) -> Served<KeyIndexOutcome> {
        let id = key_index_id(circuit);
        let before = self.items.get(&id).and_then(Item::current_index).cloned();
        let before_bytes = before.as_ref().map_or(0, |item| item.size_bytes(&id));
        let units = (before_bytes + growth(write)).div_ceil(1024).max(1) as u32;
        let max_lag = self.config.max_lag_ms;
        let served = self.request(&id, now_ms, Cost::Write(units), |item| {
            let mut index = before.as_ref().map(|item| item.index.clone());
            let outcome = write.apply(&mut index);
            if outcome != KeyIndexOutcome::Won {
                return (Ok(outcome), RequestOutcome::Lost);
            }
            let written = IndexItem {
                index: index.unwrap_or_default(),
            };
            item.write_index(now_ms, written, max_lag);
            (Ok(KeyIndexOutcome::Won), RequestOutcome::Won)
        });
        match &served.result {
            Ok(KeyIndexOutcome::Won) => self.index_written(&id, circuit, write),
            Ok(KeyIndexOutcome::CapReached(_))
                if matches!(write, KeyIndexWrite::Suspect { .. }) =>
            {
                self.census.suspicion_refusals += 1;
            }
            Ok(KeyIndexOutcome::CapReached(_)) => self.census.cap_refusals += 1,
            _ => {}
        }
        served
    }

    /// The census of key items and indexes.
    pub fn census(&self) -> &KeyCensus {
        &self.census
    }

    /// The current index of `circuit`, without a request.
    pub fn current_index(&self, circuit: &str) -> Option<&IndexItem> {
        self.items
            .get(&key_index_id(circuit))
            .and_then(Item::current_index)
            .map(|item| &**item)
    }

    /// An index write landed: its size and count, and the invariant for a removed key.
    fn index_written(&mut self, id: &str, circuit: &str, write: &KeyIndexWrite) {
        let (bytes, open_keys) = match self.items.get(id).and_then(Item::current_index) {
            Some(item) => (item.size_bytes(id), item.index.open_keys),
            None => return,
        };
        self.census.max_index_bytes = self.census.max_index_bytes.max(bytes);
        self.census.max_index_open_keys = self.census.max_index_open_keys.max(open_keys);
        if let KeyIndexWrite::Remove { key, .. } = write {
            let key_id = format!("{circuit}#key={key}");
            if self.census.open.contains(&key_id) {
                self.census.unindexed_open_keys += 1;
            }
        }
    }

    /// A record write landed on `id`: if it is a key item, follow its state and check that
    /// its index names it while it is not closed.
    pub(super) fn record_written(&mut self, id: &str, was: bool) {
        let Some((index_id, encoded)) = key_item_parts(id) else {
            return;
        };
        let is = not_closed(self.items.get(id).and_then(Item::current));
        let census = &mut self.census;
        match (was, is) {
            (false, true) => {
                census.open.insert(id.to_owned());
                if !census.ever_open.contains(id) {
                    census.ever_open.insert(id.to_owned());
                }
                census.open_key_items += 1;
                census.max_open_key_items = census.max_open_key_items.max(census.open_key_items);
            }
            (true, false) => {
                census.open.remove(id);
                census.open_key_items -= 1;
            }
            _ => {}
        }
        if is {
            let named = self
                .items
                .get(&index_id)
                .and_then(Item::current_index)
                .is_some_and(|item| item.index.entries.contains_key(encoded));
            if !named {
                self.census.unindexed_open_keys += 1;
            }
        }
    }

    /// Whether `id`'s record is OPEN or HALF_OPEN now: the state before a write, for
    /// [`record_written`](Self::record_written).
    pub(super) fn not_closed_now(&self, id: &str) -> bool {
        not_closed(self.items.get(id).and_then(Item::current))
    }
}
