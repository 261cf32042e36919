//! The circuit's store I/O: reading the shared record (one refresh at a time), writing
//! transitions, reporting to the fleet's counters, and the back-off after a store error.

use std::sync::atomic::{AtomicBool, Ordering};

use super::Circuit;
use crate::breaker::store_access::StoreCallError;
use crate::protocol::{
    CircuitRecord, EpochTally, FailureReport, FleetTally, RecordWrite, SuspectReport, WriteOutcome,
};

impl Circuit {
    /// Re-reads the shared record when the cache is stale. Only one task per circuit reads;
    /// the others go on with the cached record.
    pub(in crate::breaker) async fn refresh_if_stale(&self, now: u64) {
        if now < self.lock().trusted_until() {
            return;
        }
        if self.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let _reading = ClearOnDrop(&self.refreshing);
        // Whether it answered shows in the cache: a failed read leaves it as it was.
        self.read_and_adopt(now, false).await;
    }

    /// Reads the shared record and adopts it, unless a local transition happened meanwhile.
    /// A read that fails changes nothing this environment knows: a circuit known to be
    /// closed stays closed (fail open), one known to be open stays open until its recovery.
    /// Returns whether the store answered.
    pub(in crate::breaker) async fn read_and_adopt(&self, now: u64, consistent: bool) -> bool {
        let version = self.lock().version();
        let read = self.read_store(consistent).await;
        let mut cache = self.lock();
        match read {
            Ok(record)
                if cache.no_news(record.as_ref().unwrap_or(&CircuitRecord::default()), now) =>
            {
                cache.read_no_news(now);
                self.reports.on_refresh(now, self.counts.calls());
                self.publish(&cache);
                true
            }
            Ok(record) => {
                let absent = CircuitRecord::default();
                let answered = record.as_ref().unwrap_or(&absent);
                cache.store_answered(answered);
                cache.read_answered(answered, &self.probe_owner, now);
                self.reports.on_refresh(now, self.counts.calls());
                if cache.version() == version {
                    self.adopt(&mut cache, record.unwrap_or_default());
                } else {
                    self.publish(&cache);
                }
                true
            }
            Err(error) => {
                if error.unreachable() {
                    cache.read_unreachable();
                    // Who may elect itself, and when, can change with it.
                    self.publish(&cache);
                }
                false
            }
        }
    }

    /// Reads the shared record, strongly consistently if `consistent`.
    pub(super) async fn read_store(
        &self,
        consistent: bool,
    ) -> Result<Option<CircuitRecord>, StoreCallError> {
        self.unless_backing_off(self.access.read(consistent)).await
    }

    /// Writes `transition` to the shared record.
    pub(in crate::breaker) async fn write_store(
        &self,
        transition: RecordWrite,
    ) -> Result<WriteOutcome, StoreCallError> {
        self.unless_backing_off(self.access.write(transition)).await
    }

    /// Adds `report` to the fleet's counters. The counters are an item of their own: an
    /// error (throttling, most likely, when a whole fleet reports at once) backs off this
    /// environment's reports only, never its reads of the circuit's record, which it needs
    /// to learn that another environment tripped the circuit.
    pub(in crate::breaker) async fn report_to_fleet(
        &self,
        report: FailureReport,
    ) -> Result<Option<FleetTally>, StoreCallError> {
        self.to_fleet_counters(self.access.report(report)).await
    }

    /// Adds `report` to the counters of a suspicion, as [`report_to_fleet`](Self::report_to_fleet).
    pub(in crate::breaker) async fn report_suspected_to_fleet(
        &self,
        report: SuspectReport,
    ) -> Result<Option<EpochTally>, StoreCallError> {
        self.to_fleet_counters(self.access.report_suspected(report))
            .await
    }

    /// Sends a report unless the store or the reports back off; an error backs the
    /// reports off.
    pub(super) async fn to_fleet_counters<T>(
        &self,
        report: impl Future<Output = Result<T, crate::store::StoreError>>,
    ) -> Result<T, StoreCallError> {
        let now = self.now();
        if self.lock().backing_off(now) || self.reports.backing_off(now) {
            return Err(StoreCallError::BackingOff);
        }
        let reply = report.await;
        if let Err(error) = &reply {
            let now = self.now();
            let retry_at = self.access.back_off(error, now, &self.environment_id);
            self.reports.back_off_until(retry_at);
        }
        reply.map_err(StoreCallError::Failed)
    }

    /// Runs `operation` unless the store is backing off after an error; an error starts
    /// the back-off. `operation` does nothing until awaited, so a skipped one costs nothing.
    pub(super) async fn unless_backing_off<T>(
        &self,
        operation: impl Future<Output = Result<T, crate::store::StoreError>>,
    ) -> Result<T, StoreCallError> {
        if self.lock().backing_off(self.now()) {
            return Err(StoreCallError::BackingOff);
        }
        let reply = operation.await;
        if let Err(error) = &reply {
            let mut cache = self.lock();
            let retry_at = self
                .access
                .back_off(error, self.now(), &self.environment_id);
            cache.back_off_until(retry_at);
            self.publish(&cache);
        }
        reply.map_err(StoreCallError::Failed)
    }
}

/// Clears a flag when dropped, so a cancelled reader does not block refreshes forever.
struct ClearOnDrop<'a>(&'a AtomicBool);

impl Drop for ClearOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}
