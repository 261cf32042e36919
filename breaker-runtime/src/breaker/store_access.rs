//! Store calls of one circuit: on the store runtime, with the store timeout, and left
//! alone for about `store_error_backoff` after an error (spread per environment) so a
//! broken or throttled store is not hit by every call, nor by a whole fleet at once.

use std::future::Future;
use std::sync::Arc;

use super::circuit::Circuit;
use crate::config::millis;
use crate::environment;
use crate::protocol::{CircuitRecord, Transition, WriteOutcome};
use crate::store::StoreError;
use crate::store_runtime;

/// Why a store call gave no answer.
#[derive(Debug)]
pub(super) enum StoreCallError {
    /// Not sent: the store is left alone after an error.
    BackingOff,
    /// Sent, and the store failed it.
    Failed(StoreError),
}

impl StoreCallError {
    /// The store could not be reached (as opposed to: it answered that it is throttling,
    /// or the call was not sent).
    pub(super) fn unreachable(&self) -> bool {
        matches!(self, Self::Failed(error) if !error.is_throttled())
    }
}

impl Circuit {
    /// Reads the shared record, strongly consistently if `consistent`.
    pub(super) async fn read_store(
        &self,
        consistent: bool,
    ) -> Result<Option<CircuitRecord>, StoreCallError> {
        let read = store_runtime::read(
            Arc::clone(&self.store),
            Arc::clone(&self.name),
            consistent,
            self.config.store_timeout,
        );
        self.unless_backing_off(read).await
    }

    /// Writes `transition` to the shared record.
    pub(super) async fn write_store(
        &self,
        transition: Transition,
    ) -> Result<WriteOutcome, StoreCallError> {
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
    ) -> Result<T, StoreCallError> {
        if self.now() < self.lock().store_retry_at {
            return Err(StoreCallError::BackingOff);
        }
        let reply = operation.await;
        if let Err(error) = &reply {
            tracing::warn!(circuit = %self.name, %error, "circuit breaker store failed; failing open");
            let mut cache = self.lock();
            let now = self.now();
            let backoff = millis(self.config.store_error_backoff);
            let retry_at = if error.is_throttled() {
                // Spread over [backoff / 2, backoff * 3 / 2): a fleet throttled by one
                // burst must not come back in one burst.
                let spread = environment::spread(backoff, &self.environment_id, now);
                now.saturating_add(backoff / 2).saturating_add(spread)
            } else {
                now.saturating_add(backoff)
            };
            cache.store_retry_at = retry_at;
            cache.fresh_until = cache.fresh_until.max(retry_at);
            self.publish(&cache);
        }
        reply.map_err(StoreCallError::Failed)
    }
}
