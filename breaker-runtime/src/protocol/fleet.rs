//! Fleet-wide failure counting as pure data: what an environment reports
//! ([`FailureReport`]), what the fleet's counters hold after it ([`FleetTally`]), and the
//! rule that opens the circuit on them ([`fleet_trips`]).
//!
//! Why: an environment that calls a downstream once a minute needs minutes to see five
//! failures in a row, while a fleet of thousands such environments sees hundreds a
//! second. Each environment adds its failures, and the calls it made around them, to
//! counters of one fleet window (an item of their own, never the circuit's record); the
//! store answers with the window's totals, and the environment whose report makes them
//! meet the policy trips the circuit with the ordinary conditional trip.

use super::fleet_policy::FleetPolicy;

/// One environment's report: failures since its last report, the calls it made around
/// them, for the fleet window starting at `window_start` (unix seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FailureReport {
    /// Unix seconds at which the window starts (a multiple of `window_secs`).
    pub window_start: u64,
    /// The window's length in seconds.
    pub window_secs: u64,
    /// Counted failures not reported before.
    pub failures: u32,
    /// Calls (failures included) made since this environment's last report in the recent
    /// past, at least `failures`.
    pub calls: u32,
    /// 1 if this is this environment's first report in the window, else 0: the window
    /// counts the environments that reported.
    pub new_reporter: u32,
    /// Unix seconds after which the store may delete the window's counters.
    pub expiration: u64,
}

/// A fleet window's counters after a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FleetTally {
    /// Failures reported in the window.
    pub failures: u64,
    /// Calls reported with them.
    pub calls: u64,
    /// Environments that reported.
    pub reporters: u64,
}

impl FleetTally {
    /// The tally after `report` was added.
    ///
    /// ```
    /// use breaker_runtime::store::{FailureReport, FleetTally};
    /// let report = FailureReport { window_start: 100, window_secs: 10, failures: 2, calls: 3, new_reporter: 1, expiration: 3710 };
    /// let tally = FleetTally::default().plus(&report).plus(&report);
    /// assert_eq!((tally.failures, tally.calls, tally.reporters), (4, 6, 2));
    /// ```
    pub fn plus(self, report: &FailureReport) -> Self {
        Self {
            failures: self.failures.saturating_add(u64::from(report.failures)),
            calls: self.calls.saturating_add(u64::from(report.calls)),
            reporters: self
                .reporters
                .saturating_add(u64::from(report.new_reporter)),
        }
    }
}

/// The fewest environments whose reports may open a circuit: one environment's failures
/// are its own policy's to judge, so a fleet of one behaves as without reports.
pub const MIN_REPORTERS: u64 = 2;

/// Whether a window's `tally` opens the circuit: enough failures, from more than one
/// environment, making at least the policy's share of the calls reported with them. A
/// count alone cannot tell a quiet fleet that is down from background errors of a busy
/// one; the share can.
pub(crate) fn fleet_trips(tally: &FleetTally, policy: &FleetPolicy) -> bool {
    tally.failures >= u64::from(policy.failure_threshold)
        && tally.reporters >= MIN_REPORTERS
        && tally.failures.saturating_mul(100)
            >= u64::from(policy.failure_rate).saturating_mul(tally.calls)
}

/// The fleet window that holds `now_secs`: its start, a multiple of the window's length.
pub(crate) fn window_start(now_secs: u64, window_secs: u64) -> u64 {
    now_secs - now_secs % window_secs.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(failures: u64, calls: u64, reporters: u64) -> FleetTally {
        FleetTally {
            failures,
            calls,
            reporters,
        }
    }

    #[test]
    fn a_quiet_fleet_that_is_down_trips_and_background_errors_do_not() {
        let policy = FleetPolicy::default();
        assert!(fleet_trips(&tally(10, 12, 10), &policy), "10 of 12 failed");
        assert!(!fleet_trips(&tally(9, 9, 9), &policy), "below the count");
        assert!(
            !fleet_trips(&tally(1_000, 100_000, 900), &policy),
            "0.1 % of a busy fleet's calls"
        );
        assert!(
            fleet_trips(&tally(50, 100, 20), &policy),
            "50 % is the rate"
        );
        assert!(!fleet_trips(&tally(49, 100, 20), &policy));
    }

    #[test]
    fn one_environment_alone_never_trips_the_fleet_policy() {
        assert!(!fleet_trips(&tally(500, 500, 1), &FleetPolicy::default()));
    }

    #[test]
    fn windows_start_at_multiples_of_their_length() {
        assert_eq!(window_start(1_700_000_007, 10), 1_700_000_000);
        assert_eq!(window_start(1_700_000_010, 10), 1_700_000_010);
    }
}
