//! The simulator's behaviour on reduced fleets, within CI's time in a debug build:
//! determinism for a seed, the 16-process test's result (one probe per window) reproduced,
//! and limits scaled with the fleet so they still bind.

use breaker_sim::fleet::run;
use breaker_sim::report::json_line;
use breaker_sim::scenario::Scenario;

fn reduced(name: &str, envs: u32, duration_s: u64) -> Scenario {
    let mut scenario = Scenario::named(name).expect("a scenario").scaled_to(envs);
    scenario.duration_ms = duration_s * 1000;
    scenario
}

fn json_and_series(scenario: &Scenario) -> (String, String) {
    let run = run(scenario).expect("valid config");
    let json = json_line(&run.metrics.summary()).expect("serializable");
    let series = serde_json::to_string(run.metrics.seconds()).expect("serializable");
    (json, series)
}

#[test]
fn the_same_seed_gives_the_same_figures() {
    for scenario in [
        reduced("outage", 200, 200),
        reduced("flapping", 50, 120),
        reduced("store-down-while-open", 100, 150),
    ] {
        let first = json_and_series(&scenario);
        assert_eq!(first, json_and_series(&scenario), "{}", scenario.name);
        let mut other_seed = scenario.clone();
        other_seed.seed += 1;
        assert_ne!(first.0, json_and_series(&other_seed).0, "{}", scenario.name);
    }
}

#[test]
fn sixteen_environments_probe_one_at_a_time_and_close_after_recovery() {
    // As the 16-process test: real DynamoDB limits, which 16 environments never reach.
    let mut scenario = Scenario::named("outage").expect("outage");
    // The 16-process test counts windows of the recovery timeout.
    scenario.breaker.recovery_backoff = breaker_runtime::RecoveryBackoff::none();
    scenario.envs = 16;
    scenario.duration_ms = 200_000;
    let run = run(&scenario).expect("valid config");
    let s = run.metrics.summary();
    assert_eq!(s.throttled_requests, 0);
    assert_eq!(s.trips_won, 1);
    assert!(
        s.windows >= 4,
        "the 120 s outage spans 4 windows: {}",
        s.windows
    );
    assert_eq!(s.max_probes_in_flight, 1);
    assert_eq!(s.max_elections_won_per_window, 1);
    for window in run.metrics.windows() {
        assert_eq!(window.elections_won, 1, "{window:?}");
    }
    assert_eq!(s.closes_won, 1);
    let time_to_close = s.time_to_close_s.expect("closed after the recovery");
    assert!(time_to_close <= 31.0 + 1.0, "{time_to_close}");
    // Every environment admits calls again within a cache age (+ lag and arrival gap).
    assert!(s.max_close_propagation_s.expect("admitted after close") <= 7.0);
}

#[test]
fn limits_scaled_with_the_fleet_still_bind() {
    let scenario = reduced("outage", 200, 60);
    assert_eq!(scenario.model.write_units_per_s, 20);
    let s = run(&scenario).expect("valid config").metrics.summary();
    // Every environment trips on its own before it sees the open state: the trip burst
    // meets the (scaled) write limit as the full fleet meets DynamoDB's.
    assert_eq!(s.max_wcu_per_s, 20);
    assert!(s.throttled_in_trip_burst > 0);
}
