use super::*;
use breaker_runtime::CircuitState;

fn trip(opened_at: u64) -> RecordWrite {
    RecordWrite::Trip {
        opened_by: None,
        failure_count: 5,
        opened_at,
        expiration: opened_at + 3630,
        open_until: None,
    }
}

fn elect(owner: &str, opened_at: u64) -> RecordWrite {
    RecordWrite::Elect {
        owner: owner.into(),
        expected_opened_at: Some(opened_at),
        expected_successes: 0,
        now: opened_at + 30,
        lease_expiry: opened_at + 60,
        expiration: opened_at + 3660,
    }
}

fn model() -> ItemModel {
    ItemModel::new(ModelConfig::default(), 9)
}

/// How a read of circuit `c` at `now` (virtual ms) ends.
fn read_outcome(m: &mut ItemModel, now: u64, consistency: Consistency) -> RequestOutcome {
    m.read("c", now, consistency).outcome
}

/// How a trip of circuit `c` opened at `opened_at`, written at `now` (virtual ms), ends.
fn trip_outcome(m: &mut ItemModel, opened_at: u64, now: u64) -> RequestOutcome {
    m.apply("c", &trip(opened_at), now).outcome
}

#[test]
fn three_eventually_consistent_reads_cost_one_and_a_half_rcu() {
    let mut m = model();
    for _ in 0..3 {
        let r = m.read("c", 1_500, Consistency::Eventual);
        assert_eq!(
            (r.cost.read_half_units, r.outcome),
            (1, RequestOutcome::Served)
        );
    }
    assert_eq!(m.consumed("c", 1_999), (3, 0), "3 halves = 1.5 RCU");
    assert_eq!(m.consumed("c", 2_000), (0, 0), "a new second starts empty");
}

#[test]
fn a_lost_write_costs_one_wcu_and_returns_the_current_item() {
    let mut m = model();
    assert_eq!(m.apply("c", &trip(100), 0).result, Ok(WriteOutcome::Won));
    let lost = m.apply("c", &trip(101), 0);
    assert_eq!(lost.outcome, RequestOutcome::Lost);
    assert_eq!(lost.cost.write_units, 1);
    assert_eq!(
        lost.result,
        Ok(WriteOutcome::Lost(Some(CircuitRecord::open(100, 5))))
    );
    assert_eq!(m.consumed("c", 0), (0, 2));
}

#[test]
fn the_1001st_write_in_a_second_is_throttled_and_consumes_nothing() {
    let mut m = model();
    m.apply("c", &trip(100), 3_000);
    for _ in 1..1000 {
        assert_eq!(trip_outcome(&mut m, 100, 3_000), RequestOutcome::Lost);
    }
    assert_eq!(m.consumed("c", 3_000), (0, 1000));
    let throttled = m.apply("c", &trip(100), 3_999);
    assert_eq!(throttled.outcome, RequestOutcome::Throttled);
    assert_eq!(
        (throttled.cost.attempts, throttled.cost.throttled_attempts),
        (2, 2)
    );
    assert_eq!(throttled.cost.write_units, 0);
    let message = throttled.result.unwrap_err().to_string();
    assert!(message.starts_with("ProvisionedThroughputExceededException"));
    assert_eq!(
        m.consumed("c", 3_000),
        (0, 1000),
        "throttled attempts are free"
    );
    assert!(
        throttled.cost.latency_ms >= 5 + 20 + 5,
        "two attempts and a back-off"
    );
    // The next second has capacity again.
    assert_eq!(trip_outcome(&mut m, 100, 4_000), RequestOutcome::Lost);
    // Reads have their own budget: 6,000 halves.
    for _ in 0..6000 {
        assert_eq!(
            read_outcome(&mut m, 5_000, Consistency::Eventual),
            RequestOutcome::Served
        );
    }
    assert_eq!(
        read_outcome(&mut m, 5_000, Consistency::Eventual),
        RequestOutcome::Throttled
    );
    assert_eq!(m.consumed("c", 5_000), (6000, 0), "3,000 RCU");
}

