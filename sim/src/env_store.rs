//! `EnvStore`: one simulated environment's view of the shared table.
//!
//! Every environment gets its own store adapter, as every Lambda environment has its own
//! DynamoDB client; they all answer from one [`ItemModel`] behind a mutex ([`SharedTable`]).
//! The breaker calls the adapter on its store runtime thread while the simulator waits for
//! the call, so requests reach the model one at a time, in the order the simulator runs
//! calls, at the virtual time the simulator set. Each request is logged (kind, outcome,
//! attempts, units, latency, environment, time) for the simulator to turn into metrics and
//! into the call's duration.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use breaker_runtime::store::{
    CircuitRecord, EpochTally, FailureReport, FleetTally, KeyIndex, KeyIndexOutcome, KeyIndexWrite,
    RecordWrite, StateStore, StoreFuture, SuspectReport, WriteOutcome,
};

use crate::model::{Consistency, ItemModel, RequestCost, RequestKind, RequestOutcome, Served};

/// One store request as the metrics see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreRequest {
    /// Virtual ms the request was made at (its call's start).
    pub time_ms: u64,
    /// The environment that made it.
    pub env: u32,
    /// What it carried.
    pub kind: RequestKind,
    /// How it ended.
    pub outcome: RequestOutcome,
    /// What it cost.
    pub cost: RequestCost,
    /// A trip's or reopen's opening: its `opened_at` (unix s) and the reopens it counts.
    pub opening: Option<(u64, u32)>,
}

/// The table every environment's adapter shares, with the virtual time requests are made
/// at and the log of requests not yet collected.
#[derive(Debug)]
pub struct SharedTable {
    model: Mutex<ItemModel>,
    now_ms: AtomicU64,
    log: Mutex<Vec<StoreRequest>>,
}

impl SharedTable {
    /// A table answering from `model`, at virtual time 0.
    pub fn new(model: ItemModel) -> Arc<Self> {
        Arc::new(Self {
            model: Mutex::new(model),
            now_ms: AtomicU64::new(0),
            log: Mutex::new(Vec::with_capacity(16)),
        })
    }

    /// Sets the virtual time of the requests that follow.
    pub fn set_now(&self, now_ms: u64) {
        self.now_ms.store(now_ms, Ordering::Release);
    }

    /// The virtual time requests are made at.
    pub fn now(&self) -> u64 {
        self.now_ms.load(Ordering::Acquire)
    }

    /// The model, locked.
    pub fn model(&self) -> MutexGuard<'_, ItemModel> {
        self.model.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves the logged requests into `into` (which is cleared first), keeping both
    /// buffers' allocations.
    pub fn drain_into(&self, into: &mut Vec<StoreRequest>) {
        into.clear();
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::swap(&mut *log, into);
    }

    /// Total latency of the requests logged since the last drain, ms.
    pub fn pending_latency_ms(&self) -> u64 {
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        log.iter().map(|r| r.cost.latency_ms).sum()
    }

    /// The request just logged carried this opening (a trip or a reopen).
    fn note_opening(&self, opening: Option<(u64, u32)>) {
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(last) = log.last_mut() {
            last.opening = opening;
        }
    }

    fn log<T>(&self, env: u32, time_ms: u64, kind: RequestKind, served: &Served<T>) {
        let request = StoreRequest {
            time_ms,
            env,
            kind,
            outcome: served.outcome,
            cost: served.cost,
            opening: None,
        };
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request);
    }
}

/// The store adapter of one environment: a [`StateStore`] over the [`SharedTable`].
///
/// ```
/// use breaker_runtime::store::{StateStore, RecordWrite, WriteOutcome};
/// use breaker_sim::env_store::{EnvStore, SharedTable};
/// use breaker_sim::model::{ItemModel, ModelConfig};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let table = SharedTable::new(ItemModel::new(ModelConfig::default(), 1));
/// let store = EnvStore::new(3, table.clone());
/// let trip = RecordWrite::Trip { failure_count: 5, opened_at: 100, expiration: 3730, opened_by: None, open_until: None };
/// assert_eq!(store.apply("ce", &trip).await.unwrap(), WriteOutcome::Won);
/// assert_eq!((store.reads(), store.writes()), (0, 1));
/// let mut log = Vec::new();
/// table.drain_into(&mut log);
/// assert_eq!(log[0].env, 3);
/// # }
/// ```
#[derive(Debug)]
pub struct EnvStore {
    env: u32,
    table: Arc<SharedTable>,
    reads: AtomicU64,
    writes: AtomicU64,
}

