//! `InMemoryStore`: the protocol evaluated in the process. The embedded default, and the
//! reference every other store must match.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::conditions::{election_allowed, owned_by, trip_allowed};
use super::{
    CircuitRecord, Close, ProbeElection, Reopen, StateStore, StoreFuture, Trip, WriteOutcome,
};
use crate::CircuitState;

/// Keeps circuit records in this process: each Lambda environment has its own circuits.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use breaker_runtime::store::{InMemoryStore, StateStore, Trip, WriteOutcome};
/// let store = InMemoryStore::new();
/// let trip = Trip { failure_count: 5, opened_at: 100, expiration: 3730 };
/// assert_eq!(store.trip("ce", &trip).await.unwrap(), WriteOutcome::Won);
/// // A second trip loses and returns the record that is there.
/// let WriteOutcome::Lost(Some(current)) = store.trip("ce", &trip).await.unwrap() else { panic!() };
/// assert_eq!(current.opened_at, Some(100));
/// # }
/// ```
#[derive(Debug, Default)]
pub struct InMemoryStore {
    records: Mutex<HashMap<String, CircuitRecord>>,
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies `write` if `allowed` holds for the current record, atomically.
    fn conditional(
        &self,
        circuit: &str,
        allowed: impl FnOnce(Option<&CircuitRecord>) -> bool,
        write: impl FnOnce(Option<&CircuitRecord>) -> CircuitRecord,
    ) -> WriteOutcome {
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let current = records.get(circuit);
        if !allowed(current) {
            return WriteOutcome::Lost(current.cloned());
        }
        let next = write(current);
        records.insert(circuit.to_owned(), next);
        WriteOutcome::Won
    }
}

impl StateStore for InMemoryStore {
    fn read<'a>(&'a self, circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
        let records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let record = records.get(circuit).cloned();
        Box::pin(std::future::ready(Ok(record)))
    }

    fn trip<'a>(&'a self, circuit: &'a str, trip: &'a Trip) -> StoreFuture<'a, WriteOutcome> {
        let outcome = self.conditional(circuit, trip_allowed, |_| CircuitRecord {
            state: CircuitState::Open,
            failure_count: trip.failure_count,
            opened_at: Some(trip.opened_at),
            half_open_owner: None,
            probe_lease_expiry: None,
        });
        Box::pin(std::future::ready(Ok(outcome)))
    }

    fn elect_probe<'a>(
        &'a self,
        circuit: &'a str,
        election: &'a ProbeElection,
    ) -> StoreFuture<'a, WriteOutcome> {
        let outcome = self.conditional(
            circuit,
            |current| election_allowed(current, election),
            |current| {
                let current = current.cloned().unwrap_or_default();
                CircuitRecord {
                    state: CircuitState::HalfOpen,
                    half_open_owner: Some(election.owner.clone()),
                    probe_lease_expiry: Some(election.lease_expiry),
                    ..current
                }
            },
        );
        Box::pin(std::future::ready(Ok(outcome)))
    }

    fn close_if_owner<'a>(
        &'a self,
        circuit: &'a str,
        close: &'a Close,
    ) -> StoreFuture<'a, WriteOutcome> {
        let outcome = self.conditional(
            circuit,
            |current| owned_by(current, &close.owner),
            |_| CircuitRecord::closed(),
        );
        Box::pin(std::future::ready(Ok(outcome)))
    }

    fn reopen_if_owner<'a>(
        &'a self,
        circuit: &'a str,
        reopen: &'a Reopen,
    ) -> StoreFuture<'a, WriteOutcome> {
        let outcome = self.conditional(
            circuit,
            |current| owned_by(current, &reopen.owner),
            |_| CircuitRecord {
                state: CircuitState::Open,
                failure_count: reopen.failure_count,
                opened_at: Some(reopen.opened_at),
                half_open_owner: None,
                probe_lease_expiry: None,
            },
        );
        Box::pin(std::future::ready(Ok(outcome)))
    }
}
