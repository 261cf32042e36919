//! The scenarios: a fleet, its traffic, the downstream's health and the
//! store's faults over virtual time, and the breaker's tunables. Each is a value, so a test
//! can shrink the fleet (and the item's limits with it) and keep everything else.

use std::time::Duration;

use crate::downstream::{Health, HealthSchedule};
use crate::keys::{FailingKeys, Guarding, KeySpace};
use crate::model::{FaultWindow, ModelConfig, StoreFault};
use crate::traffic::Rate;

/// Virtual seconds to milliseconds.
const fn s(secs: u64) -> u64 {
    secs * 1000
}

/// The breaker's settings, the defaults being the runtime's.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakerSettings {
    /// Consecutive failures that trip (5).
    pub failure_threshold: u32,
    /// Time open before a probe (30 s).
    pub recovery_timeout: Duration,
    /// Probe successes that close (3).
    pub success_threshold: u32,
    /// How long a copy of the record is trusted (5 s).
    pub local_cache_max_age: Duration,
    /// Per-environment jitter added to the recovery timeout (off).
    pub recovery_jitter: Duration,
    /// Quiet time after a store error (5 s).
    pub store_error_backoff: Duration,
    /// The probe owner's lease (30 s).
    pub probe_lease: Duration,
    /// A guarded call still running this long after it started is abandoned (none).
    pub call_timeout: Option<Duration>,
    /// How long before the invocation deadline a guarded call is abandoned, so its store
    /// writes land before Lambda ends the invocation.
    pub deadline_margin: Duration,
    /// The fleet-wide failure policy (`None`: each environment trips on its own counts).
    pub fleet_policy: Option<breaker_runtime::FleetPolicy>,
    /// How the open duration grows with each reopen (the runtime's default: it does not).
    pub recovery_backoff: breaker_runtime::RecoveryBackoff,
}

impl BreakerSettings {
    /// `builder` with these settings.
    pub fn apply(
        &self,
        builder: breaker_runtime::CircuitBreakerConfigBuilder,
    ) -> breaker_runtime::CircuitBreakerConfigBuilder {
        let builder = builder
            .failure_threshold(self.failure_threshold)
            .recovery_timeout(self.recovery_timeout)
            .success_threshold(self.success_threshold)
            .local_cache_max_age(self.local_cache_max_age)
            .recovery_jitter(self.recovery_jitter)
            .store_error_backoff(self.store_error_backoff)
            .probe_lease(self.probe_lease)
            .deadline_margin(self.deadline_margin)
            .recovery_backoff(self.recovery_backoff.clone())
            .fleet_detection(self.fleet_policy.is_some());
        let builder = match self.fleet_policy {
            Some(policy) => builder.fleet_policy(policy),
            None => builder,
        };
        match self.call_timeout {
            Some(timeout) => builder.call_timeout(timeout),
            None => builder,
        }
    }
}

impl Default for BreakerSettings {
    fn default() -> Self {
        let runtime = breaker_runtime::CircuitBreakerConfig::default();
        Self {
            failure_threshold: runtime.failure_threshold(),
            recovery_timeout: runtime.recovery_timeout(),
            success_threshold: runtime.success_threshold(),
            local_cache_max_age: runtime.local_cache_max_age(),
            recovery_jitter: runtime.recovery_jitter(),
            store_error_backoff: runtime.store_error_backoff(),
            probe_lease: runtime.probe_lease(),
            call_timeout: runtime.call_timeout(),
            deadline_margin: runtime.deadline_margin(),
            fleet_policy: runtime.fleet_policy(),
            recovery_backoff: runtime.recovery_backoff().clone(),
        }
    }
}

