//! A downstream with a capacity, and one that answers "retry after", on reduced fleets (the
//! item's limits and the capacity scaled with them): the capacity sheds the calls past it
//! and slows the ones it serves, an unlimited capacity changes nothing, a throttling
//! answer's hint reaches the handler, and the two return scenarios report their figures.

mod support;

use breaker_sim::downstream::{Capacity, CapacitySchedule, Downstream, Health};
use breaker_sim::fleet::run;
use breaker_sim::invocation::CallError;
use breaker_sim::metrics::Summary;
use breaker_sim::report::{json_line, rows};
use breaker_sim::scenario::Scenario;
use support::SEEDS;

fn reduced(name: &str, envs: u32, duration_s: u64, seed: u64) -> Scenario {
    let mut scenario = Scenario::named(name).expect("a scenario").scaled_to(envs);
    scenario.duration_ms = duration_s * 1000;
    scenario.seed = seed;
    scenario
}

fn summary(scenario: &Scenario) -> Summary {
    run(scenario).expect("valid config").metrics.summary()
}

#[test]
fn the_capacity_limits_the_calls_served_each_second_and_slows_the_ones_it_serves() {
    let scenario = reduced("recovery-capacity", 1_000, 300, 1);
    // Scaled with the fleet: 300 calls/s at the return, 1,000 at the end of the ramp.
    assert_eq!(scenario.capacity.at(90_000), Some(300));
    assert_eq!(scenario.capacity.at(210_000), Some(1_000));
    let mut downstream = Downstream::new(
        scenario.downstream_latency_ms,
        scenario.health.clone(),
        scenario.seed,
    )
    .with_capacity(scenario.capacity.clone());
    let replies: Vec<_> = (0..400)
        .filter_map(|i| downstream.call(90_000 + i))
        .collect();
    let served: Vec<_> = replies.iter().filter(|r| r.result.is_ok()).collect();
    assert_eq!(served.len(), 300);
    assert!(replies[300..].iter().all(|r| r.result.is_err()));
    // 50 ms unloaded; 2 × at half the capacity; 10 × from 90 % of it.
    assert_eq!(served[0].latency_ms, 50);
    assert_eq!(served[149].latency_ms, 100);
    assert_eq!(served[299].latency_ms, 500);
    assert_eq!(downstream.load_per_second()[90], 400);
}

#[test]
fn an_unlimited_capacity_changes_no_figure() {
    for name in ["outage", "flapping"] {
        let scenario = reduced(name, 100, 150, 1);
        let plain = summary(&scenario);
        let explicit = summary(&Scenario {
            capacity: CapacitySchedule::new(vec![(0, Capacity::Unlimited)]),
            ..scenario.clone()
        });
        assert_eq!(plain, explicit, "{name}");
        assert!(plain.capacity.capacity_per_s.iter().all(Option::is_none));
        // A finite capacity never reached slows no call (each rounds to the base latency)
        // and sheds none: every figure but the capacity series, and the brownout figures
        // measured against it, stays.
        let mut roomy = summary(&Scenario {
            capacity: CapacitySchedule::new(vec![(0, Capacity::PerSecond(1_000_000_000))]),
            ..scenario
        });
        assert!(roomy.capacity.capacity_per_s.iter().all(Option::is_some));
        assert_eq!(roomy.capacity.admitted_above_capacity, 0, "{name}");
        roomy.capacity.capacity_per_s = plain.capacity.capacity_per_s.clone();
        let served = roomy.brownout.served_while_limited;
        assert_eq!(
            served,
            roomy.downstream_calls - roomy.downstream_failures,
            "{name}"
        );
        roomy.brownout = plain.brownout.clone();
        assert_eq!(plain, roomy, "{name}");
    }
}

#[test]
fn a_throttling_answer_carries_its_retry_after_to_the_handler() {
    let scenario = Scenario::named("throttle-retry-after").expect("a scenario");
    assert_eq!(
        scenario.health.at(45_000),
        Health::Throttling {
            retry_after_ms: 20_000
        }
    );
    let mut downstream = Downstream::new(50, scenario.health.clone(), 1);
    let error = downstream
        .call(45_000)
        .and_then(|reply| reply.result.err())
        .expect("a throttling answer");
    assert_eq!(CallError::from(error).retry_after_ms(), Some(20_000));
    for seed in SEEDS {
        let s = summary(&reduced("throttle-retry-after", 100, 200, seed));
        // Every failure is a throttling answer, and the handler got its hint.
        assert!(s.downstream_failures > 0, "seed {seed}");
        assert_eq!(
            s.capacity.retry_after_answers, s.downstream_failures,
            "seed {seed}"
        );
        assert!(s.trips_won >= 1, "seed {seed}: {s:?}");
        assert_eq!(s.capacity.returned_at_s, Some(90.0));
        assert_eq!(s.capacity.failed_calls_after_return, Some(0), "seed {seed}");
        assert_eq!(s.capacity.reopens_after_return, Some(0), "seed {seed}");
        let back = s
            .capacity
            .full_rate_after_return_s
            .expect("back to full rate");
        // Closed at least a probe's round after the return, within two recovery timeouts.
        assert!(back > 0.0 && back <= 60.0, "seed {seed}: {back}");
    }
}

