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
/// `#[non_exhaustive]`, its fields private: start from [`Default`] and change what you
/// need with the `with_` setters. The config builder's [`build`](crate::CircuitBreakerConfigBuilder::build)
/// checks the policy with the rest of the config, and names a bad value by its attribute key
/// (`fleet_failure_threshold`, `fleet_failure_rate`, ...).
///
/// ```
/// use std::time::Duration;
/// use breaker_runtime::{CircuitBreakerConfig, FleetPolicy};
///
/// let fleet = FleetPolicy::default();
/// assert_eq!((fleet.failure_threshold(), fleet.failure_rate()), (10, 50));
/// assert_eq!((fleet.window(), fleet.report_interval()), (Duration::from_secs(10), Duration::from_secs(1)));
///
/// let strict = FleetPolicy::default().with_failure_threshold(20).with_failure_rate(30);
/// let config = CircuitBreakerConfig::builder().fleet_policy(strict).build().unwrap();
/// assert_eq!(config.fleet_policy().map(|p| p.failure_threshold()), Some(20));
///
/// let error = CircuitBreakerConfig::builder()
///     .fleet_policy(FleetPolicy::default().with_failure_rate(0))
///     .build()
///     .unwrap_err();
/// assert!(error.to_string().contains("fleet_failure_rate"));
/// ```
///
/// A struct literal does not build one (a later version may add a field):
///
/// ```compile_fail
/// let fleet = breaker_runtime::FleetPolicy { failure_threshold: 20, ..Default::default() };
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct FleetPolicy {
    /// Sets the rule's counts: a third of it in one window raises a suspicion, twice it
    /// under the suspicion opens the circuit.
    pub(crate) failure_threshold: u32,
    /// Percent of the calls those failures must make.
    pub(crate) failure_rate: u8,
    /// The fleet window: counters start again at each multiple of it.
    pub(crate) window: Duration,
    /// At most one report per environment per interval.
    pub(crate) report_interval: Duration,
    /// Whose rule: a circuit's, or a key's of a keyed circuit (longer windows, fewer
    /// failures under a suspicion).
    pub(crate) rule: FleetRule,
}

/// Which fleet rule a policy runs. A key of a keyed circuit is often called far less than a
/// circuit (5,000 keys share one downstream's calls), so its evidence must gather over a
/// longer window; the window's sampled successes keep the share honest (`docs/design.md`,
/// "Rarely called keys").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FleetRule {
    /// One window: twice the threshold under the suspicion, three samples' caution.
    Circuit,
    /// The window [`KEY_WINDOW_FACTOR`] times longer; besides the circuit's rule, the
    /// threshold over the whole suspicion so far, one sample's caution
    /// (`protocol::fleet::epoch_trips`).
    Key,
}

/// How many times longer a key's fleet window (and so its suspicion) is than the policy's:
/// 60 s by default, in which a key called once per 4.5 s fleet-wide (the coldest of 5,000
/// Zipf keys at 10,000 calls/s) makes 13 calls.
pub(crate) const KEY_WINDOW_FACTOR: u32 = 6;

/// The longest fleet window a key's rule uses, as the policy's own at most.
const LONGEST_WINDOW: Duration = Duration::from_secs(3600);

impl FleetPolicy {
    /// Sets the rule's counts (default 10, at least 1): a third of it in one window raises
    /// a suspicion, twice it under the suspicion opens the circuit.
    pub const fn with_failure_threshold(mut self, failures: u32) -> Self {
        self.failure_threshold = failures;
        self
    }

    /// Percent of the calls those failures must make, 1 to 100 (default 50): of the calls
    /// reported in a window, of the calls estimated under a suspicion.
    pub const fn with_failure_rate(mut self, percent: u8) -> Self {
        self.failure_rate = percent;
        self
    }

    /// The fleet window (default 10 s; whole seconds, 1 s to 1 h): counters start again at
    /// each multiple of it.
    pub const fn with_window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// At most one report per environment per interval (default 1 s, at most the window);
    /// failures in between wait for the next report.
    pub const fn with_report_interval(mut self, interval: Duration) -> Self {
        self.report_interval = interval;
        self
    }

    /// The rule's counts ([`with_failure_threshold`](Self::with_failure_threshold)).
    pub const fn failure_threshold(&self) -> u32 {
        self.failure_threshold
    }

    /// Percent of the calls the failures must make ([`with_failure_rate`](Self::with_failure_rate)).
    pub const fn failure_rate(&self) -> u8 {
        self.failure_rate
    }

    /// The fleet window ([`with_window`](Self::with_window)).
    pub const fn window(&self) -> Duration {
        self.window
    }

    /// The least time between two reports of one environment
    /// ([`with_report_interval`](Self::with_report_interval)).
    pub const fn report_interval(&self) -> Duration {
        self.report_interval
    }
}

impl FleetPolicy {
    /// The rule a key of a keyed circuit runs: the window [`KEY_WINDOW_FACTOR`] times
    /// longer (an hour at most), the rest as set.
    pub(crate) fn for_keys(self) -> Self {
        let window = self
            .window
            .saturating_mul(KEY_WINDOW_FACTOR)
            .min(LONGEST_WINDOW)
            .max(self.window);
        Self {
            window,
            rule: FleetRule::Key,
            ..self
        }
    }
}

impl Default for FleetPolicy {
    fn default() -> Self {
        Self {
            failure_threshold: 10,
            failure_rate: 50,
            window: Duration::from_secs(10),
            report_interval: Duration::from_secs(1),
            rule: FleetRule::Circuit,
        }
    }
}
