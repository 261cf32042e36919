//! Test doubles of a store: a wrapper that counts every operation and, on command, fails
//! every call or never answers; its fleet reports, counted, go to a store of their own.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use breaker_runtime::store::{
    CircuitRecord, EpochTally, FailureReport, FleetTally, InMemoryStore, KeyIndex, KeyIndexOutcome,
    KeyIndexWrite, RecordWrite, StateStore, StoreError, StoreFuture, SuspectReport, WriteOutcome,
};

/// What a [`ScriptedStore`] does with each call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Delegate to the wrapped store.
    Healthy,
    /// Answer every call with an error.
    Failing,
    /// Never answer.
    Hanging,
    /// Answer reads; refuse every write as throttled (the store is reachable).
    ThrottlingWrites,
    /// Answer reads and whole-item writes; refuse every in-place update, as for an IAM role
    /// without `dynamodb:UpdateItem`: the writes `DynamoDbStore` sends as an `UpdateItem`
    /// (an election, a hand-over, an operator's override and release) fail.
    DenyingUpdates,
    /// Answer reads; make every write in the wrapped store, then answer it with an error,
    /// as when a write landed and its answer (and its retries') was lost.
    LosingWriteAnswers,
}

/// A store (in-memory unless told otherwise) that counts reads and writes and can be told
/// to fail or hang.
#[derive(Debug)]
pub struct ScriptedStore {
    inner: Arc<dyn StateStore>,
    behaviour: std::sync::Mutex<Behaviour>,
    reads: AtomicUsize,
    consistent_reads: AtomicUsize,
    batched_reads: AtomicUsize,
    writes: AtomicUsize,
    index_reads: AtomicUsize,
    index_writes: AtomicUsize,
    reports_to: Option<Arc<dyn StateStore>>,
    reports: AtomicUsize,
}

impl ScriptedStore {
    /// An in-memory store that behaves as told.
    pub fn new(behaviour: Behaviour) -> Self {
        Self::wrapping(Arc::new(InMemoryStore::new()), behaviour)
    }

    /// `inner`, counted, behaving as told (while healthy, `inner` answers).
    pub fn wrapping(inner: Arc<dyn StateStore>, behaviour: Behaviour) -> Self {
        Self {
            inner,
            behaviour: std::sync::Mutex::new(behaviour),
            reads: AtomicUsize::new(0),
            consistent_reads: AtomicUsize::new(0),
            batched_reads: AtomicUsize::new(0),
            writes: AtomicUsize::new(0),
            index_reads: AtomicUsize::new(0),
            index_writes: AtomicUsize::new(0),
            reports_to: None,
            reports: AtomicUsize::new(0),
        }
    }

    /// Sends the fleet's reports to `table` (often the wrapped store itself), whatever the
    /// behaviour and outside the other counts, which are the circuit's own traffic. Without
    /// it a report answers `None`, as from a store that keeps no fleet counters.
    pub fn reporting_to(mut self, table: Arc<dyn StateStore>) -> Self {
        self.reports_to = Some(table);
        self
    }

    /// Changes the behaviour from now on.
    pub fn set(&self, behaviour: Behaviour) {
        *self
            .behaviour
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = behaviour;
    }