/// With no ramp in the breaker, the fleet closes onto a downstream back at 30 % of its
/// load, floods it past its capacity, and trips again: the figures part 2 will improve.
#[test]
fn back_at_a_third_of_its_load_the_downstream_is_flooded_past_its_capacity() {
    for seed in SEEDS {
        let s = summary(&reduced("recovery-capacity", 1_000, 300, seed));
        let c = &s.capacity;
        assert_eq!(c.returned_at_s, Some(90.0));
        assert_eq!(c.full_rate_per_s, 1_000.0);
        let above = c.admitted_above_capacity_after_return.expect("a return");
        assert!(above > 0, "seed {seed}: {c:?}");
        assert!(c.admitted_above_capacity >= above);
        assert!(
            c.reopens_after_return.expect("a return") >= 1,
            "seed {seed}"
        );
        // Every call shed after the return failed (but the few still in flight at the end).
        let failed = c.failed_calls_after_return.expect("a return");
        assert!(
            failed > 0 && failed + 100 >= above,
            "seed {seed}: {failed} < {above}"
        );
        let back = c.full_rate_after_return_s.expect("back to full rate");
        assert!(back >= 30.0, "seed {seed}: {back}");
        assert_eq!(c.admitted_per_s.len(), 300);
        assert_eq!(c.capacity_per_s[150], Some(650));
        assert_eq!(c.retry_after_answers, 0);
        // Down then up: no call reached the downstream past the first seconds of the
        // outage, and thousands after the close.
        assert!(
            c.admitted_per_s[60..90].iter().all(|n| *n < 5),
            "seed {seed}"
        );
        assert!(
            c.admitted_per_s[250..].iter().all(|n| *n > 900),
            "seed {seed}"
        );
        assert!(c.store_reads_per_s > 0.0 && c.store_writes_per_s > 0.0);
        assert!(f64::from(c.max_store_reads_per_s) >= c.store_reads_per_s);
        assert!(f64::from(c.max_store_writes_per_s) >= c.store_writes_per_s);
    }
}

#[test]
fn the_table_and_the_json_carry_the_capacity_figures() {
    let s = summary(&reduced("recovery-capacity", 200, 150, 1));
    let rows = rows(&s);
    let row = |name: &str| {
        rows.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
            .expect(name)
    };
    assert_eq!(row("the downstream's return"), "90.0 s");
    assert!(row("admitted above capacity (after the return)").contains('('));
    let json = json_line(&s).expect("serializable");
    let value: serde_json::Value = serde_json::from_str(&json).expect("json");
    let capacity = &value["capacity"];
    assert_eq!(capacity["returned_at_s"], 90.0);
    assert_eq!(
        capacity["admitted_per_s"].as_array().map(Vec::len),
        Some(150)
    );
    assert_eq!(capacity["capacity_per_s"][10], serde_json::Value::Null);
    assert_eq!(capacity["capacity_per_s"][40], 0);
}

/// The recommended slow start (120 s) on the same return: at most one reopen after it,
/// the calls failed and admitted above capacity after the return a fifth of what the fleet
/// without a ramp sends (a tenth at full scale, 8–10 %: docs/scale.md; the reduced fleet's
/// seconds hold a tenth of the calls, so their spread past the capacity weighs more), and
/// full traffic within the ramp and 5 s of the close.
#[test]
fn the_slow_start_keeps_the_fleet_under_the_returning_capacity() {
    for seed in SEEDS {
        let plain = summary(&reduced("recovery-capacity", 1_000, 300, seed)).capacity;
        let ramped = summary(&reduced("recovery-capacity-slow-start", 1_000, 300, seed));
        let (c, closed_after) = (&ramped.capacity, ramped.time_to_close_s);
        assert!(
            c.reopens_after_return.expect("a return") <= 1,
            "seed {seed}: {c:?}"
        );
        let failed = |c: &breaker_sim::summary::CapacityFigures| {
            c.failed_calls_after_return.expect("a return")
        };
        assert!(
            failed(c) * 5 <= failed(&plain),
            "seed {seed}: {} vs {}",
            failed(c),
            failed(&plain)
        );
        let above = |c: &breaker_sim::summary::CapacityFigures| {
            c.admitted_above_capacity_after_return.expect("a return")
        };
        assert!(above(c) * 5 <= above(&plain), "seed {seed}");
        let closed_after = closed_after.expect("it closed");
        let back = c.full_rate_after_return_s.expect("back to full rate");
        assert!(
            back - closed_after <= 125.0,
            "seed {seed}: {back} − {closed_after}"
        );
    }
}

/// "Retry after 20 s" for a minute: each environment's own hinted failure reaches the
/// downstream, and little else does while the circuit is open.
#[test]
fn a_retry_after_holds_the_fleet_until_the_time_it_asked() {
    for seed in SEEDS {
        let s = summary(&reduced("throttle-retry-after", 100, 200, seed));
        assert!(
            s.downstream_calls_while_open <= 110,
            "seed {seed}: {} calls while open for 100 environments",
            s.downstream_calls_while_open
        );
        assert!(s.failed_non_probe_calls >= 100, "seed {seed}: {s:?}");
    }
}
