//! Brownouts on reduced fleets (the item's limits and the capacity scaled with them): the
//! adaptive policy at its recommended setting serves a half-capacity downstream at its
//! capacity where the consecutive policy idles it, sheds almost nothing of a downstream
//! failing 30 % of calls, turns a total outage away within two seconds, and sheds nothing
//! of background errors.

mod support;

use breaker_runtime::AdaptivePolicy;
use breaker_sim::fleet::run;
use breaker_sim::metrics::Summary;
use breaker_sim::scenario::Scenario;
use support::SEEDS;

fn reduced(name: &str, envs: u32, duration_s: u64, seed: u64, adaptive: bool) -> Scenario {
    let mut scenario = Scenario::named(name).expect("a scenario").scaled_to(envs);
    scenario.duration_ms = duration_s * 1000;
    scenario.seed = seed;
    scenario.breaker.adaptive = adaptive.then(AdaptivePolicy::default);
    scenario
}

fn summary(scenario: &Scenario) -> Summary {
    run(scenario).expect("valid config").metrics.summary()
}

#[test]
fn a_half_capacity_downstream_is_served_at_its_capacity() {
    for seed in SEEDS {
        let adaptive = summary(&reduced("brownout-capacity", 200, 140, seed, true));
        let b = &adaptive.brownout;
        let goodput = b.goodput_share_while_limited.expect("limited seconds");
        let failed = b
            .failed_share_of_admitted_while_limited
            .expect("admitted calls");
        assert!(goodput >= 0.9, "seed {seed}: goodput {goodput}");
        // 10 % on the full fleet; a fifth of it draws fewer calls per second, and each
        // second's spread past the capacity weighs more.
        assert!(failed <= 0.13, "seed {seed}: failed {failed}");
        assert_eq!(
            adaptive.trips_won, 0,
            "seed {seed}: load sheds never open it"
        );
        assert!(b.shed_calls > 0);
        let consecutive = summary(&reduced("brownout-capacity", 200, 140, seed, false));
        let idle = consecutive
            .brownout
            .goodput_share_while_limited
            .expect("limited");
        assert!(idle < 0.6, "seed {seed}: all or nothing idles it: {idle}");
    }
}

#[test]
fn a_downstream_failing_thirty_percent_is_not_shed() {
    for seed in SEEDS {
        let s = summary(&reduced("flapping", 200, 120, seed, true));
        assert!(
            s.rejected * 100 <= s.calls * 35,
            "seed {seed}: {} of {}",
            s.rejected,
            s.calls
        );
        assert_eq!(s.trips_won, 0, "seed {seed}");
        let all_or_nothing = summary(&reduced("flapping", 200, 120, seed, false));
        assert!(
            all_or_nothing.rejected * 2 > all_or_nothing.calls,
            "seed {seed}"
        );
    }
}

#[test]
fn a_total_outage_is_turned_away_within_two_seconds() {
    for seed in SEEDS {
        let s = summary(&reduced("outage", 200, 60, seed, true));
        let to_95 = s.brownout.outage_to_95_turned_away_s.expect("turned away");
        assert!(to_95 <= 2.0, "seed {seed}: {to_95} s");
        assert!(s.trips_won >= 1, "seed {seed}: the outage opens it");
    }
}

#[test]
fn background_errors_are_not_shed() {
    for seed in SEEDS {
        let s = summary(&reduced("background-errors", 200, 60, seed, true));
        assert_eq!((s.brownout.shed_calls, s.rejected), (0, 0), "seed {seed}");
    }
}
