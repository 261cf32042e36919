//! Fleet-wide detection and call deadlines at fleet scale (docs/scale.md), on reduced
//! fleets whose item limits are scaled with them, over three seeds: quiet fleets stop
//! within a handful of failures, a hanging downstream opens the circuit within two calls
//! per environment and one probe at a time, each within 2 s of the first failure;
//! background errors of a busy fleet (0.1 % and 1 %) never trip it, and a healthy fleet
//! writes nothing.

use breaker_sim::fleet::run;
use breaker_sim::scenario::Scenario;

mod support;

use support::{SEEDS, summary, summary_failing};

#[test]
fn a_sparse_fleet_stops_within_a_handful_of_failures() {
    for seed in SEEDS {
        // 1,000 environments at one call per 20 s: 50 calls a second in all.
        let s = summary("sparse", 1_000, 60, seed);
        assert_eq!(s.trips_won, 1, "seed {seed}: {s:?}");
        assert!(s.failed_non_probe_calls <= 100, "seed {seed}: {s:?}");
        assert!(
            s.first_failure_to_trip_s.expect("tripped") <= 2.0,
            "seed {seed}"
        );
        assert_eq!(s.throttled_outside_trip_burst, 0, "seed {seed}");
    }
}

#[test]
fn a_sparser_larger_fleet_stops_as_soon() {
    for seed in SEEDS {
        // A fifth of sparse-10k: 2,000 environments at one call per 50 s.
        let s = summary("sparse-10k", 2_000, 60, seed);
        assert_eq!(s.trips_won, 1, "seed {seed}: {s:?}");
        assert!(
            s.failed_non_probe_calls <= 300 / 5 + 10,
            "seed {seed}: {s:?}"
        );
    }
}

#[test]
fn ten_thousand_quiet_environments_trip_within_two_seconds_of_the_first_failure() {
    for seed in SEEDS {
        // sparse-10k at full size (200 calls a second; a fifth of it needs 3 s), up to
        // 20 s after the outage starts.
        let s = summary("sparse-10k", 10_000, 30, seed);
        assert_eq!(s.trips_won, 1, "seed {seed}: {s:?}");
        assert!(s.failed_non_probe_calls <= 300, "seed {seed}: {s:?}");
        assert!(
            s.first_failure_to_trip_s.expect("tripped") <= 2.0,
            "seed {seed}: {s:?}"
        );
    }
}

#[test]
fn a_hanging_downstream_opens_the_circuit_within_two_calls_per_environment() {
    for seed in SEEDS {
        let s = summary("hang", 1_000, 200, seed);
        assert!(s.trips_won >= 1, "seed {seed}: {s:?}");
        assert!(
            s.max_non_probe_calls_per_env_while_failing <= 2,
            "seed {seed}: {s:?}"
        );
        assert_eq!(s.max_probes_in_flight, 1, "seed {seed}");
        assert!(
            s.first_failure_to_trip_s.expect("tripped") <= 2.0,
            "seed {seed}: {s:?}"
        );
        assert!(s.max_election_writes_per_window <= 20, "seed {seed}");
        assert_eq!(
            s.killed_invocations, 0,
            "every hung call was abandoned in time"
        );
        assert!(s.abandoned_calls > 0, "seed {seed}");
    }
}

#[test]
fn background_errors_of_a_busy_fleet_never_trip() {
    for seed in SEEDS {
        let s = summary("background-errors", 1_000, 60, seed);
        assert!(s.downstream_failures > 0, "seed {seed}: errors happened");
        assert_eq!(s.trips_won, 0, "seed {seed}: {s:?}");
        assert_eq!(s.trip_writes, 0, "seed {seed}");
        // Reports stay far below the (scaled) write limit of the counters' item.
        assert!(s.max_report_wcu_per_s <= 500 / 10, "seed {seed}: {s:?}");
    }
}

#[test]
fn background_errors_of_one_percent_in_a_busy_fleet_never_trip() {
    for seed in SEEDS {
        let s = summary_failing("background-errors", 1_000, 60, seed, 0.01);
        assert!(s.downstream_failures > 0, "seed {seed}: errors happened");
        assert_eq!(s.trips_won, 0, "seed {seed}: {s:?}");
    }
}

#[test]
fn a_busy_outage_keeps_one_probe_and_reports_within_their_bound() {
    for seed in SEEDS {
        let s = summary("outage", 300, 200, seed);
        assert_eq!(s.max_probes_in_flight, 1, "seed {seed}");
        assert_eq!(s.max_elections_won_per_window, 1, "seed {seed}");
        assert_eq!(s.throttled_outside_trip_burst, 0, "seed {seed}: {s:?}");
        // 500 WCU/s of 10,000 environments, scaled to 300.
        assert!(s.max_report_wcu_per_s <= 15, "seed {seed}: {s:?}");
    }
}

#[test]
fn a_healthy_fleet_writes_nothing() {
    let mut scenario = Scenario::named("outage").expect("outage").scaled_to(300);
    scenario.health = breaker_sim::downstream::HealthSchedule::always_up();
    scenario.duration_ms = 60_000;
    let s = run(&scenario).expect("valid config").metrics.summary();
    assert_eq!(s.write_requests, 0, "{s:?}");
    assert_eq!(s.report_writes, 0);
}
