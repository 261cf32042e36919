//! Quiet fleets with background errors (docs/scale.md, "Detection quality"), on reduced
//! fleets whose item limits are scaled with them, over three seeds: an outage that starts
//! in a quiet fleet already failing 1 % of its calls at random opens the circuit as soon,
//! and costs at most twice the failed calls of the same fleet without the background.

mod support;

use support::{SEEDS, summary};

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
