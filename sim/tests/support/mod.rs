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
pub fn summary(name: &str, envs: u32, duration_s: u64, seed: u64) -> Summary {
    let mut scenario = Scenario::named(name).expect("a scenario").scaled_to(envs);
    scenario.duration_ms = duration_s * 1000;
    scenario.seed = seed;
    // These figures are about windows of the recovery timeout: every opening waits it.
    scenario.breaker.recovery_backoff = RecoveryBackoff::none();
    run(&scenario).expect("valid config").metrics.summary()
}
