//! Quiet fleets with background errors (docs/scale.md, "Detection quality"), on reduced
//! fleets whose item limits are scaled with them, over three seeds: background errors of
//! 0.5 to 5 % of the calls never trip the fleet rule, and the reports they cause stay within
//! 5 WCU/s per 1,000 environments; an outage that starts in a quiet fleet already failing
//! 1 % of its calls at random opens the circuit as soon, and costs at most twice the failed
//! calls of the same fleet without the background.

mod support;

use support::{SEEDS, summary, summary_failing};

#[test]
fn background_errors_of_quiet_fleets_never_trip_the_fleet_rule() {
    for seed in SEEDS {
        for share in [0.005, 0.02, 0.05] {
            // A fifth of 10,000 × 1 call per 50 s, and 1,000 × 1 call per 20 s.
            for (name, envs) in [("sparse-10k", 2_000), ("sparse", 1_000)] {
                let s = summary_failing(name, envs, 120, seed, share);
                assert!(
                    s.downstream_failures > 0,
                    "{name} seed {seed}: errors happened"
                );
                assert_eq!(s.fleet_trips_won, 0, "{name} {share} seed {seed}: {s:?}");
                assert_eq!(s.trips_won, 0, "{name} {share} seed {seed}: {s:?}");
            }
        }
    }
}

#[test]
fn a_quiet_fleet_failing_five_percent_writes_at_most_five_wcu_per_thousand_environments() {
    for seed in SEEDS {
        let s = summary_failing("sparse-10k", 2_000, 120, seed, 0.05);
        assert!(
            s.suspect_writes > 0,
            "seed {seed}: the errors raised suspicions"
        );
        let per_thousand = s.wcu_total as f64 / 120.0 / 2.0;
        assert!(
            per_thousand <= 5.0,
            "seed {seed}: {per_thousand} WCU/s: {s:?}"
        );
    }
}

#[test]
fn an_outage_in_a_quiet_fleet_already_failing_opens_as_soon_as_in_a_clean_one() {
    for seed in SEEDS {
        // A fifth of sparse-10k-noisy: 2,000 environments at one call per 50 s.
        let noisy = summary("sparse-10k-noisy", 2_000, 200, seed);
        let clean = summary("sparse-10k", 2_000, 200, seed);
        assert!(noisy.trips_won >= 1, "seed {seed}: {noisy:?}");
        assert!(
            noisy.failed_non_probe_calls <= 2 * clean.failed_non_probe_calls,
            "seed {seed}: {} failed with the background, {} without",
            noisy.failed_non_probe_calls,
            clean.failed_non_probe_calls
        );
        let waited = noisy.time_to_close_s.expect("closed after the outage");
        assert!(waited <= 35.0, "seed {seed}: {waited} s");
    }
}
