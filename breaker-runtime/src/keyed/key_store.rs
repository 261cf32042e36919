//! `KeyStore`: the store one key's circuit sees. Its circuit runs the whole protocol
//! unchanged on what it takes for its own record; this store maps that record to the key's
//! item (`{name}#key={key}`), answers its reads from the keyed circuit's index where it can,
//! and keeps the index naming every key whose item must be read:
//!
//! - a read of a key the index does not name is answered "no item" without I/O; one it
//!   names reads the item (and removes an entry whose key reads closed);
//! - a trip first names the key in the index, within the cap; a suspicion names it apart,
//!   taking no slot of the cap (within a bound of its own): refused, the write is not sent
//!   and the circuit hears it lost to a closed record, so the key keeps running;
//! - a close that won removes the key's entry.
//!
//! A consistent read (an election's) always reads the item: elections only happen on keys
//! that are not closed.

use std::sync::Arc;

use super::index::{IndexCopy, Naming};
use crate::protocol::{
    CircuitRecord, EpochTally, FailureReport, FleetTally, RecordWrite, SuspectReport, WriteOutcome,
};
use crate::store::{StateStore, StoreError, StoreFuture, key_item_id};

/// The store of one key's circuit.
pub(crate) struct KeyStore {
    index: Arc<IndexCopy>,
    /// The key as encoded in ids and index entries.
    encoded: String,
    /// The key's item id.
    item: String,
}

impl std::fmt::Debug for KeyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyStore")
            .field("item", &self.item)
            .field("store", self.index.store())
            .finish()
    }
}

impl KeyStore {
    pub(crate) fn new(index: Arc<IndexCopy>, key: &str) -> Self {
        let item = key_item_id(index.circuit(), key);
        let encoded = item[index.circuit().len() + "#key=".len()..].to_owned();
        Self {
            index,
            encoded,
            item,
        }
    }

    /// The key as its index entry names it.
    pub(crate) fn encoded(&self) -> &str {
        &self.encoded
    }

    /// The key's item id.
    pub(crate) fn item(&self) -> &str {
        &self.item
    }

    fn store(&self) -> &dyn StateStore {
        &**self.index.store()
    }

    /// Names the key in the index before its trip or suspicion: `false` if the cap refused.
    /// A naming that aged past what the trip may be sent within (the environment froze
    /// between the two writes) is made again, once; then the trip is a store error.
    async fn named(&self) -> Result<bool, StoreError> {
        for _ in 0..2 {
            match self.index.name(&self.encoded).await? {
                Naming::Refused(_) => return Ok(false),
                Naming::Named(at) if self.index.still_named(at) => return Ok(true),
                Naming::Named(_) => {}
            }
        }
        Err(StoreError::new(format!(
            "{}: the key's naming in the index aged past the grace before its trip was sent",
            self.item
        )))
    }

    /// Names the key in the index before `write` if it makes the key's item one every
    /// environment must read: a trip takes a slot of the cap, a suspicion is named apart.
    /// `false`: the index refused, and the write must not be sent.
    async fn named_for(&self, write: &RecordWrite) -> Result<bool, StoreError> {
        match write {
            RecordWrite::Trip { .. } => self.named().await,
            RecordWrite::Suspect { .. } => self.index.suspect(&self.encoded).await,
            _ => Ok(true),
        }
    }
}

impl StateStore for KeyStore {
    fn read<'a>(&'a self, _circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
        Box::pin(async move {
            if !self.index.kept() {
                return self.store().read(&self.item).await;
            }
            let (entry, suspected) = self.index.naming(&self.encoded).await?;
            if entry.is_none() && !suspected {
                return Ok(None);
            }
            let sent = self.index.now();
            let record = self.store().read(&self.item).await?;
            if let Some(token) = entry {
                self.index
                    .read_through(&self.encoded, token, record.as_ref(), sent)
                    .await;
            }
            Ok(record)
        })
    }

    fn read_consistent<'a>(&'a self, _circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
        self.store().read_consistent(&self.item)
    }

    fn apply<'a>(
        &'a self,
        _circuit: &'a str,
        transition: &'a RecordWrite,
    ) -> StoreFuture<'a, WriteOutcome> {
        Box::pin(async move {
            if !self.named_for(transition).await? {
                // As if lost to a closed record: the circuit adopts it and keeps running.
                return Ok(WriteOutcome::Lost(None));
            }
            let sent = self.index.now();
            let outcome = self.store().apply(&self.item, transition).await?;
            if matches!(transition, RecordWrite::Close { .. }) && outcome == WriteOutcome::Won {
                self.index.closed(&self.encoded, sent).await;
            }
            Ok(outcome)
        })
    }

    fn keeps_fleet_counters(&self) -> bool {
        self.store().keeps_fleet_counters()
    }

    fn report<'a>(
        &'a self,
        _circuit: &'a str,
        report: &'a FailureReport,
    ) -> StoreFuture<'a, Option<FleetTally>> {
        self.store().report(&self.item, report)
    }

    fn report_suspected<'a>(
        &'a self,
        _circuit: &'a str,
        report: &'a SuspectReport,
    ) -> StoreFuture<'a, Option<EpochTally>> {
        self.store().report_suspected(&self.item, report)
    }
}

#[cfg(test)]
mod tests;
