//! Managed Instances at fleet scale (docs/scale.md, "Managed Instances"), on reduced fleets
//! of the managed shape (64 invocations at once per environment, 500 calls/s each; the
//! item's limits scaled with the fleet), over three seeds: an outage costs the fleet at
//! most the threshold plus the workers' calls per environment, a hanging downstream is
//! reached by at most as many calls per environment, one probe reaches the downstream at a
//! time, and 1 % of background errors never trip the circuit.
//! Environments that run one invocation at a time print as they did.

use breaker_sim::downstream::{Health, HealthSchedule};
use breaker_sim::fleet::run;
use breaker_sim::metrics::Summary;
use breaker_sim::scenario::Scenario;

mod support;

use support::SEEDS;

/// Environments of the reduced fleet (of 200).
const ENVS: u32 = 8;
/// The breaker's default failure threshold.
const THRESHOLD: u64 = 5;
/// Invocations a managed environment runs at once.
const WORKERS: u64 = 64;

fn managed(name: &str, duration_s: u64, seed: u64) -> Scenario {
    let mut scenario = Scenario::named(name).expect("a scenario").scaled_to(ENVS);
    scenario.duration_ms = duration_s * 1000;
    scenario.seed = seed;
    assert_eq!(u64::from(scenario.concurrency), WORKERS);
    scenario
}

fn summary(scenario: &Scenario) -> Summary {
    run(scenario).expect("valid config").metrics.summary()
}

fn probes_at_downstream(s: &Summary) -> u32 {
    s.managed
        .as_ref()
        .expect("a managed run")
        .max_probes_at_downstream
}

#[test]
fn an_outage_costs_each_environment_at_most_the_threshold_and_its_workers() {
    for seed in SEEDS {
        // Down from 10 s to 50 s: a failed probe at about 40 s, the close after 70 s.
        let mut scenario = managed("managed-outage", 90, seed);
        scenario.health = HealthSchedule::new(vec![(10_000, Health::Down), (50_000, Health::Up)]);
        let s = summary(&scenario);
        assert!(s.trips_won >= 1, "seed {seed}: {s:?}");
        assert!(
            s.failed_non_probe_calls <= u64::from(ENVS) * (THRESHOLD + WORKERS),
            "seed {seed}: {s:?}"
        );
        // An environment whose trip write lost to another's may read the item as it was
        // before the trip (a read lags up to 1 s) and close once more: twice at most.
        assert!(
            u64::from(s.max_non_probe_calls_per_env_while_failing) <= 2 * (THRESHOLD + WORKERS),
            "seed {seed}: {s:?}"
        );
        assert_eq!(probes_at_downstream(&s), 1, "seed {seed}: {s:?}");
        assert_eq!(s.closes_won, 1, "seed {seed}: {s:?}");
        assert_eq!(s.max_elections_won_per_window, 1, "seed {seed}");
    }
}

#[test]
fn a_hanging_downstream_is_reached_at_most_by_the_threshold_and_each_worker() {
    for seed in SEEDS {
        // The hang starts at 10 s; the first calls are abandoned at the deadline minus the
        // margin, 9 s after they started, and trip the circuit.
        let s = summary(&managed("managed-hang", 30, seed));
        assert!(s.trips_won >= 1, "seed {seed}: {s:?}");
        assert!(
            u64::from(s.max_non_probe_calls_per_env_while_failing) <= THRESHOLD + WORKERS,
            "seed {seed}: {s:?}"
        );
        assert_eq!(s.killed_invocations, 0, "seed {seed}: abandoned in time");
        assert!(s.abandoned_calls > 0, "seed {seed}");
        assert!(probes_at_downstream(&s) <= 1, "seed {seed}: {s:?}");
    }
}

#[test]
fn one_percent_of_background_errors_never_trips() {
    for seed in SEEDS {
        let s = summary(&managed("managed-background-1pct", 60, seed));
        assert!(s.downstream_failures > 0, "seed {seed}: errors happened");
        assert_eq!(s.trips_won, 0, "seed {seed}: {s:?}");
    }
}

#[test]
fn environments_of_one_invocation_at_a_time_print_as_before() {
    let mut scenario = Scenario::named("outage").expect("outage").scaled_to(50);
    scenario.duration_ms = 20_000;
    assert_eq!(scenario.concurrency, 1);
    let s = summary(&scenario);
    assert_eq!(s.managed, None);
    let json = breaker_sim::report::json_line(&s).expect("serializes");
    assert!(!json.contains("managed"), "{json}");
    // The same environments at concurrency 2 are a managed run.
    scenario.concurrency = 2;
    let two = summary(&scenario);
    assert_eq!(two.managed.map(|m| m.concurrency), Some(2));
}
