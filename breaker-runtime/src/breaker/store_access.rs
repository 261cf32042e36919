//! Store calls of one circuit: on the store runtime, with the store timeout, and left
//! alone for `store_error_backoff` after an error so a broken store is not hit by every call.

use std::future::Future;
use std::sync::Arc;

use super::circuit::Circuit;
use crate::config::millis;
use crate::store::{CircuitRecord, StoreError, Transition, WriteOutcome};
use crate::store_runtime;

impl Circuit {
    /// Reads the shared record.
    pub(super) async fn read_store(&self) -> Result<Option<CircuitRecord>, StoreError> {
        let read = store_runtime::read(
            Arc::clone(&self.store),
            Arc::clone(&self.name),
            self.config.store_timeout,
        );
        self.unless_backing_off(read).await
    }

    /// Writes `transition` to the shared record.
    pub(super) async fn write_store(
        &self,
        transition: Transition,
    ) -> Result<WriteOutcome, StoreError> {
        let write = store_runtime::apply(
            Arc::clone(&self.store),
            Arc::clone(&self.name),
            transition,
            self.config.store_timeout,
        );
        self.unless_backing_off(write).await
    }

    /// Runs `operation` unless the store is backing off after an error; an error starts
    /// the back-off. `operation` does nothing until awaited, so a skipped one costs nothing.
    async fn unless_backing_off<T>(
        &self,
        operation: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        if self.now() < self.lock().store_retry_at {
            return Err(StoreError::new("store backing off after an error"));
        }
        let reply = operation.await;
        if let Err(error) = &reply {
            tracing::warn!(circuit = %self.name, %error, "circuit breaker store failed; failing open");
            let mut cache = self.lock();
            let retry_at = self
                .now()
                .saturating_add(millis(self.config.store_error_backoff));
            cache.store_retry_at = retry_at;
            cache.fresh_until = cache.fresh_until.max(retry_at);
            self.publish(&cache);
        }
        reply
    }
}
