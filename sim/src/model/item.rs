//! One item of the table: its history, which lagging reads look back into, and the
//! capacity it consumed this second.

use std::collections::VecDeque;
use std::sync::Arc;

use breaker_runtime::store::{CircuitRecord, EpochTally, FleetTally};

use super::IndexItem;

/// One item: its history (for lagging reads) and this second's consumed capacity.
#[derive(Debug, Default)]
pub(super) struct Item {
    /// `(virtual ms, record)` from oldest to newest; the last entry is the current item. An
    /// empty history is an absent item. Entries older than the longest lag are dropped.
    pub(super) history: VecDeque<(u64, Option<CircuitRecord>)>,
    /// The virtual second `read_half_units` and `write_units` were consumed in.
    pub(super) second: u64,
    pub(super) read_half_units: u32,
    pub(super) write_units: u32,
    /// A fleet window's counters, for a report item.
    pub(super) tally: FleetTally,
    /// A suspicion's counters, for its report item.
    pub(super) epoch: EpochTally,
    /// A key index item's history, as `history` (an index item holds no record).
    pub(super) index: VecDeque<(u64, Option<Arc<IndexItem>>)>,
}

impl Item {
    pub(super) fn current(&self) -> Option<&CircuitRecord> {
        self.history.back().and_then(|(_, record)| record.as_ref())
    }

    /// The record as it was at `at_ms`.
    pub(super) fn as_of(&self, at_ms: u64) -> Option<&CircuitRecord> {
        self.history
            .iter()
            .rev()
            .find(|(time, _)| *time <= at_ms)
            .and_then(|(_, record)| record.as_ref())
    }

    pub(super) fn write(&mut self, now_ms: u64, record: CircuitRecord, max_lag_ms: u64) {
        self.history.push_back((now_ms, Some(record)));
        let horizon = now_ms.saturating_sub(max_lag_ms);
        while self.history.len() >= 2 && self.history[1].0 <= horizon {
            self.history.pop_front();
        }
    }

    /// Rolls the capacity counters over to `now_ms`'s second.
    pub(super) fn roll(&mut self, now_ms: u64) {
        let second = now_ms / 1000;
        if second != self.second {
            self.second = second;
            self.read_half_units = 0;
            self.write_units = 0;
        }
    }
}
