//! Runs store operations on a small runtime of breaker's own, with the store timeout.
//!
//! Why a runtime of its own: the protected call may be sync (no runtime, or inside a
//! current-thread runtime that must not be blocked on its own I/O), and SDK connections
//! pooled in one test's runtime break when that runtime ends. One long-lived thread
//! serves every circuit of the process; it only wakes on cache misses and transitions.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::runtime::{Builder, Runtime};

use crate::store::{
    CircuitRecord, Close, ProbeElection, Reopen, StateStore, StoreError, Trip, WriteOutcome,
};

/// One protocol operation, owned so it can travel to the store runtime.
#[derive(Debug, Clone)]
pub(crate) enum StoreOp {
    Read,
    Trip(Trip),
    Elect(ProbeElection),
    Close(Close),
    Reopen(Reopen),
}

/// What a store operation answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StoreReply {
    Record(Option<CircuitRecord>),
    Write(WriteOutcome),
}

fn runtime() -> Result<&'static Runtime, StoreError> {
    static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("breaker-store")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| StoreError::new(format!("cannot start the store runtime: {e}")))
}

async fn execute(
    store: &dyn StateStore,
    circuit: &str,
    op: &StoreOp,
) -> Result<StoreReply, StoreError> {
    Ok(match op {
        StoreOp::Read => StoreReply::Record(store.read(circuit).await?),
        StoreOp::Trip(trip) => StoreReply::Write(store.trip(circuit, trip).await?),
        StoreOp::Elect(election) => StoreReply::Write(store.elect_probe(circuit, election).await?),
        StoreOp::Close(close) => StoreReply::Write(store.close_if_owner(circuit, close).await?),
        StoreOp::Reopen(reopen) => StoreReply::Write(store.reopen_if_owner(circuit, reopen).await?),
    })
}

/// Runs `op` on the store runtime; a store that takes longer than `timeout` is an error.
pub(crate) async fn run(
    store: Arc<dyn StateStore>,
    circuit: Arc<str>,
    op: StoreOp,
    timeout: Duration,
) -> Result<StoreReply, StoreError> {
    let task = runtime()?.spawn(async move {
        match tokio::time::timeout(timeout, execute(&*store, &circuit, &op)).await {
            Ok(reply) => reply,
            Err(_) => Err(StoreError::new(format!(
                "store call timed out after {timeout:?}"
            ))),
        }
    });
    match task.await {
        Ok(reply) => reply,
        Err(join) => Err(StoreError::new(format!("store call panicked: {join}"))),
    }
}
