//! `FleetPolicy`: when the fleet's shared failure counters open a circuit.

use std::time::Duration;

/// The fleet-wide failure policy: environments report their failures (with their recent
/// call counts) to counters the whole fleet shares, one per fleet window, and the circuit
/// opens when a window holds at least [`failure_threshold`](Self::failure_threshold)
/// failures making at least [`failure_rate`](Self::failure_rate) percent of the calls
/// reported with them. Besides, not instead of, each environment's own policy.
///
/// ```
/// let fleet = breaker_runtime::FleetPolicy::default();
/// assert_eq!((fleet.failure_threshold, fleet.failure_rate), (10, 50));
/// assert_eq!(fleet.window, std::time::Duration::from_secs(10));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FleetPolicy {
    /// Failures one fleet window must hold to open the circuit (default 10).
    pub failure_threshold: u32,
    /// Percent of the reported calls those failures must make (default 50).
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
