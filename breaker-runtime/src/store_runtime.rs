//! Runs store operations on a small runtime of breaker's own, with the store timeout.
//!
//! Why a runtime of its own: the protected call may be sync (no runtime, or inside a
//! current-thread runtime that must not be blocked on its own I/O), and SDK connections
//! pooled in one test's runtime break when that runtime ends. One long-lived thread
//! serves every circuit of the process; it only wakes on cache misses and transitions.

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::runtime::{Builder, Runtime};

use crate::protocol::{
    CircuitRecord, EpochTally, FailureReport, FleetTally, RecordWrite, SuspectReport, WriteOutcome,
};
use crate::store::{StateStore, StoreError};

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

/// Reads `circuit`'s record on the store runtime, strongly consistently if `consistent`.
pub(crate) async fn read(
    store: Arc<dyn StateStore>,
    circuit: Arc<str>,
    consistent: bool,
    timeout: Duration,
) -> Result<Option<CircuitRecord>, StoreError> {
    on_store_runtime(timeout, async move {
        match consistent {
            true => store.read_consistent(&circuit).await,
            false => store.read(&circuit).await,
        }
    })
    .await
}

/// Reads the records of `circuits` on the store runtime, in one batched read where the
/// store can: the warm-up, which also leaves the store's connection open on this runtime.
pub(crate) async fn read_many(
    store: Arc<dyn StateStore>,
    circuits: Vec<Arc<str>>,
    timeout: Duration,
) -> Result<Vec<Option<CircuitRecord>>, StoreError> {
    on_store_runtime(timeout, async move {
        let names: Vec<&str> = circuits.iter().map(|circuit| &**circuit).collect();
        store.read_many(&names).await
    })
    .await
}

/// Applies `transition` to `circuit`'s record on the store runtime.
pub(crate) async fn apply(
    store: Arc<dyn StateStore>,
    circuit: Arc<str>,
    transition: RecordWrite,
    timeout: Duration,
) -> Result<WriteOutcome, StoreError> {
    on_store_runtime(
        timeout,
        async move { store.apply(&circuit, &transition).await },
    )
    .await
}

/// Adds `report` to `circuit`'s fleet counters on the store runtime.
pub(crate) async fn report(
    store: Arc<dyn StateStore>,
    circuit: Arc<str>,
    report: FailureReport,
    timeout: Duration,
) -> Result<Option<FleetTally>, StoreError> {
    on_store_runtime(
        timeout,
        async move { store.report(&circuit, &report).await },
    )
    .await
}

/// Adds `report` to the counters of `circuit`'s suspicion on the store runtime.
pub(crate) async fn report_suspected(
    store: Arc<dyn StateStore>,
    circuit: Arc<str>,
    report: SuspectReport,
    timeout: Duration,
) -> Result<Option<EpochTally>, StoreError> {
    on_store_runtime(timeout, async move {
        store.report_suspected(&circuit, &report).await
    })
    .await
}

/// A timer that fires after `after`, driven by the store runtime's timer (so it works
/// whatever runtime, if any, polls it); `None` if the store runtime cannot start.
pub(crate) fn sleep(after: Duration) -> Option<std::pin::Pin<Box<tokio::time::Sleep>>> {
    let runtime = runtime().ok()?;
    let _entered = runtime.enter();
    Some(Box::pin(tokio::time::sleep(after)))
}

/// Runs `operation` on the store runtime; one that takes longer than `timeout` is an error.
async fn on_store_runtime<T: Send + 'static>(
    timeout: Duration,
    operation: impl Future<Output = Result<T, StoreError>> + Send + 'static,
) -> Result<T, StoreError> {
    let task = runtime()?.spawn(async move {
        match tokio::time::timeout(timeout, operation).await {
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
