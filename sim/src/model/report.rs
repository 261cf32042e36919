//! Failure reports: an UpdateItem of an item of their own per circuit and fleet window, or
//! per circuit and suspicion.

use breaker_runtime::store::{EpochTally, FailureReport, FleetTally, SuspectReport};

use super::{Cost, ItemModel, RequestOutcome, Served};

impl ItemModel {
    /// A failure report at `now_ms`: an UpdateItem of the report's own item (one per
    /// circuit and fleet window, with its own capacity), answered with the totals.
    pub fn report(
        &mut self,
        circuit: &str,
        report: &FailureReport,
        now_ms: u64,
    ) -> Served<Option<FleetTally>> {
        let key = report_key(circuit, report.window_start);
        self.request(&key, now_ms, Cost::Write(1), |item| {
            item.tally = item.tally.plus(report);
            (Ok(Some(item.tally)), RequestOutcome::Won)
        })
    }
}

impl ItemModel {
    /// A report to a suspicion's counters at `now_ms`: an UpdateItem of the suspicion's
    /// own item, answered with all its slices.
    pub fn report_suspected(
        &mut self,
        circuit: &str,
        report: &SuspectReport,
        now_ms: u64,
    ) -> Served<Option<EpochTally>> {
        let key = format!("{circuit}#fleet@s{}", report.epoch);
        self.request(&key, now_ms, Cost::Write(1), |item| {
            item.epoch = item.epoch.plus(report);
            (Ok(Some(item.epoch)), RequestOutcome::Won)
        })
    }
}

/// The key of a circuit's report item for the fleet window starting at `window_start`.
pub fn report_key(circuit: &str, window_start: u64) -> String {
    format!("{circuit}#fleet@{window_start}")
}
