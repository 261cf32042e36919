//! `FleetPolicy`: when the fleet's shared failure counters suspect an outage, and when a
//! suspicion's counters open a circuit.

use std::time::Duration;

/// The fleet-wide failure policy: environments report their failures (with their recent
/// call counts) to counters the whole fleet shares, one per fleet window. A window holding
/// a third of [`failure_threshold`](Self::failure_threshold) failures making at least
/// [`failure_rate`](Self::failure_rate) percent of the calls reported with them raises a
/// suspicion for one window, during which every environment also reports a sample of its
/// successes; the circuit opens when the suspicion's counters hold twice
/// `failure_threshold` failures making at least `failure_rate` percent of the estimated
/// calls (see `docs/design.md`, "Fleet-wide detection"). Besides, not instead of, each
/// environment's own policy.
///
/// ```
/// let fleet = breaker_runtime::FleetPolicy::default();
/// assert_eq!((fleet.failure_threshold, fleet.failure_rate), (10, 50));
/// assert_eq!(fleet.window, std::time::Duration::from_secs(10));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FleetPolicy {
    /// Sets the rule's counts (default 10): a third of it in one window raises a
    /// suspicion, twice it under the suspicion opens the circuit.
    pub failure_threshold: u32,
    /// Percent of the calls those failures must make: the calls reported in a window, the
    /// calls estimated under a suspicion (default 50).
    pub failure_rate: u8,
    /// The fleet window: counters start again at each multiple of it (default 10 s).
    pub window: Duration,
    /// At most one report per environment per interval (default 1 s); failures in
    /// between wait for the next report.
    pub report_interval: Duration,
}

impl Default for FleetPolicy {
    fn default() -> Self {
        Self {
            failure_threshold: 10,
            failure_rate: 50,
            window: Duration::from_secs(10),
            report_interval: Duration::from_secs(1),
        }
    }
}
