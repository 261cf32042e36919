//! `breaker capacity`: the DynamoDB load one circuit's item takes from a fleet, from the
//! protocol's rules (docs/scale.md, docs/dynamodb.md "Cost"), as plain arithmetic.
//!
//! - **Reads.** An environment reads the item on its first call after its copy is older
//!   than `local_cache_max_age` (A). With Poisson calls at λ per environment the gap
//!   between its reads is A plus the mean wait for the next call, 1/λ: λ / (1 + λA) reads
//!   a second, healthy or open alike; with A = 0 every call reads. Each read is
//!   eventually consistent: 0.5 read unit.
//! - **Writes while healthy**: none.
//! - **Writes while open** (the downstream still down): per recovery window the
//!   environment that opened the circuit elects itself (1 write) and its failed probe
//!   reopens it (1 write). The election is due `recovery_timeout` after `opened_at`,
//!   which is whole seconds, and comes with that environment's next call; the reopen
//!   takes `opened_at` from the second the probe failed in, so each window lasts the
//!   recovery timeout plus the whole seconds the environment waited for its next call:
//!   1/(e^λ − 1) on average (nothing at 10 calls/s, 1/λ − 0.5 s for a rare caller).
//! - **The trip burst.** Environments that count `failure_threshold` failures of their
//!   own before a read shows them the trip each write one trip; all reach it at about the
//!   same time (`failure_threshold` / λ), so beyond the item's 1,000 write units in that
//!   second they are throttled (free, and each environment opens locally anyway).
//! - **Fleet counters** (an item per circuit and fleet window, not the circuit's item):
//!   at most one report per environment per report interval, and only a few from busy
//!   environments, whose own policy trips within the interval: they hold their failures
//!   back. Reports stop when the trip reaches each environment.
//!
//! - **A keyed circuit** (`--keys`): see [`keyed`].
//!
//! Every environment is taken to be invoked at the same rate; the figures are
//! expectations, not bounds, except where named a ceiling.

pub(crate) mod keyed;
pub(crate) mod output;

/// Read units a second one item (one partition) serves at most.
pub(crate) const ITEM_READ_UNITS_PER_S: f64 = 3_000.0;
/// Write units a second one item serves at most.
pub(crate) const ITEM_WRITE_UNITS_PER_S: f64 = 1_000.0;
/// The share of the item's read units a healthy fleet should stay under, leaving the rest
/// to the trip burst's re-reads and to throttled environments' retries.
pub(crate) const ADVISED_READ_SHARE: f64 = 0.5;
/// An eventually consistent GetItem of an item under 4 KB.
const READ_UNITS_PER_READ: f64 = 0.5;
/// On-demand prices, us-east-1.
const USD_PER_READ_UNIT: f64 = 0.125e-6;
const USD_PER_WRITE_UNIT: f64 = 0.625e-6;
/// How stale an eventually consistent read can be, at worst.
const REPLICA_LAG_S: f64 = 1.0;

/// The fleet and its traffic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Fleet {
    /// Warm execution environments calling through the circuit.
    pub(crate) environments: u32,
    /// Calls a second over the whole fleet.
    pub(crate) calls_per_second: f64,
}

impl Fleet {
    /// Calls a second per environment (λ).
    pub(crate) fn per_environment(&self) -> f64 {
        self.calls_per_second / f64::from(self.environments.max(1))
    }
}

/// The circuit's settings that set its load, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Settings {
    pub(crate) local_cache_max_age_s: f64,
    pub(crate) recovery_timeout_s: f64,
    pub(crate) failure_threshold: u32,
    /// `None`: no fleet-wide detection.
    pub(crate) report_interval_s: Option<f64>,
}

/// Requests and units a second on the circuit's item, and what they cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Load {
    pub(crate) reads_per_s: f64,
    pub(crate) read_units_per_s: f64,
    /// Every write of the protocol is 1 write unit, won or lost.
    pub(crate) write_units_per_s: f64,
    pub(crate) usd_per_million_calls: f64,
}

