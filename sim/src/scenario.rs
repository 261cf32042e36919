//! The scenarios: a fleet, its traffic, the downstream's health and the
//! store's faults over virtual time, and the breaker's tunables. Each is a value, so a test
//! can shrink the fleet (and the item's limits with it) and keep everything else.

use crate::downstream::{CapacitySchedule, Health, HealthSchedule};
use crate::keys::KeySpace;
use crate::model::{FaultWindow, ModelConfig};
use crate::traffic::Rate;

mod keyed;
mod managed;
mod one_circuit;
mod recovery;
mod settings;

pub use settings::BreakerSettings;

/// Virtual seconds to milliseconds.
const fn s(secs: u64) -> u64 {
    secs * 1000
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
    /// Invocations one environment runs at once, sharing its breaker, store client and
    /// clock: 1 in a Lambda environment, more on Managed Instances
    /// (`AWS_LAMBDA_MAX_CONCURRENCY`), where a function timeout ends one invocation and the
    /// environment serves on.
    pub concurrency: u32,
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
    /// Downstream capacity over time (default: unlimited).
    pub capacity: CapacitySchedule,
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
pub const NAMES: [&str; 18] = [
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
    "recovery-capacity",
    "recovery-capacity-slow-start",
    "throttle-retry-after",
    "brownout-capacity",
];

/// Every Managed Instances scenario (environments running many invocations at once), in
/// the order `--scenario managed` runs them.
pub const MANAGED_NAMES: [&str; 4] = [
    "managed-outage",
    "managed-background-1pct",
    "managed-background-5pct",
    "managed-hang",
];

/// Every keyed scenario (a circuit per key, and its comparisons), in the order `make sim`
/// runs them.
pub const KEYED_NAMES: [&str; 8] = [
    "keyed-rank100",
    "keyed-rank100-alone",
    "keyed-rank100-one-circuit",
    "keyed-10pct",
    "keyed-10pct-plain-per-key",
    "keyed-90pct",
    "keyed-healthy",
    "keyed-background-5pct",
];

impl Scenario {
    fn base(name: &str, about: &str, envs: u32, rate: Rate, duration_s: u64) -> Self {
        let breaker = BreakerSettings::default();
        Self {
            name: name.to_owned(),
            about: about.to_owned(),
            envs,
            concurrency: 1,
            rate,
            duration_ms: s(duration_s),
            seed: 1,
            downstream_latency_ms: 50,
            health: HealthSchedule::always_up(),
            capacity: CapacitySchedule::unlimited(),
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

    /// The scenario called `name`, with its own fleet size and rates.
    ///
    /// ```
    /// let outage = breaker_sim::scenario::Scenario::named("outage").unwrap();
    /// assert_eq!(outage.envs, 10_000);
    /// assert!(breaker_sim::scenario::Scenario::named("nope").is_none());
    /// ```
    pub fn named(name: &str) -> Option<Self> {
        Self::one_circuit(name)
            .or_else(|| Self::recovery(name))
            .or_else(|| Self::keyed_named(name))
            .or_else(|| Self::managed(name))
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

    /// Every Managed Instances scenario, in [`MANAGED_NAMES`] order.
    pub fn all_managed() -> Vec<Self> {
        MANAGED_NAMES
            .iter()
            .filter_map(|name| Self::named(name))
            .collect()
    }

    /// The same scenario with `envs` environments and the item's limits scaled by
    /// `envs / self.envs`, so a small fleet still meets them where the large one does; a
    /// keyed scenario's keys and cap, and the downstream's capacity, are scaled with them.
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
        self.capacity = self.capacity.scaled(factor);
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

    /// The downstream's return, virtual ms: the later of its health's recovery and its
    /// capacity ramp's start, where either exists.
    ///
    /// ```
    /// let s = breaker_sim::scenario::Scenario::named("recovery-capacity").unwrap();
    /// assert_eq!(s.returned_at(), Some(90_000));
    /// assert_eq!(breaker_sim::scenario::Scenario::named("flapping").unwrap().returned_at(), None);
    /// ```
    pub fn returned_at(&self) -> Option<u64> {
        match (self.health.recovered_at(), self.capacity.ramp_start()) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// Calls per second the whole fleet sends when every environment calls at its rate.
    pub fn full_rate_per_s(&self) -> f64 {
        self.rate.per_env(self.envs) * f64::from(self.envs)
    }

    /// Burst length after the first trip write: the cache age plus the read lag.
    pub fn trip_burst_ms(&self) -> u64 {
        self.breaker.local_cache_max_age.as_millis() as u64 + self.model.max_lag_ms
    }
}
