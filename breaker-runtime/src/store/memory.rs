//! `InMemoryStore`: the protocol evaluated in the process. The embedded default, and the
//! reference every other store must match: it applies each [`RecordWrite`] exactly as the
//! transition describes itself.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::{KeyIndex, KeyIndexOutcome, KeyIndexWrite, StateStore, StoreFuture};
use crate::protocol::{
    CircuitRecord, EpochTally, FailureReport, FleetTally, RecordWrite, SuspectReport, WriteOutcome,
};

/// Keeps circuit records in this process: each Lambda environment has its own circuits.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use breaker_runtime::store::InMemoryStore;
/// use breaker_runtime::store::implement::{StateStore, RecordWrite, WriteOutcome};
/// let store = InMemoryStore::new();
/// let trip = RecordWrite::Trip { failure_count: 5, opened_at: 100, expiration: 3730, opened_by: None, open_until: None };
/// assert_eq!(store.apply("ce", &trip).await.unwrap(), WriteOutcome::Won);
/// // A second trip loses and returns the record that is there.
/// let WriteOutcome::Lost(Some(current)) = store.apply("ce", &trip).await.unwrap() else { panic!() };
/// assert_eq!(current.opened_at, Some(100));
/// # }
/// ```
#[derive(Debug, Default)]
pub struct InMemoryStore {
    records: Mutex<HashMap<String, CircuitRecord>>,
    /// The fleet's counters; `None`: none kept.
    fleet: Option<FleetCounters>,
    /// The keyed circuits' indexes, by circuit.
    key_indexes: Mutex<HashMap<String, KeyIndex>>,
}

/// Tallies by circuit and the window start or suspicion epoch they count for.
type Counters<T> = Mutex<HashMap<(String, u64), T>>;

/// The counters a store standing for a fleet keeps.
#[derive(Debug, Default)]
struct FleetCounters {
    /// The fleet windows' counters, by circuit and window start.
    windows: Counters<FleetTally>,
    /// The suspicions' counters, by circuit and epoch.
    epochs: Counters<EpochTally>,
}

/// Adds `report` to the tally of `circuit` at `at` with `plus`; the tally after it.
fn add<T: Copy + Default, R>(
    counters: &Counters<T>,
    circuit: &str,
    at: u64,
    report: &R,
    plus: fn(T, &R) -> T,
) -> T {
    let mut counters = counters.lock().unwrap_or_else(PoisonError::into_inner);
    let tally = counters.entry((circuit.to_owned(), at)).or_default();
    *tally = plus(*tally, report);
    *tally
}

impl InMemoryStore {
    /// An empty store. It keeps no fleet counters: one environment's store has no fleet,
    /// and its circuits trip on their own counts exactly as without reports.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store that also keeps the fleet windows' counters, for several circuits in
    /// one process standing for a fleet (simulations, tests of the fleet-wide policy).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use breaker_runtime::store::InMemoryStore;
    /// use breaker_runtime::store::implement::{FailureReport, StateStore};
    /// let store = InMemoryStore::with_fleet_counters();
    /// let report = FailureReport { window_start: 100, window_secs: 10, failures: 1, calls: 1, new_reporter: 1, expiration: 3710 };
    /// store.report("ce", &report).await.unwrap();
    /// let tally = store.report("ce", &report).await.unwrap().unwrap();
    /// assert_eq!((tally.failures, tally.reporters), (2, 2));
    /// assert_eq!(InMemoryStore::new().report("ce", &report).await.unwrap(), None);
    /// # }
    /// ```
    pub fn with_fleet_counters() -> Self {
        Self {
            fleet: Some(FleetCounters::default()),
            ..Self::default()
        }
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
        transition: &'a RecordWrite,
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

    fn keeps_fleet_counters(&self) -> bool {
        self.fleet.is_some()
    }

    fn report<'a>(
        &'a self,
        circuit: &'a str,
        report: &'a FailureReport,
    ) -> StoreFuture<'a, Option<FleetTally>> {
        self.counted(|fleet| {
            add(
                &fleet.windows,
                circuit,
                report.window_start,
                report,
                FleetTally::plus,
            )
        })
    }

    fn keeps_key_index(&self) -> bool {
        true
    }

    fn read_key_index<'a>(
        &'a self,
        circuit: &'a str,
        _consistent: bool,
    ) -> StoreFuture<'a, Option<KeyIndex>> {
        let indexes = self
            .key_indexes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Box::pin(std::future::ready(Ok(indexes.get(circuit).cloned())))
    }

    fn apply_key_index<'a>(
        &'a self,
        circuit: &'a str,
        write: &'a KeyIndexWrite,
    ) -> StoreFuture<'a, KeyIndexOutcome> {
        let mut indexes = self
            .key_indexes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut index = indexes.remove(circuit);
        let outcome = write.apply(&mut index);
        if let Some(index) = index {
            indexes.insert(circuit.to_owned(), index);
        }
        Box::pin(std::future::ready(Ok(outcome)))
    }

    fn report_suspected<'a>(
        &'a self,
        circuit: &'a str,
        report: &'a SuspectReport,
    ) -> StoreFuture<'a, Option<EpochTally>> {
        self.counted(|fleet| {
            add(
                &fleet.epochs,
                circuit,
                report.epoch,
                report,
                EpochTally::plus,
            )
        })
    }
}

impl InMemoryStore {
    /// What `count` answers on this store's fleet counters; `None` if it keeps none.
    fn counted<'a, T: Send + 'a>(
        &self,
        count: impl FnOnce(&FleetCounters) -> T,
    ) -> StoreFuture<'a, Option<T>> {
        Box::pin(std::future::ready(Ok(self.fleet.as_ref().map(count))))
    }
}
