//! `StoreAccess`: the store calls of one circuit, on the store runtime and with the store
//! timeout, and the back-off after an error: about `store_error_backoff` (spread per
//! environment after throttling) so a broken or throttled store is not hit by every call,
//! nor by a whole fleet at once.

use std::future::Future;
use std::sync::Arc;

use crate::config::{CircuitBreakerConfig, millis};
use crate::environment;
use crate::observe;
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
    /// A keyed circuit's key, for the logs.
    key: Option<Arc<str>>,
    timeout: std::time::Duration,
    backoff_millis: u64,
}

impl StoreAccess {
    pub(super) fn new(
        store: Arc<dyn StateStore>,
        name: Arc<str>,
        key: Option<Arc<str>>,
        config: &CircuitBreakerConfig,
    ) -> Self {
        Self {
            store,
            name,
            key,
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

    pub(super) fn key(&self) -> Option<&Arc<str>> {
        self.key.as_ref()
    }

    /// Reads the shared record, strongly consistently if `consistent`.
    pub(super) fn read(
        &self,
        consistent: bool,
    ) -> impl Future<Output = Result<Option<CircuitRecord>, StoreError>> + use<> {
        self.call(move |store, name| async move {
            match consistent {
                true => store.read_consistent(&name).await,
                false => store.read(&name).await,
            }
        })
    }

    /// Writes `transition` to the shared record.
    pub(super) fn write(
        &self,
        transition: RecordWrite,
    ) -> impl Future<Output = Result<WriteOutcome, StoreError>> + use<> {
        self.call(move |store, name| async move { store.apply(&name, &transition).await })
    }

    /// Adds `report` to the fleet's counters.
    pub(super) fn report(
        &self,
        report: FailureReport,
    ) -> impl Future<Output = Result<Option<FleetTally>, StoreError>> + use<> {
        self.call(move |store, name| async move { store.report(&name, &report).await })
    }

    /// Adds `report` to the counters of the circuit's suspicion.
    pub(super) fn report_suspected(
        &self,
        report: SuspectReport,
    ) -> impl Future<Output = Result<Option<EpochTally>, StoreError>> + use<> {
        self.call(move |store, name| async move { store.report_suspected(&name, &report).await })
    }

    /// The store call `call` makes with the store and the circuit's name, on the store
    /// runtime and with the store timeout. Does nothing until awaited, so a call skipped
    /// while backing off costs nothing.
    fn call<C, F, T>(&self, call: C) -> impl Future<Output = Result<T, StoreError>> + use<C, F, T>
    where
        C: FnOnce(Arc<dyn StateStore>, Arc<str>) -> F,
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        store_runtime::run(
            self.timeout,
            call(Arc::clone(&self.store), Arc::clone(&self.name)),
        )
    }

    /// Logs `error` and returns until when (unix millis) the store is left alone after it,
    /// from `now` on; `environment_id` spreads a fleet's return after throttling.
    pub(super) fn back_off(&self, error: &StoreError, now: u64, environment_id: &str) -> u64 {
        match &self.key {
            None => {
                tracing::warn!(circuit = %self.name, %error, "circuit breaker store failed; failing open");
            }
            Some(key) => {
                tracing::warn!(circuit = %self.name, %key, %error, "circuit breaker store failed; failing open");
            }
        }
        observe::store_error(&self.name, error.kind());
        crate::emf::on_store_error(&self.name, self.key.as_deref(), error.kind());
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
