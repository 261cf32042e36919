//! `WouldBe`: the record a circuit in shadow would have written, and its `on_shadow`
//! hooks. The shadow seam ([`super::commit`]) drives it through the same state machine as
//! the shared record; nothing of it reaches the store.

use std::sync::{Mutex, MutexGuard, PoisonError};

use super::hooks::Hooks;
use crate::events::ShadowEvent;
use crate::protocol::CircuitState;
use crate::protocol::machine::{self, Admission, Thresholds};
use crate::protocol::{CircuitRecord, RecordWrite};

/// The would-be record of one circuit; closed until a would-be trip.
#[derive(Default)]
pub(super) struct WouldBe {
    record: Mutex<CircuitRecord>,
    hooks: Hooks<ShadowEvent>,
}

impl WouldBe {
    fn lock(&self) -> MutexGuard<'_, CircuitRecord> {
        self.record.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The would-be record now.
    pub(super) fn record(&self) -> CircuitRecord {
        self.lock().clone()
    }

    /// Whether the would-be record is closed: the closed path may run its calls.
    pub(super) fn closed(&self) -> bool {
        self.lock().state == CircuitState::Closed
    }

    /// What the would-be record says of a call at `now`, and the record it said it of.
    pub(super) fn admission(
        &self,
        me: &str,
        now: u64,
        thresholds: &Thresholds,
        probe_in_flight: bool,
    ) -> (Admission, CircuitRecord) {
        let record = self.record();
        let admission = machine::would_admit(&record, me, now, thresholds, probe_in_flight);
        (admission, record)
    }

    /// Applies `transition` to the would-be record; returns the new record.
    pub(super) fn apply(&self, transition: &RecordWrite) -> CircuitRecord {
        let mut record = self.lock();
        *record = transition.applied_to(Some(&record));
        record.clone()
    }

    /// The `on_shadow` hooks.
    pub(super) fn hooks(&self) -> &Hooks<ShadowEvent> {
        &self.hooks
    }
}