/// What `breaker capacity` prints.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Estimate {
    pub(crate) calls_per_environment: f64,
    pub(crate) healthy: Load,
    /// Open for good: the downstream still down at every probe.
    pub(crate) open: Load,
    /// From one opening of the item to the next, while open.
    pub(crate) recovery_window_s: f64,
    /// Trip writes when the downstream goes down.
    pub(crate) trip_writes: f64,
    /// Of them, those above the item's write units in their second.
    pub(crate) trip_writes_throttled: f64,
    /// Ceiling of the report write units a second on one fleet window's counters, while
    /// the fleet fails and before the trip reaches it (0: no fleet-wide detection).
    pub(crate) counter_write_units_per_s: f64,
    /// Environments are busy enough that their own policy trips within the report
    /// interval, so they hold their first failures back and the ceiling is not reached.
    pub(crate) reports_held_back: bool,
    /// The least `local_cache_max_age` that keeps healthy reads within
    /// [`ADVISED_READ_SHARE`] of the item's read units.
    pub(crate) cache_age_for_advised_s: f64,
    /// … within the item's read units.
    pub(crate) cache_age_for_limit_s: f64,
}

/// Eventually consistent reads a second over the fleet, each environment reading once per
/// cache age plus the wait for its next call.
fn reads_per_s(fleet: &Fleet, cache_age_s: f64) -> f64 {
    let rate = fleet.per_environment();
    f64::from(fleet.environments) * rate / (1.0 + rate * cache_age_s)
}

/// The least cache age whose reads take at most `read_units` a second.
fn cache_age_for(fleet: &Fleet, read_units: f64) -> f64 {
    let reads_allowed = read_units / READ_UNITS_PER_READ;
    let age = f64::from(fleet.environments) / reads_allowed - 1.0 / fleet.per_environment();
    age.max(0.0)
}

fn load(fleet: &Fleet, reads_per_s: f64, write_units_per_s: f64) -> Load {
    let read_units_per_s = reads_per_s * READ_UNITS_PER_READ;
    let usd_per_s = read_units_per_s * USD_PER_READ_UNIT + write_units_per_s * USD_PER_WRITE_UNIT;
    Load {
        reads_per_s,
        read_units_per_s,
        write_units_per_s,
        usd_per_million_calls: usd_per_s / fleet.calls_per_second * 1e6,
    }
}

