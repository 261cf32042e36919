//! `InMemoryStore`: the protocol evaluated in the process. The embedded default, and the
//! reference every other store must match: it applies each [`Transition`] exactly as the
//! transition describes itself.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::{StateStore, StoreFuture};
use crate::protocol::{CircuitRecord, Transition, WriteOutcome};

/// Keeps circuit records in this process: each Lambda environment has its own circuits.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use breaker_runtime::store::{InMemoryStore, StateStore, Transition, WriteOutcome};
/// let store = InMemoryStore::new();
/// let trip = Transition::Trip { failure_count: 5, opened_at: 100, expiration: 3730 };
/// assert_eq!(store.apply("ce", &trip).await.unwrap(), WriteOutcome::Won);
/// // A second trip loses and returns the record that is there.
/// let WriteOutcome::Lost(Some(current)) = store.apply("ce", &trip).await.unwrap() else { panic!() };
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
}

impl StateStore for InMemoryStore {
    fn read<'a>(&'a self, circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
        let records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let record = records.get(circuit).cloned();
        Box::pin(std::future::ready(Ok(record)))
    }

    fn apply<'a>(
        &'a self,
        circuit: &'a str,
        transition: &'a Transition,
    ) -> StoreFuture<'a, WriteOutcome> {
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let current = records.get(circuit);
        let outcome = if transition.allowed(current) {
            let next = transition.applied_to(current);
            records.insert(circuit.to_owned(), next);
            WriteOutcome::Won
        } else {
            WriteOutcome::Lost(current.cloned())
        };
        Box::pin(std::future::ready(Ok(outcome)))
    }
}