/// One simulated situation.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Its name (`--scenario`).
    pub name: String,
    /// What it shows, one line.
    pub about: String,
    /// Execution environments.
    pub envs: u32,
    /// Call rate.
    pub rate: Rate,
    /// Virtual time simulated, ms.
    pub duration_ms: u64,
    /// The seed of every random draw.
    pub seed: u64,
    /// Downstream latency, ms.
    pub downstream_latency_ms: u64,
    /// Downstream health over time.
    pub health: HealthSchedule,
    /// Store faults over time.
    pub store_faults: Vec<FaultWindow>,
    /// The circuit's item is OPEN at time 0 (opened then).
    pub initially_open: bool,
    /// Environments make their first call over this long (plus one arrival gap), so their
    /// cache refreshes are spread as in a warm fleet (default: the cache age, 5 s).
    pub start_spread_ms: u64,
    /// Largest clock skew of an environment, ± ms (default 1 s).
    pub max_skew_ms: u64,
    /// The breaker's settings.
    pub breaker: BreakerSettings,
    /// DynamoDB's limits, lag and latencies.
    pub model: ModelConfig,
    /// The function timeout, ms: an invocation still running this long after it started
    /// is ended by Lambda, and its environment starts again cold. `None`: no limit.
    pub function_timeout_ms: Option<u64>,
    /// The handler passes the invocation deadline on to the breaker
    /// (`breaker_runtime::deadline::scope`), as the sample functions do.
    pub deadline_aware: bool,
    /// A keyed scenario's keys: each call names one, and only the failing keys' downstream
    /// follows `health` (the others are always up). `None`: one circuit, one downstream.
    pub keys: Option<KeySpace>,
}

/// Every scenario of one circuit, in the order `make sim` runs them.
pub const NAMES: [&str; 14] = [
    "outage",
    "sparse",
    "sparse-10k",
    "hang",
    "background-errors",
    "quiet-errors",
    "quiet-errors-1k",
    "sparse-10k-noisy",
    "light",
    "store-throttled",
    "store-down-while-open",
    "flapping",
    "scale-100k",
    "long-outage",
];

/// Every keyed scenario (a circuit per key, and its comparisons), in the order `make sim`
/// runs them.
pub const KEYED_NAMES: [&str; 7] = [
    "keyed-rank100",
    "keyed-rank100-alone",
    "keyed-rank100-one-circuit",
    "keyed-10pct",
    "keyed-10pct-plain-per-key",
    "keyed-90pct",
    "keyed-healthy",
];

impl Scenario {
    fn base(name: &str, about: &str, envs: u32, rate: Rate, duration_s: u64) -> Self {
        let breaker = BreakerSettings::default();
        Self {
            name: name.to_owned(),
            about: about.to_owned(),
            envs,
            rate,
            duration_ms: s(duration_s),
            seed: 1,
            downstream_latency_ms: 50,
            health: HealthSchedule::always_up(),
            store_faults: Vec::new(),
            initially_open: false,
            start_spread_ms: breaker.local_cache_max_age.as_millis() as u64,
            max_skew_ms: 1_000,
            breaker,
            model: ModelConfig::default(),
            function_timeout_ms: Some(s(10)),
            deadline_aware: true,
            keys: None,
        }
    }

    /// 1,000 environments at 10 calls/s calling 5,000 keys (Zipf, exponent 1); the
    /// `failing` keys' downstream is down from 10 s to 130 s.
    fn keyed(name: &str, about: &str, failing: FailingKeys, guarding: Guarding) -> Self {
        Self {
            health: HealthSchedule::new(vec![(s(10), Health::Down), (s(130), Health::Up)]),
            keys: Some(KeySpace {
                guarding,
                ..KeySpace::new(5_000, 1.0, failing)
            }),
            ..Self::base(name, about, 1_000, Rate::PerEnv(10.0), 300)
        }
    }