/// The item's load for `fleet` under `settings`.
pub(crate) fn estimate(fleet: &Fleet, settings: &Settings) -> Estimate {
    let rate = fleet.per_environment();
    let envs = f64::from(fleet.environments);
    let reads = reads_per_s(fleet, settings.local_cache_max_age_s);
    // The whole seconds of an exponential wait at `rate`: Σ P(wait ≥ n) = 1 / (e^rate − 1).
    let window = settings.recovery_timeout_s + 1.0 / rate.exp_m1();
    // An environment sees the trip at its next read (uniform over its read cycle) plus the
    // replica lag; it trips on its own if its threshold comes first.
    let own_trip_after = f64::from(settings.failure_threshold) / rate;
    let read_cycle = settings.local_cache_max_age_s + 1.0 / rate;
    let tripping_share = (1.0 - (own_trip_after - REPLICA_LAG_S) / read_cycle).clamp(0.0, 1.0);
    let trip_writes = (envs * tripping_share).max(1.0);
    let counter_write_units_per_s = settings
        .report_interval_s
        .map_or(0.0, |interval| envs * rate.min(1.0 / interval));
    let reports_held_back = settings
        .report_interval_s
        .is_some_and(|interval| rate * interval >= f64::from(settings.failure_threshold));
    Estimate {
        calls_per_environment: rate,
        healthy: load(fleet, reads, 0.0),
        open: load(fleet, reads, 2.0 / window),
        recovery_window_s: window,
        trip_writes,
        trip_writes_throttled: (trip_writes - ITEM_WRITE_UNITS_PER_S).max(0.0),
        counter_write_units_per_s,
        reports_held_back,
        cache_age_for_advised_s: cache_age_for(fleet, ITEM_READ_UNITS_PER_S * ADVISED_READ_SHARE),
        cache_age_for_limit_s: cache_age_for(fleet, ITEM_READ_UNITS_PER_S),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> Settings {
        Settings {
            local_cache_max_age_s: 5.0,
            recovery_timeout_s: 30.0,
            failure_threshold: 5,
            report_interval_s: Some(1.0),
        }
    }

    fn fleet(environments: u32, calls_per_second: f64) -> Fleet {
        Fleet {
            environments,
            calls_per_second,
        }
    }

    fn close(actual: f64, expected: f64, tolerance: f64) -> bool {
        (actual - expected).abs() <= tolerance
    }

    #[test]
    fn a_busy_fleet_reads_once_per_cache_age_and_call_gap() {
        // The simulator's `outage`: 10,000 environments at 10 calls/s each.
        let fleet = fleet(10_000, 100_000.0);
        let e = estimate(&fleet, &defaults());
        assert_eq!(e.calls_per_environment, 10.0);
        assert!(close(e.healthy.reads_per_s, 10_000.0 / 5.1, 1e-6), "{e:?}");
        assert!(close(e.healthy.read_units_per_s, 980.39, 0.01), "{e:?}");
        assert_eq!(e.healthy.write_units_per_s, 0.0);
        // 980 RCU/s at $0.125 per million over 100,000 calls/s.
        assert!(
            close(e.healthy.usd_per_million_calls, 0.001_225, 1e-6),
            "{e:?}"
        );
        // Every environment reaches 5 failures (0.5 s) before its read shows the trip.
        assert_eq!(
            (e.trip_writes, e.trip_writes_throttled),
            (10_000.0, 9_000.0)
        );
        // The ceiling is a report per environment a second; busy ones hold theirs back.
        assert_eq!(e.counter_write_units_per_s, 10_000.0);
        assert!(e.reports_held_back);
    }

    #[test]
    fn open_costs_an_election_and_a_reopen_per_window() {
        let fleet = fleet(10_000, 100_000.0);
        let e = estimate(&fleet, &defaults());
        // The due second comes every 30 s; the call after it, within that second.
        assert!(close(e.recovery_window_s, 30.0, 1e-4), "{e:?}");
        assert!(close(e.open.write_units_per_s, 2.0 / 30.0, 1e-6), "{e:?}");
        assert_eq!(e.open.reads_per_s, e.healthy.reads_per_s);
        assert!(e.open.usd_per_million_calls > e.healthy.usd_per_million_calls);
    }

    #[test]
    fn the_cost_example_of_the_dynamodb_page() {
        // 50 environments, one million calls in an hour: at most 36,000 reads an hour.
        let fleet = fleet(50, 1e6 / 3600.0);
        let e = estimate(&fleet, &defaults());
        let reads_an_hour = e.healthy.reads_per_s * 3600.0;
        assert!(
            (34_000.0..=36_000.0).contains(&reads_an_hour),
            "{reads_an_hour}"
        );
        // ≈ $0.0023 the hour for its million calls.
        assert!(
            close(e.healthy.usd_per_million_calls, 0.0022, 0.0002),
            "{e:?}"
        );
        assert_eq!(e.cache_age_for_limit_s, 0.0, "far within the item's reads");
    }

    #[test]
    fn a_hundred_thousand_environments_need_a_longer_cache_age() {
        // docs/scale.md: 100,000 environments at 1 call/s read 10,000 RCU/s at 5 s, and
        // need about environments / 3,000 s to stay under half the item's reads.
        let fleet = fleet(100_000, 100_000.0);
        let e = estimate(&fleet, &defaults());
        assert!(close(
            e.healthy.read_units_per_s,
            100_000.0 * 0.5 / 6.0,
            1e-6
        ));
        assert!(close(
            e.cache_age_for_advised_s,
            100_000.0 / 3_000.0 - 1.0,
            1e-9
        ));
        assert!(close(
            e.cache_age_for_limit_s,
            100_000.0 / 6_000.0 - 1.0,
            1e-9
        ));
        let at_advised = Settings {
            local_cache_max_age_s: e.cache_age_for_advised_s,
            ..defaults()
        };
        let read_units = estimate(&fleet, &at_advised).healthy.read_units_per_s;
        assert!(close(read_units, 1_500.0, 1e-6), "{read_units}");
    }

    #[test]
    fn without_a_cache_every_call_reads() {
        let fleet = fleet(50, 278.0);
        let no_cache = Settings {
            local_cache_max_age_s: 0.0,
            ..defaults()
        };
        assert_eq!(estimate(&fleet, &no_cache).healthy.reads_per_s, 278.0);
    }

    #[test]
    fn a_quiet_fleet_reports_each_failure_and_trips_through_the_counters() {
        // The simulator's `sparse`: 1,000 environments, one call per 20 s each.
        let fleet = fleet(1_000, 50.0);
        let e = estimate(&fleet, &defaults());
        assert_eq!(e.counter_write_units_per_s, 50.0, "one report per failure");
        assert!(!e.reports_held_back);
        assert_eq!(
            e.trip_writes, 1.0,
            "no environment reaches 5 failures on its own"
        );
        // One call per 20 s: the window waits the opener's next call too, less the
        // half second `opened_at`'s rounding takes off on average.
        assert!(close(e.recovery_window_s, 49.5, 0.01), "{e:?}");
        let no_fleet = Settings {
            report_interval_s: None,
            ..defaults()
        };
        assert_eq!(estimate(&fleet, &no_fleet).counter_write_units_per_s, 0.0);
    }
}
