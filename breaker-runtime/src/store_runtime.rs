//! Runs store operations on a small runtime of breaker's own, with the store timeout.
//!
//! Why a runtime of its own: the protected call may be sync (no runtime, or inside a
//! current-thread runtime that must not be blocked on its own I/O), and SDK connections
//! pooled in one test's runtime break when that runtime ends. One long-lived thread
//! serves every circuit of the process; it only wakes on cache misses and transitions.

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use tokio::runtime::{Builder, Runtime};

use crate::store::{StoreError, StoreErrorKind};

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

/// A timer that fires after `after`, driven by the store runtime's timer (so it works
/// whatever runtime, if any, polls it); `None` if the store runtime cannot start.
pub(crate) fn sleep(after: Duration) -> Option<std::pin::Pin<Box<tokio::time::Sleep>>> {
    let runtime = runtime().ok()?;
    let _entered = runtime.enter();
    Some(Box::pin(tokio::time::sleep(after)))
}

/// Runs `operation` (a store call) on the store runtime; one that takes longer than
/// `timeout` is an error. Does nothing until awaited.
pub(crate) async fn run<T: Send + 'static>(
    timeout: Duration,
    operation: impl Future<Output = Result<T, StoreError>> + Send + 'static,
) -> Result<T, StoreError> {
    let task = runtime()?.spawn(async move {
        match tokio::time::timeout(timeout, operation).await {
            Ok(reply) => reply,
            Err(_) => Err(StoreError::with_kind(
                StoreErrorKind::Timeout,
                format!("store call timed out after {timeout:?}"),
            )),
        }
    });
    match task.await {
        Ok(reply) => reply,
        Err(join) => Err(StoreError::new(format!("store call panicked: {join}"))),
    }
}