    /// The scenario called `name`, with its own fleet size and rates.
    ///
    /// ```
    /// let outage = breaker_sim::scenario::Scenario::named("outage").unwrap();
    /// assert_eq!(outage.envs, 10_000);
    /// assert!(breaker_sim::scenario::Scenario::named("nope").is_none());
    /// ```
    pub fn named(name: &str) -> Option<Self> {
        let outage_health =
            || HealthSchedule::new(vec![(s(10), Health::Down), (s(130), Health::Up)]);
        let scenario = match name {
            "outage" => Self {
                health: outage_health(),
                ..Self::base(
                    name,
                    "10,000 environments at 10 calls/s; the downstream is down from 10 s to 130 s",
                    10_000,
                    Rate::PerEnv(10.0),
                    300,
                )
            },
            "sparse" => Self {
                health: outage_health(),
                start_spread_ms: 1000 * 20,
                ..Self::base(
                    name,
                    "1,000 environments, 1 call per 20 s each; the downstream is down from 10 s to 130 s",
                    1_000,
                    Rate::PerEnv(0.05),
                    300,
                )
            },
            "sparse-10k" => Self {
                health: outage_health(),
                start_spread_ms: 1000 * 50,
                ..Self::base(
                    name,
                    "10,000 environments, 1 call per 50 s each; the downstream is down from 10 s to 130 s",
                    10_000,
                    Rate::PerEnv(0.02),
                    300,
                )
            },
            "hang" => Self {
                health: HealthSchedule::new(vec![(s(10), Health::Hang), (s(130), Health::Up)]),
                ..Self::base(
                    name,
                    "10,000 environments at 1 call/s; the downstream stops answering from 10 s to 130 s; function timeout 10 s",
                    10_000,
                    Rate::PerEnv(1.0),
                    300,
                )
            },
            "background-errors" => Self {
                health: HealthSchedule::new(vec![(0, Health::Failing(0.001))]),
                ..Self::base(
                    name,
                    "10,000 environments at 10 calls/s; 0.1 % of calls fail at random throughout",
                    10_000,
                    Rate::PerEnv(10.0),
                    120,
                )
            },
            "quiet-errors" => Self {
                health: HealthSchedule::new(vec![(0, Health::Failing(0.01))]),
                start_spread_ms: 1000 * 50,
                ..Self::base(
                    name,
                    "10,000 environments, 1 call per 50 s each; 1 % of calls fail at random throughout",
                    10_000,
                    Rate::PerEnv(0.02),
                    300,
                )
            },
            "quiet-errors-1k" => Self {
                health: HealthSchedule::new(vec![(0, Health::Failing(0.01))]),
                start_spread_ms: 1000 * 20,
                ..Self::base(
                    name,
                    "1,000 environments, 1 call per 20 s each; 1 % of calls fail at random throughout",
                    1_000,
                    Rate::PerEnv(0.05),
                    300,
                )
            },
            "sparse-10k-noisy" => Self {
                health: HealthSchedule::new(vec![
                    (0, Health::Failing(0.01)),
                    (s(10), Health::Down),
                    (s(130), Health::Up),
                ]),
                start_spread_ms: 1000 * 50,
                ..Self::base(
                    name,
                    "as sparse-10k, and 1 % of calls fail at random before the outage",
                    10_000,
                    Rate::PerEnv(0.02),
                    300,
                )
            },
            "light" => Self {
                initially_open: true,
                health: HealthSchedule::new(vec![(0, Health::Down), (s(60), Health::Up)]),
                ..Self::base(
                    name,
                    "50 environments, 1 call per 20 s each; OPEN at 0 s, the downstream up from 60 s",
                    50,
                    Rate::PerEnv(0.05),
                    600,
                )
            },
            "store-throttled" => Self {
                health: outage_health(),
                // The first two recovery windows of the outage.
                store_faults: vec![FaultWindow {
                    from_ms: s(10),
                    until_ms: s(70),
                    fault: StoreFault::WritesThrottled,
                }],
                ..Self::base(
                    name,
                    "as outage, and every write is throttled from 10 s to 70 s",
                    10_000,
                    Rate::PerEnv(10.0),
                    300,
                )
            },
            "store-down-while-open" => Self {
                // Open at ~10 s; the store is gone for 3 windows from 20 s; the downstream
                // is back after the first of them.
                health: HealthSchedule::new(vec![(s(10), Health::Down), (s(50), Health::Up)]),
                store_faults: vec![FaultWindow {
                    from_ms: s(20),
                    until_ms: s(110),
                    fault: StoreFault::Unreachable,
                }],
                ..Self::base(
                    name,
                    "as outage, the store unreachable from 20 s to 110 s, the downstream up from 50 s",
                    10_000,
                    Rate::PerEnv(10.0),
                    300,
                )
            },
            "flapping" => Self {
                health: HealthSchedule::new(vec![(0, Health::Failing(0.3))]),
                ..Self::base(
                    name,
                    "1,000 environments at 10 calls/s; 30 % of downstream calls fail throughout",
                    1_000,
                    Rate::PerEnv(10.0),
                    300,
                )
            },
            "scale-100k" => Self {
                health: outage_health(),
                ..Self::base(
                    name,
                    "100,000 environments at 1 call/s; the downstream is down from 10 s to 130 s",
                    100_000,
                    Rate::PerEnv(1.0),
                    300,
                )
            },
            "long-outage" => Self {
                health: HealthSchedule::new(vec![(s(10), Health::Down), (s(1210), Health::Up)]),
                ..Self::base(
                    name,
                    "10,000 environments at 10 calls/s; the downstream is down for 20 minutes, from 10 s to 1210 s",
                    10_000,
                    Rate::PerEnv(10.0),
                    1500,
                )
            },
            "keyed-rank100" => Self::keyed(
                name,
                "1,000 environments at 10 calls/s over 5,000 keys (Zipf 1), a circuit per key; the key at rank 100 is down from 10 s to 130 s",
                FailingKeys::Rank(100),
                Guarding::Keyed,
            ),
            "keyed-rank100-alone" => Self::keyed(
                name,
                "as keyed-rank100, only the rank-100 key's calls, guarded by one plain circuit",
                FailingKeys::Rank(100),
                Guarding::OnlyKey(100),
            ),
            "keyed-rank100-one-circuit" => Self::keyed(
                name,
                "as keyed-rank100, every key's calls guarded by one plain circuit",
                FailingKeys::Rank(100),
                Guarding::OneCircuit,
            ),
            "keyed-10pct" => Self::keyed(
                name,
                "as keyed-rank100, 10 % of the keys (every tenth rank) down from 10 s to 130 s",
                FailingKeys::Share(0.1),
                Guarding::Keyed,
            ),
            "keyed-10pct-plain-per-key" => Self::keyed(
                name,
                "as keyed-10pct, each key guarded by a plain circuit of its own (no index, no cap, none forgotten)",
                FailingKeys::Share(0.1),
                Guarding::PlainPerKey,
            ),
            "keyed-90pct" => Self::keyed(
                name,
                "as keyed-rank100, 90 % of the keys (all but every tenth rank) down from 10 s to 130 s",
                FailingKeys::Share(0.9),
                Guarding::Keyed,
            ),
            "keyed-healthy" => Self::keyed(
                name,
                "as keyed-rank100, every key healthy",
                FailingKeys::None,
                Guarding::Keyed,
            ),
            _ => return None,
        };
        Some(scenario)
    }

