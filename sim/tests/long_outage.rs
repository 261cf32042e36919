//! The backoff of the open duration over a 20-minute outage, on a reduced fleet: the
//! fleet's failed probes fall from one per recovery window to a handful, and the cost is
//! a close up to one capped wait after the downstream is back.

use breaker_runtime::RecoveryBackoff;
use breaker_sim::fleet::run;
use breaker_sim::metrics::Summary;
use breaker_sim::scenario::Scenario;

/// The outage, from `OUTAGE_FROM_S` to `OUTAGE_UNTIL_S`.
const OUTAGE_FROM_S: u64 = 10;
const OUTAGE_UNTIL_S: u64 = 1210;

fn long_outage(backoff: RecoveryBackoff, seed: u64) -> Summary {
    let mut scenario = Scenario::named("long-outage")
        .expect("a scenario")
        .scaled_to(200);
    scenario.breaker.recovery_backoff = backoff;
    scenario.seed = seed;
    run(&scenario).expect("valid config").metrics.summary()
}

fn probe_failures(s: &Summary) -> u64 {
    s.downstream_failures - s.failed_non_probe_calls
}

/// The most probes that can fail in the outage with the doubling backoff (recovery 30 s,
/// factor 2, cap 300 s, a jitter taking at most a quarter off a backed-off wait): the
/// trip comes at 10 s at the earliest, and the n-th failed probe at the earliest after
/// 30, 45, 90, 180, then 225 s each: 40, 85, 175, 355, 580, 805, 1030 s; the next, at
/// 1255 s, is past the outage.
fn most_failures_with_backoff() -> u64 {
    let (mut at, mut failures) = (OUTAGE_FROM_S + 30, 0);
    let mut full = 30;
    while at < OUTAGE_UNTIL_S {
        failures += 1;
        full = (full * 2).min(300);
        at += full - full / 4;
    }
    failures
}

#[test]
fn backoff_cuts_the_failed_probes_of_a_long_outage_to_a_handful() {
    assert_eq!(most_failures_with_backoff(), 7);
    for seed in [1, 2] {
        let fixed = long_outage(RecoveryBackoff::none(), seed);
        let backed_off = long_outage(RecoveryBackoff::doubling(), seed);
        // Without backoff: one failed probe per 30 s window of the 1200 s outage.
        assert!(probe_failures(&fixed) >= 30, "seed {seed}: {fixed:?}");
        assert!(
            probe_failures(&backed_off) <= most_failures_with_backoff(),
            "seed {seed}: {backed_off:?}"
        );
        // Each window ends in one probe: the failed ones, then those that close.
        assert!(
            backed_off.probes <= most_failures_with_backoff() + 3,
            "seed {seed}: {backed_off:?}"
        );
        assert!(backed_off.windows * 4 <= fixed.windows, "seed {seed}");
        // The cost: the close waits for the capped window in which the downstream is back.
        let latency = backed_off.time_to_close_s.expect("closed after the outage");
        assert!(latency <= 300.0 + 10.0, "seed {seed}: {latency} s");
        assert_eq!(backed_off.closes_won, 1, "seed {seed}");
    }
}
