//! `StoreAccess`: the store calls of one circuit, on the store runtime and with the store
//! timeout, and the back-off after an error: about `store_error_backoff` (spread per
//! environment after throttling) so a broken or throttled store is not hit by every call,
//! nor by a whole fleet at once.

use std::future::Future;
use std::sync::Arc;

use crate::config::{CircuitBreakerConfig, millis};
use crate::environment;
use crate::protocol::{
    CircuitRecord, EpochTally, FailureReport, FleetTally, RecordWrite, SuspectReport, WriteOutcome,
};
use crate::store::{StateStore, StoreError};
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

/// The store of one circuit, and how it is called.
pub(super) struct StoreAccess {
    store: Arc<dyn StateStore>,
    name: Arc<str>,
    timeout: std::time::Duration,
    backoff_millis: u64,
}

impl StoreAccess {
    pub(super) fn new(
        store: Arc<dyn StateStore>,
        name: Arc<str>,
        config: &CircuitBreakerConfig,
    ) -> Self {
        Self {
            store,
            name,
            timeout: config.store_timeout,
            backoff_millis: millis(config.store_error_backoff),
        }
    }

    pub(super) fn store(&self) -> &Arc<dyn StateStore> {
        &self.store
    }

    pub(super) fn name(&self) -> &Arc<str> {
        &self.name
    }

    /// Reads the shared record, strongly consistently if `consistent`. Does nothing until
    /// awaited, so a call skipped while backing off costs nothing.
    pub(super) fn read(
        &self,
        consistent: bool,
    ) -> impl Future<Output = Result<Option<CircuitRecord>, StoreError>> + use<> {
        store_runtime::read(
            Arc::clone(&self.store),
            Arc::clone(&self.name),
            consistent,
            self.timeout,
        )
    }

    /// Writes `transition` to the shared record (lazily, like [`read`](Self::read)).
    pub(super) fn write(
        &self,
        transition: RecordWrite,
    ) -> impl Future<Output = Result<WriteOutcome, StoreError>> + use<> {
        store_runtime::apply(
            Arc::clone(&self.store),
            Arc::clone(&self.name),
            transition,
            self.timeout,
        )
    }

    /// Adds `report` to the fleet's counters (lazily, like [`read`](Self::read)).
    pub(super) fn report(
        &self,
        report: FailureReport,
    ) -> impl Future<Output = Result<Option<FleetTally>, StoreError>> + use<> {
        store_runtime::report(
            Arc::clone(&self.store),
            Arc::clone(&self.name),
            report,
            self.timeout,
        )
    }

    /// Adds `report` to the counters of the circuit's suspicion.
    pub(super) fn report_suspected(
        &self,
        report: SuspectReport,
    ) -> impl Future<Output = Result<Option<EpochTally>, StoreError>> + use<> {
        store_runtime::report_suspected(
            Arc::clone(&self.store),
            Arc::clone(&self.name),
            report,
            self.timeout,
        )
    }

    /// Logs `error` and returns until when (unix millis) the store is left alone after it,
    /// from `now` on; `environment_id` spreads a fleet's return after throttling.
    pub(super) fn back_off(&self, error: &StoreError, now: u64, environment_id: &str) -> u64 {
        tracing::warn!(circuit = %self.name, %error, "circuit breaker store failed; failing open");
        let backoff = self.backoff_millis;
        if error.is_throttled() {
            // Spread over [backoff / 2, backoff * 3 / 2): a fleet throttled by one
            // burst must not come back in one burst.
            let spread = environment::spread(backoff, environment_id, now);
            now.saturating_add(backoff / 2).saturating_add(spread)
        } else {
            now.saturating_add(backoff)
        }
    }
}