    /// Every scenario of one circuit, in [`NAMES`] order.
    pub fn all() -> Vec<Self> {
        NAMES.iter().filter_map(|name| Self::named(name)).collect()
    }

    /// Every keyed scenario, in [`KEYED_NAMES`] order.
    pub fn all_keyed() -> Vec<Self> {
        KEYED_NAMES
            .iter()
            .filter_map(|name| Self::named(name))
            .collect()
    }

    /// The same scenario with `envs` environments and the item's limits scaled by
    /// `envs / self.envs`, so a small fleet still meets them where the large one does; a
    /// keyed scenario's keys and cap are scaled with them.
    ///
    /// ```
    /// let small = breaker_sim::scenario::Scenario::named("outage").unwrap().scaled_to(100);
    /// assert_eq!((small.envs, small.model.write_units_per_s, small.model.read_units_per_s), (100, 10, 30));
    /// let keyed = breaker_sim::scenario::Scenario::named("keyed-90pct").unwrap().scaled_to(100);
    /// let keys = keyed.keys.unwrap();
    /// assert_eq!((keys.count, keys.cap()), (500, 100));
    /// ```
    pub fn scaled_to(mut self, envs: u32) -> Self {
        let factor = f64::from(envs) / f64::from(self.envs.max(1));
        let scale = |limit: u32| ((f64::from(limit) * factor).round() as u32).max(1);
        self.model.read_units_per_s = scale(self.model.read_units_per_s);
        self.model.write_units_per_s = scale(self.model.write_units_per_s);
        self.keys = self.keys.map(|keys| keys.scaled(factor));
        self.envs = envs;
        self
    }

    /// The same scenario with `share` (0 to 1) of the downstream's calls failing at random
    /// throughout, instead of its own health schedule.
    ///
    /// ```
    /// use breaker_sim::downstream::Health;
    /// let noisy = breaker_sim::scenario::Scenario::named("sparse-10k").unwrap().failing(0.05);
    /// assert_eq!(noisy.health.at(60_000), Health::Failing(0.05));
    /// ```
    pub fn failing(mut self, share: f64) -> Self {
        self.health = HealthSchedule::new(vec![(0, Health::Failing(share))]);
        self
    }

    /// Burst length after the first trip write: the cache age plus the read lag.
    pub fn trip_burst_ms(&self) -> u64 {
        self.breaker.local_cache_max_age.as_millis() as u64 + self.model.max_lag_ms
    }
}
