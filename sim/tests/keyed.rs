//! Keyed circuits at fleet scale (the targets docs/scale.md gives), on reduced fleets:
//! 100 environments calling 500 keys (Zipf 1), the item limits and the cap scaled with
//! them, over three seeds. The key at rank 100 down: it fails about as often as one circuit
//! guarding only its calls, no other key is refused, and reads stay those of one plain
//! circuit; 10 % of the keys down: each opens, no healthy key is refused; 90 % down: open
//! keys never pass the cap; a healthy fleet writes nothing and reads only the index; every
//! key failing at 5 %: none opens.

mod support;

use breaker_sim::fleet::run;
use breaker_sim::keyed_metrics::KeyedSummary;
use breaker_sim::scenario::Scenario;
use support::SEEDS;

const ENVS: u32 = 100;
const DURATION_S: u64 = 200;

fn figures(name: &str, seed: u64) -> KeyedSummary {
    figures_capped(name, seed, None)
}

/// [`figures`] with the keyed breakers' cap set to `cap` (`None`: the scenario's).
fn figures_capped(name: &str, seed: u64, cap: Option<u32>) -> KeyedSummary {
    let mut scenario = Scenario::named(name).expect("a scenario").scaled_to(ENVS);
    if let (Some(keys), Some(cap)) = (scenario.keys.as_mut(), cap) {
        keys.max_open_keys = Some(cap);
    }
    scenario.duration_ms = DURATION_S * 1000;
    scenario.seed = seed;
    run(&scenario)
        .expect("valid config")
        .keyed
        .expect("a keyed scenario")
}

fn reads_per_s(s: &KeyedSummary) -> f64 {
    s.index_reads_per_s + s.item_reads_per_s
}

#[test]
fn the_rank_100_key_fails_as_one_circuit_of_its_own_would_and_no_other_key_is_refused() {
    for seed in SEEDS {
        let keyed = figures("keyed-rank100", seed);
        let alone = figures("keyed-rank100-alone", seed);
        let one = figures("keyed-rank100-one-circuit", seed);
        assert_eq!(keyed.failing_keys_opened, 1, "seed {seed}: {keyed:?}");
        assert_eq!(keyed.rejected_calls_to_healthy, 0, "seed {seed}: {keyed:?}");
        assert!(alone.failed_calls_to_failing > 0, "seed {seed}: {alone:?}");
        assert!(
            keyed.failed_calls_to_failing <= 2 * alone.failed_calls_to_failing,
            "seed {seed}: keyed {keyed:?}, alone {alone:?}"
        );
        // One plain circuit for every key never trips on one key's failures: the
        // dilution a circuit per key answers.
        assert_eq!(one.failing_keys_opened, 0, "seed {seed}: {one:?}");
        assert!(
            reads_per_s(&keyed) <= 1.2 * reads_per_s(&one),
            "seed {seed}: keyed {keyed:?}, one circuit {one:?}"
        );
        assert_eq!(keyed.unindexed_open_keys, 0, "seed {seed}");
    }
}

/// Each failing key opens, so one key's outage stays that key's: the key's rule opens the
/// keys called too rarely for the circuit's rule (ranks past about 450 at full scale), so
/// all but a few of the coldest open, and every key that opens on a plain circuit of its
/// own opens keyed too. Failed calls stay within 10 % of the failing keys' calls.
#[test]
fn with_a_tenth_of_the_keys_down_each_opens_as_on_a_circuit_of_its_own() {
    for seed in SEEDS {
        let s = figures("keyed-10pct", seed);
        let plain = figures("keyed-10pct-plain-per-key", seed);
        assert_eq!(s.failing_keys, 50);
        for rank in &plain.opened_failing_ranks {
            assert!(
                s.opened_failing_ranks.contains(rank),
                "seed {seed}: rank {rank} opens on a circuit of its own only: {s:?}"
            );
        }
        assert!(s.failing_keys_opened >= 48, "seed {seed}: {s:?}");
        assert!(
            s.failing_keys_opened > plain.failing_keys_opened,
            "seed {seed}: the key's rule opens what a circuit's does not: {s:?}"
        );
        assert!(
            s.failed_calls_to_failing * 10 <= s.calls_to_failing,
            "seed {seed}: {s:?}"
        );
        assert_eq!(s.rejected_calls_to_healthy, 0, "seed {seed}: {s:?}");
        assert_eq!(s.unindexed_open_keys, 0, "seed {seed}");
    }
}

/// Every key's calls failing at 5 % for 300 s: the key's rule opens none.
#[test]
fn background_errors_on_every_key_open_none() {
    for seed in SEEDS {
        let mut scenario = Scenario::named("keyed-background-5pct")
            .expect("a scenario")
            .scaled_to(ENVS);
        scenario.seed = seed;
        let s = run(&scenario).expect("valid config").keyed.expect("keyed");
        assert_eq!(s.failing_keys, 500);
        assert!(s.failed_calls_to_failing > 0, "seed {seed}: {s:?}");
        assert_eq!(s.failing_keys_opened, 0, "seed {seed}: {s:?}");
    }
}

/// Suspicions take no slot, so at the scaled cap (100) fewer keys open than it allows in
/// this short run: a cap of 40 is one the open keys reach.
#[test]
fn with_most_keys_down_open_keys_never_pass_the_cap() {
    for seed in SEEDS {
        let s = figures_capped("keyed-90pct", seed, Some(40));
        assert_eq!((s.failing_keys, s.cap), (450, 40));
        // The cap binds: the open keys reach it (the environments' copies then refuse
        // further trips without a write, so the store may count no refusal).
        assert_eq!(
            s.max_index_open_keys, s.cap,
            "the cap binds: seed {seed}: {s:?}"
        );
        assert!(s.max_open_keys <= s.cap, "seed {seed}: {s:?}");
        assert!(s.max_index_open_keys <= s.cap, "seed {seed}: {s:?}");
        assert_eq!(s.unindexed_open_keys, 0, "seed {seed}");
        assert_eq!(s.rejected_calls_to_healthy, 0, "seed {seed}: {s:?}");
    }
}

#[test]
fn a_healthy_fleet_writes_nothing_and_reads_only_the_index() {
    for seed in SEEDS {
        let s = figures("keyed-healthy", seed);
        assert_eq!(s.writes, 0, "seed {seed}: {s:?}");
        assert_eq!(s.item_reads_per_s, 0.0, "seed {seed}: {s:?}");
        assert!(s.index_reads_per_s > 0.0, "seed {seed}: {s:?}");
        assert_eq!(s.rejected_calls_to_healthy, 0, "seed {seed}");
    }
}

#[test]
fn a_keyed_run_is_the_same_for_the_same_seed() {
    let mut scenario = Scenario::named("keyed-90pct")
        .expect("a scenario")
        .scaled_to(50);
    scenario.duration_ms = 60_000;
    let once = run(&scenario).expect("valid config").keyed;
    assert!(once.as_ref().is_some_and(|s| s.writes > 0), "{once:?}");
    assert_eq!(once, run(&scenario).expect("valid config").keyed);
}
