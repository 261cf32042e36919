//! What the fleet-scale tests share: the seeds they run, and a scenario's figures on a
//! reduced fleet whose item limits are scaled with it.

use breaker_runtime::RecoveryBackoff;
use breaker_sim::fleet::run;
use breaker_sim::metrics::Summary;
use breaker_sim::scenario::Scenario;

/// Every fleet-scale figure holds for each of these seeds.
pub const SEEDS: [u64; 3] = [1, 2, 3];

/// The figures of scenario `name` on `envs` environments (limits scaled), for
/// `duration_s` virtual seconds, with `seed`.
// Each test crate that includes this module uses one of the two.
#[allow(dead_code)]
pub fn summary(name: &str, envs: u32, duration_s: u64, seed: u64) -> Summary {
    let mut scenario = scaled(name, envs, duration_s, seed);
    // These figures are about windows of the recovery timeout: every opening waits it.
    scenario.breaker.recovery_backoff = RecoveryBackoff::none();
    run(&scenario).expect("valid config").metrics.summary()
}

/// [`summary`] with `share` (0 to 1) of the downstream's calls failing at random
/// throughout, instead of the scenario's own health schedule.
#[allow(dead_code)]
pub fn summary_failing(name: &str, envs: u32, duration_s: u64, seed: u64, share: f64) -> Summary {
    let scenario = scaled(name, envs, duration_s, seed).failing(share);
    run(&scenario).expect("valid config").metrics.summary()
}

/// [`summary`] with the breaker's default config, the recovery backoff included.
#[allow(dead_code)]
pub fn summary_with_defaults(name: &str, envs: u32, duration_s: u64, seed: u64) -> Summary {
    let scenario = scaled(name, envs, duration_s, seed);
    run(&scenario).expect("valid config").metrics.summary()
}

fn scaled(name: &str, envs: u32, duration_s: u64, seed: u64) -> Scenario {
    let mut scenario = Scenario::named(name).expect("a scenario").scaled_to(envs);
    scenario.duration_ms = duration_s * 1000;
    scenario.seed = seed;
    scenario
}