    /// Reads so far (answered or not).
    pub fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }

    /// Strongly consistent reads so far (answered or not); [`reads`](Self::reads) counts
    /// them too.
    pub fn consistent_reads(&self) -> usize {
        self.consistent_reads.load(Ordering::SeqCst)
    }

    /// Batched reads ([`StateStore::read_many`]) so far (answered or not); not counted in
    /// [`reads`](Self::reads).
    pub fn batched_reads(&self) -> usize {
        self.batched_reads.load(Ordering::SeqCst)
    }

    /// Writes so far (answered or not).
    pub fn writes(&self) -> usize {
        self.writes.load(Ordering::SeqCst)
    }

    /// Reads of a keyed circuit's index so far (answered or not); not counted in
    /// [`reads`](Self::reads), which are the circuits' items.
    pub fn index_reads(&self) -> usize {
        self.index_reads.load(Ordering::SeqCst)
    }

    /// Writes to a keyed circuit's index so far (answered or not); not counted in
    /// [`writes`](Self::writes).
    pub fn index_writes(&self) -> usize {
        self.index_writes.load(Ordering::SeqCst)
    }

    /// Fleet reports so far, of either kind.
    pub fn reports(&self) -> usize {
        self.reports.load(Ordering::SeqCst)
    }

    /// Every operation so far but the fleet reports.
    pub fn calls(&self) -> usize {
        self.reads()
            + self.batched_reads()
            + self.writes()
            + self.index_reads()
            + self.index_writes()
    }

    /// Counts from zero again.
    pub fn reset_counts(&self) {
        self.reads.store(0, Ordering::SeqCst);
        self.consistent_reads.store(0, Ordering::SeqCst);
        self.batched_reads.store(0, Ordering::SeqCst);
        self.writes.store(0, Ordering::SeqCst);
        self.index_reads.store(0, Ordering::SeqCst);
        self.index_writes.store(0, Ordering::SeqCst);
        self.reports.store(0, Ordering::SeqCst);
    }

    /// Counts a report, then has the reports' table answer it (`None` without one).
    fn forward_report<'a, T: Send + 'a>(
        &'a self,
        send: impl FnOnce(&'a dyn StateStore) -> StoreFuture<'a, Option<T>>,
    ) -> StoreFuture<'a, Option<T>> {
        self.reports.fetch_add(1, Ordering::SeqCst);
        match &self.reports_to {
            Some(table) => send(table.as_ref()),
            None => Box::pin(std::future::ready(Ok(None))),
        }
    }

    /// Counts `operation`, then answers it as the behaviour says. `delegate` is called only
    /// when the wrapped store is to answer: a store may do its work when called, before its
    /// future is polled.
    fn behave<'a, T: Send + 'a>(
        &'a self,
        operation: Operation,
        delegate: impl FnOnce() -> StoreFuture<'a, T>,
    ) -> StoreFuture<'a, T> {
        let counters: &[&AtomicUsize] = match operation {
            Operation::Read => &[&self.reads],
            Operation::ConsistentRead => &[&self.reads, &self.consistent_reads],
            Operation::BatchedRead => &[&self.batched_reads],
            Operation::Write | Operation::Update => &[&self.writes],
            Operation::IndexRead => &[&self.index_reads],
            Operation::IndexWrite => &[&self.index_writes],
        };
        for counter in counters {
            counter.fetch_add(1, Ordering::SeqCst);
        }
        let behaviour = *self
            .behaviour
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match behaviour {
            Behaviour::Healthy => delegate(),
            Behaviour::ThrottlingWrites if !operation.writes() => delegate(),
            Behaviour::ThrottlingWrites => Box::pin(std::future::ready(Err(
                StoreError::throttled("scripted ProvisionedThroughputExceededException"),
            ))),
            Behaviour::DenyingUpdates if !operation.updates() => delegate(),
            Behaviour::DenyingUpdates => Box::pin(std::future::ready(Err(StoreError::new(
                "scripted AccessDeniedException: not authorized to perform dynamodb:UpdateItem",
            )))),
            Behaviour::LosingWriteAnswers if !operation.writes() => delegate(),
            Behaviour::LosingWriteAnswers => {
                let landing = delegate();
                Box::pin(async move {
                    // What the store answered is lost; only that it landed (or not) stays.
                    let _ = landing.await;
                    Err(StoreError::new("scripted: the write's answer was lost"))
                })
            }
            Behaviour::Failing => {
                Box::pin(std::future::ready(Err(StoreError::new("scripted failure"))))
            }
            Behaviour::Hanging => Box::pin(std::future::pending()),
        }
    }
}

/// What a call to a [`ScriptedStore`] asks, for its counts and its behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    Read,
    ConsistentRead,
    BatchedRead,
    /// A whole-item write.
    Write,
    /// A write `DynamoDbStore` sends as an `UpdateItem`.
    Update,
    /// A read of a keyed circuit's index.
    IndexRead,
    /// A write to a keyed circuit's index (an `UpdateItem`).
    IndexWrite,
}

impl Operation {
    fn writes(self) -> bool {
        matches!(self, Self::Write | Self::Update | Self::IndexWrite)
    }

    fn updates(self) -> bool {
        matches!(self, Self::Update | Self::IndexWrite)
    }
}

impl StateStore for ScriptedStore {
    fn read<'a>(&'a self, circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
        self.behave(Operation::Read, || self.inner.read(circuit))
    }
    fn read_consistent<'a>(&'a self, circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
        self.behave(Operation::ConsistentRead, || {
            self.inner.read_consistent(circuit)
        })
    }
    fn read_many<'a>(
        &'a self,
        circuits: &'a [&'a str],
    ) -> StoreFuture<'a, Vec<Option<CircuitRecord>>> {
        self.behave(Operation::BatchedRead, || self.inner.read_many(circuits))
    }
    fn apply<'a>(
        &'a self,
        circuit: &'a str,
        transition: &'a RecordWrite,
    ) -> StoreFuture<'a, WriteOutcome> {
        let operation = match transition {
            RecordWrite::Elect { .. }
            | RecordWrite::HandOver { .. }
            | RecordWrite::Override { .. }
            | RecordWrite::Release { .. } => Operation::Update,
            _ => Operation::Write,
        };
        self.behave(operation, || self.inner.apply(circuit, transition))
    }
    fn report<'a>(
        &'a self,
        circuit: &'a str,
        report: &'a FailureReport,
    ) -> StoreFuture<'a, Option<FleetTally>> {
        self.forward_report(|table| table.report(circuit, report))
    }
    fn report_suspected<'a>(
        &'a self,
        circuit: &'a str,
        report: &'a SuspectReport,
    ) -> StoreFuture<'a, Option<EpochTally>> {
        self.forward_report(|table| table.report_suspected(circuit, report))
    }
    fn keeps_key_index(&self) -> bool {
        self.inner.keeps_key_index()
    }
    fn read_key_index<'a>(
        &'a self,
        circuit: &'a str,
        consistent: bool,
    ) -> StoreFuture<'a, Option<KeyIndex>> {
        self.behave(Operation::IndexRead, || {
            self.inner.read_key_index(circuit, consistent)
        })
    }
    fn apply_key_index<'a>(
        &'a self,
        circuit: &'a str,
        write: &'a KeyIndexWrite,
    ) -> StoreFuture<'a, KeyIndexOutcome> {
        self.behave(Operation::IndexWrite, || {
            self.inner.apply_key_index(circuit, write)
        })
    }
}
