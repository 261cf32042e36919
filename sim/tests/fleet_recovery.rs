//! The fleet recovers as fast as it stops (docs/scale.md), with the default config (no
//! recovery backoff), on reduced fleets whose item limits are scaled with them, over three
//! seeds: within the recovery timeout and 5 s of the downstream's return, and, a quiet
//! fleet closes within seconds of the first instant it may elect, whichever environments
//! probe; a busy fleet closes as fast as its prober calls, with one probe in flight and a
//! handful of election and hand-over writes per window.

mod support;

use breaker_sim::metrics::Summary;
use support::{SEEDS, summary_with_defaults as summary};

/// What every recovery must show: it closed soon, one probe at a time, few writes.
fn assert_recovers_within(s: &Summary, seed: u64, bound_s: f64) {
    let latency = s.close_latency_s.expect("closed after the recovery");
    assert!(
        latency <= bound_s,
        "seed {seed}: close latency {latency} s: {s:?}"
    );
    // What a user waits: from the downstream's return, at most one recovery window (30 s)
    // and the probes.
    let waited = s.time_to_close_s.expect("closed after the return");
    assert!(
        waited <= 35.0,
        "seed {seed}: closed {waited} s after the return: {s:?}"
    );
    assert_eq!(s.max_probes_in_flight, 1, "seed {seed}: {s:?}");
    assert!(s.max_probe_writes_per_window <= 20, "seed {seed}: {s:?}");
    assert_eq!(s.throttled_outside_trip_burst, 0, "seed {seed}: {s:?}");
}

#[test]
fn a_light_fleet_closes_within_seconds_of_its_recovery_window() {
    for seed in SEEDS {
        // 50 environments, one call per 20 s each: 2.5 calls a second in all.
        let s = summary("light", 50, 200, seed);
        assert_recovers_within(&s, seed, 10.0);
    }
}

#[test]
fn a_sparse_fleet_closes_within_seconds() {
    for seed in SEEDS {
        let s = summary("sparse", 1_000, 300, seed);
        assert_recovers_within(&s, seed, 10.0);
    }
}

#[test]
fn a_sparser_larger_fleet_closes_as_soon() {
    for seed in SEEDS {
        // A fifth of sparse-10k: 2,000 environments at one call per 50 s.
        let s = summary("sparse-10k", 2_000, 300, seed);
        assert_recovers_within(&s, seed, 10.0);
    }
}

#[test]
fn a_busy_fleet_closes_as_fast_as_its_prober_calls() {
    for seed in SEEDS {
        // A tenth of outage: 1,000 environments at 10 calls a second each.
        let s = summary("outage", 1_000, 300, seed);
        // Three probes, 0.1 s apart in the busy prober, after its election.
        assert_recovers_within(&s, seed, 2.0);
        assert_eq!(s.max_election_writes_per_window, 1, "seed {seed}: {s:?}");
    }
}
