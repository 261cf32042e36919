//! Store wrappers for tests: count operations, fail every call, or hang forever.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};

use breaker_runtime::store::{
    CircuitRecord, InMemoryStore, StateStore, StoreError, StoreFuture, Transition, WriteOutcome,
};

/// What a [`ScriptedStore`] does with each call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Delegate to an in-memory store.
    Healthy,
    /// Answer every call with an error.
    Failing,
    /// Never answer.
    Hanging,
}

/// An in-memory store that counts reads and writes and can be told to fail or hang.
#[derive(Debug)]
pub struct ScriptedStore {
    inner: InMemoryStore,
    behaviour: std::sync::Mutex<Behaviour>,
    reads: AtomicUsize,
    writes: AtomicUsize,
}

impl ScriptedStore {
    /// A store that behaves as told.
    pub fn new(behaviour: Behaviour) -> Self {
        Self {
            inner: InMemoryStore::new(),
            behaviour: std::sync::Mutex::new(behaviour),
            reads: AtomicUsize::new(0),
            writes: AtomicUsize::new(0),
        }
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

    /// Writes so far (answered or not).
    pub fn writes(&self) -> usize {
        self.writes.load(Ordering::SeqCst)
    }

    /// Every operation so far.
    pub fn calls(&self) -> usize {
        self.reads() + self.writes()
    }

    fn behave<'a, T: Send + 'a>(
        &'a self,
        delegate: impl Future<Output = Result<T, StoreError>> + Send + 'a,
    ) -> StoreFuture<'a, T> {
        let behaviour = *self
            .behaviour
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match behaviour {
            Behaviour::Healthy => Box::pin(delegate),
            Behaviour::Failing => {
                Box::pin(std::future::ready(Err(StoreError::new("scripted failure"))))
            }
            Behaviour::Hanging => Box::pin(std::future::pending()),
        }
    }
}

impl StateStore for ScriptedStore {
    fn read<'a>(&'a self, circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.behave(self.inner.read(circuit))
    }
    fn apply<'a>(
        &'a self,
        circuit: &'a str,
        transition: &'a Transition,
    ) -> StoreFuture<'a, WriteOutcome> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.behave(self.inner.apply(circuit, transition))
    }
}