impl EnvStore {
    /// Environment `env`'s adapter to `table`.
    pub fn new(env: u32, table: Arc<SharedTable>) -> Self {
        Self {
            env,
            table,
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
        }
    }

    /// Read requests this environment made.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Write requests this environment made.
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    /// One GetItem, counted and logged, answered at once from the model.
    fn serve_read(
        &self,
        circuit: &str,
        consistency: Consistency,
    ) -> StoreFuture<'static, Option<CircuitRecord>> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let now = self.table.now();
        let served = self.table.model().read(circuit, now, consistency);
        self.table.log(self.env, now, RequestKind::Read, &served);
        Box::pin(std::future::ready(served.result))
    }
}

impl StateStore for EnvStore {
    fn read<'a>(&'a self, circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
        self.serve_read(circuit, Consistency::Eventual)
    }

    fn read_consistent<'a>(&'a self, circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
        self.serve_read(circuit, Consistency::Strong)
    }

    fn apply<'a>(
        &'a self,
        circuit: &'a str,
        transition: &'a RecordWrite,
    ) -> StoreFuture<'a, WriteOutcome> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        let now = self.table.now();
        let served = self.table.model().apply(circuit, transition, now);
        self.table
            .log(self.env, now, RequestKind::of(transition), &served);
        let opening = match transition {
            RecordWrite::Trip { opened_at, .. } => Some((*opened_at, 0)),
            RecordWrite::Reopen {
                opened_at,
                reopen_count,
                ..
            } => Some((*opened_at, *reopen_count)),
            _ => None,
        };
        if opening.is_some() {
            self.table.note_opening(opening);
        }
        Box::pin(std::future::ready(served.result))
    }

    fn report<'a>(
        &'a self,
        circuit: &'a str,
        report: &'a FailureReport,
    ) -> StoreFuture<'a, Option<FleetTally>> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        let now = self.table.now();
        let served = self.table.model().report(circuit, report, now);
        self.table.log(self.env, now, RequestKind::Report, &served);
        Box::pin(std::future::ready(served.result))
    }

    fn report_suspected<'a>(
        &'a self,
        circuit: &'a str,
        report: &'a SuspectReport,
    ) -> StoreFuture<'a, Option<EpochTally>> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        let now = self.table.now();
        let served = self.table.model().report_suspected(circuit, report, now);
        self.table.log(self.env, now, RequestKind::Report, &served);
        Box::pin(std::future::ready(served.result))
    }

    fn keeps_key_index(&self) -> bool {
        true
    }

    fn read_key_index<'a>(
        &'a self,
        circuit: &'a str,
        consistent: bool,
    ) -> StoreFuture<'a, Option<KeyIndex>> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let now = self.table.now();
        let consistency = match consistent {
            true => Consistency::Strong,
            false => Consistency::Eventual,
        };
        let served = self.table.model().read_index(circuit, now, consistency);
        self.table
            .log(self.env, now, RequestKind::IndexRead, &served);
        Box::pin(std::future::ready(served.result))
    }

    fn apply_key_index<'a>(
        &'a self,
        circuit: &'a str,
        write: &'a KeyIndexWrite,
    ) -> StoreFuture<'a, KeyIndexOutcome> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        let now = self.table.now();
        let served = self.table.model().apply_index(circuit, write, now);
        let kind = match write {
            KeyIndexWrite::Add { .. } => RequestKind::IndexAdd,
            KeyIndexWrite::Refresh { .. } => RequestKind::IndexRefresh,
            KeyIndexWrite::Remove { .. } => RequestKind::IndexRemove,
            _ => RequestKind::Other,
        };
        self.table.log(self.env, now, kind, &served);
        Box::pin(std::future::ready(served.result))
    }
}