#[test]
fn a_strong_read_costs_a_whole_unit_and_may_take_the_last_slot_only_whole() {
    let config = ModelConfig {
        read_units_per_s: 2,
        ..ModelConfig::default()
    };
    let mut m = ItemModel::new(config, 1);
    m.read("c", 0, Consistency::Eventual);
    m.read("c", 0, Consistency::Strong);
    assert_eq!(m.consumed("c", 0), (3, 0));
    // 1.5 RCU used of 2: a strong read (1 RCU) does not fit, an eventual one does.
    assert_eq!(
        read_outcome(&mut m, 0, Consistency::Strong),
        RequestOutcome::Throttled
    );
    assert_eq!(
        read_outcome(&mut m, 0, Consistency::Eventual),
        RequestOutcome::Served
    );
}

#[test]
fn a_throttled_first_attempt_is_retried_and_both_are_counted() {
    // Capacity 1 WCU, used by the first write: the second write's retry is accounted
    // in the same virtual second (a call's requests take effect at its start), so both
    // of its attempts are throttled.
    let config = ModelConfig {
        write_units_per_s: 1,
        ..ModelConfig::default()
    };
    let mut m = ItemModel::new(config, 1);
    assert_eq!(m.apply("c", &trip(1), 0).cost.attempts, 1);
    let second = m.apply("c", &trip(1), 10);
    assert_eq!(
        (second.cost.attempts, second.cost.throttled_attempts),
        (2, 2)
    );
}

#[test]
fn eventually_consistent_reads_lag_by_at_most_the_configured_lag() {
    let mut m = model();
    m.apply("c", &trip(100), 10_000);
    let mut saw_old = false;
    for _ in 0..200 {
        let read = m.read("c", 10_500, Consistency::Eventual);
        match read.result.unwrap() {
            None => saw_old = true,
            Some(record) => assert_eq!(record.state, CircuitState::Open),
        }
    }
    assert!(
        saw_old,
        "a replica up to 1 s behind misses a write 0.5 s old"
    );
    for _ in 0..200 {
        let read = m.read("c", 11_000, Consistency::Eventual);
        assert!(
            read.result.unwrap().is_some(),
            "1 s later every replica has it"
        );
    }
    assert!(
        m.read("c", 10_000, Consistency::Strong)
            .result
            .unwrap()
            .is_some()
    );
}

#[test]
fn writes_apply_the_transitions_conditions() {
    let mut m = model();
    assert_eq!(
        m.apply("c", &elect("a", 100), 0).result,
        Ok(WriteOutcome::Lost(None))
    );
    m.apply("c", &trip(100), 0);
    assert_eq!(
        m.apply("c", &elect("a", 100), 0).result,
        Ok(WriteOutcome::Won)
    );
    let lost = m.apply("c", &elect("b", 100), 0);
    assert_eq!(
        lost.result,
        Ok(WriteOutcome::Lost(Some(CircuitRecord::half_open(
            100, 5, "a", 160
        ))))
    );
}

#[test]
fn faults_follow_their_windows() {
    let mut m = model().with_faults(vec![
        FaultWindow {
            from_ms: 1_000,
            until_ms: 2_000,
            fault: StoreFault::WritesThrottled,
        },
        FaultWindow {
            from_ms: 2_000,
            until_ms: 3_000,
            fault: StoreFault::Unreachable,
        },
    ]);
    let throttled = m.apply("c", &trip(1), 1_000);
    assert_eq!(throttled.outcome, RequestOutcome::Throttled);
    assert_eq!(
        read_outcome(&mut m, 1_500, Consistency::Eventual),
        RequestOutcome::Served
    );
    let down = m.read("c", 2_000, Consistency::Eventual);
    assert_eq!(
        (
            down.outcome,
            down.cost.latency_ms,
            down.cost.read_half_units
        ),
        (RequestOutcome::Unreachable, 1_000, 0)
    );
    assert_eq!(trip_outcome(&mut m, 3, 3_000), RequestOutcome::Won);
}
