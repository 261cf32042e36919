//! Fleet-wide failure detection on the manual clock, with environments sharing an in-memory
//! store that keeps the fleet's counters: quiet environments, none of which would trip alone,
//! open the circuit together (a window's counters raise a suspicion, the suspicion's counters
//! trip); background errors of busy environments do not, nor those of a quiet fleet, whose
//! failures raise suspicions that the sampled successes dispel; a close within a window does
//! not re-trip on the next failure; one environment alone never trips through the fleet
//! policy; a busy environment's reports stay within one per report interval; a shadowed
//! environment reports nothing.

use std::sync::Arc;
use std::time::Duration;

use breaker_runtime::store::{InMemoryStore, RecordWrite, StateStore, WriteOutcome};
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitState, TransitionCause};
use devstack::circuits::{BoxError, fail};
use devstack::doubles::{Behaviour, ScriptedStore};

/// The fleet's store, keeping the fleet's counters and counting the reports it is sent.
fn counting_reports() -> Arc<ScriptedStore> {
    let table: Arc<dyn StateStore> = Arc::new(InMemoryStore::with_fleet_counters());
    Arc::new(ScriptedStore::wrapping(Arc::clone(&table), Behaviour::Healthy).reporting_to(table))
}

/// Environment `i` of a fleet on `store`: its own policy trips on 5 consecutive failures.
fn environment(i: u32, store: Arc<dyn StateStore>, clock: &ManualClock) -> CircuitBreaker {
    environment_in(i, store, clock, false)
}

/// [`environment`], in shadow if `shadow`.
fn environment_in(
    i: u32,
    store: Arc<dyn StateStore>,
    clock: &ManualClock,
    shadow: bool,
) -> CircuitBreaker {
    let config = CircuitBreakerConfig::builder()
        .environment_id(format!("env-{i}"))
        .local_cache_max_age(Duration::from_secs(5))
        .shadow(shadow)
        .clock(clock.clone())
        .build()
        .expect("valid config");
    CircuitBreaker::new("downstream", store, config)
}

async fn succeed(breaker: &CircuitBreaker) {
    let result: Result<(), BoxError> = breaker.call(|| async { Ok(()) }).await;
    result.expect("admitted and answered");
}

#[tokio::test]
async fn quiet_environments_none_of_which_would_trip_alone_open_the_circuit_together() {
    let clock = ManualClock::new();
    let store = counting_reports();
    let fleet: Vec<_> = (0..40)
        .map(|i| environment(i, store.clone(), &clock))
        .collect();
    for env in &fleet {
        succeed(env).await;
    }
    clock.advance(Duration::from_secs(20));
    // One failure each, 100 ms apart: no environment's own count gets near 5.
    let mut tripped_after = None;
    for (i, env) in fleet.iter().enumerate() {
        fail(env).await.expect_err("the downstream failed");
        clock.advance(Duration::from_millis(100));
        if env.state() == CircuitState::Open && tripped_after.is_none() {
            tripped_after = Some(i + 1);
        }
    }
    // The 3rd failure raises the suspicion (a third of the threshold); the next 24 (at
    // least twice the threshold, and 50 % of themselves and three samples' worth of
    // successes), reported to its counters with no success among them, open the circuit.
    assert_eq!(
        tripped_after,
        Some(27),
        "3 failures raise the suspicion, 24 under it trip"
    );
    let record = store.read("downstream").await.unwrap().expect("tripped");
    assert_eq!(record.state, CircuitState::Open);
    assert_eq!(record.suspected_until, None, "the trip drops the suspicion");
    assert_eq!(
        store.reports(),
        27,
        "once the store is open, nobody reports"
    );
}

#[tokio::test]
async fn the_fleet_trip_says_it_was_the_fleet() {
    let clock = ManualClock::new();
    let store = counting_reports();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let fleet: Vec<_> = (0..30)
        .map(|i| {
            let hook = Arc::clone(&seen);
            environment(i, store.clone(), &clock)
                .with_on_transition(move |t| hook.lock().unwrap().push(t))
        })
        .collect();
    for env in &fleet {
        fail(env).await.expect_err("failed");
    }
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.len(),
        1,
        "one environment committed the trip, the suspicion is no transition: {seen:?}"
    );
    assert_eq!(
        seen[0].cause,
        Some(TransitionCause::Fleet {
            failures: 24,
            calls: 24
        })
    );
}

/// Whether call `n` of a run fails, for a share of `per_mille` / 1,000: a fixed
/// pseudo-random sequence, so the test is the same every run.
fn fails(n: u64, per_mille: u64) -> bool {
    let mut x = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5DEE_CE66;
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    x % 1_000 < per_mille
}

/// 1,000 quiet environments, each calling once per 20 s (50 calls a second), for
/// `seconds`, `per_mille` of the calls failing; returns whether the record ever showed a
/// suspicion, and checks that no environment's circuit ever opened.
async fn quiet_fleet_with_background_errors(per_mille: u64, seconds: u64) -> bool {
    let clock = ManualClock::new();
    let store = counting_reports();
    let fleet: Vec<_> = (0..1_000)
        .map(|i| environment(i, store.clone(), &clock))
        .collect();
    let mut suspected = false;
    for n in 0..seconds * 50 {
        let env = &fleet[(n % 1_000) as usize];
        if fails(n, per_mille) {
            fail(env)
                .await
                .expect_err("the downstream failed, the circuit ran it");
        } else {
            succeed(env).await;
        }
        clock.advance(Duration::from_millis(20));
        if n % 50 == 0 {
            let record = store.read("downstream").await.unwrap().unwrap_or_default();
            assert_eq!(record.state, CircuitState::Closed, "call {n}: {record:?}");
            suspected |= record.suspected_until.is_some();
        }
    }
    assert!(fleet.iter().all(|env| env.state() == CircuitState::Closed));
    suspected
}

#[tokio::test]
async fn a_thousand_quiet_environments_failing_one_call_in_a_hundred_stay_closed() {
    // Six fleet windows: ~5 failures each, some windows raise a suspicion.
    quiet_fleet_with_background_errors(10, 60).await;
}

#[tokio::test]
async fn suspicions_raised_by_background_errors_are_dispelled_by_the_sampled_successes() {
    // 5 %: ~25 failures a window, every window raises a suspicion, and the calls sampled
    // under it show 95 % succeeding.
    assert!(
        quiet_fleet_with_background_errors(50, 60).await,
        "the background errors raised a suspicion"
    );
}

#[tokio::test]
async fn a_close_within_a_window_does_not_re_trip_on_the_next_failure() {
    let clock = ManualClock::new();
    let store = counting_reports();
    let fleet: Vec<_> = (0..40)
        .map(|i| environment(i, store.clone(), &clock))
        .collect();
    // The window starts at the clock's start; 27 failures 50 ms apart trip at ~1.3 s (the
    // rest are rejected).
    for env in &fleet[..30] {
        fail(env).await.expect_err("failed");
        clock.advance(Duration::from_millis(50));
    }
    let record = store.read("downstream").await.unwrap().expect("tripped");
    assert_eq!(record.state, CircuitState::Open);
    // An operator closes it 2 s into the window; the window's counters still hold the
    // failures that raised the suspicion.
    clock.advance(Duration::from_millis(500));
    let now = clock.unix_millis() / 1000;
    let reset = RecordWrite::Reset {
        now,
        expiration: now + 3600,
    };
    assert_eq!(
        store.apply("downstream", &reset).await.unwrap(),
        WriteOutcome::Won
    );
    // Once the caches are stale (5 s), still within the window: single failures.
    clock.advance(Duration::from_secs(5));
    for env in &fleet[30..33] {
        fail(env).await.expect_err("failed");
        assert_eq!(env.state(), CircuitState::Closed, "no re-trip");
        clock.advance(Duration::from_millis(100));
    }
    let record = store.read("downstream").await.unwrap().expect("closed");
    assert_eq!(record.state, CircuitState::Closed);
}

#[tokio::test]
async fn background_errors_of_busier_environments_do_not_trip() {
    let clock = ManualClock::new();
    let store = counting_reports();
    let fleet: Vec<_> = (0..40)
        .map(|i| environment(i, store.clone(), &clock))
        .collect();
    // Each environment: five good calls two seconds apart, then one failure: its report,
    // 1 failure in 6 calls, raises no suspicion either.
    for _ in 0..5 {
        for env in &fleet {
            succeed(env).await;
        }
        clock.advance(Duration::from_secs(2));
    }
    for env in &fleet {
        fail(env).await.expect_err("failed");
    }
    assert!(store.reports() >= 10, "the failures were reported");
    for env in &fleet {
        assert_eq!(
            env.state(),
            CircuitState::Closed,
            "1 failure in 6 calls is not an outage"
        );
    }
    assert_eq!(
        store.read("downstream").await.unwrap(),
        None,
        "nothing written but reports"
    );
}

#[tokio::test]
async fn one_environment_alone_never_trips_through_the_fleet_policy() {
    let clock = ManualClock::new();
    let store = counting_reports();
    let env = environment(0, store.clone(), &clock);
    // Fail, succeed, fail ...: 50 % failing, never 5 in a row, over a minute.
    for _ in 0..30 {
        fail(&env).await.expect_err("failed");
        clock.advance(Duration::from_secs(1));
        succeed(&env).await;
        clock.advance(Duration::from_secs(1));
    }
    assert_eq!(env.state(), CircuitState::Closed);
    assert!(store.reports() > 0, "it reported");
}

#[tokio::test]
async fn a_busy_environment_reports_at_most_once_per_interval() {
    let clock = ManualClock::new();
    let store = counting_reports();
    let env = environment(0, store.clone(), &clock);
    // 10 s at 20 calls a second, every other call failing: 100 failures.
    for _ in 0..100 {
        fail(&env).await.expect_err("failed");
        clock.advance(Duration::from_millis(50));
        succeed(&env).await;
        clock.advance(Duration::from_millis(50));
    }
    let reports = store.reports();
    assert!(reports <= 10 + 1, "{reports} reports in 10 s");
}

#[tokio::test]
async fn shadowed_environments_report_nothing_to_the_fleet_counters() {
    let clock = ManualClock::new();
    let store = counting_reports();
    let fleet: Vec<_> = (0..12)
        .map(|i| environment_in(i, store.clone(), &clock, true))
        .collect();
    for env in &fleet {
        succeed(env).await;
    }
    clock.advance(Duration::from_secs(20));
    // As in the fleet trip above: one failure each, 100 ms apart.
    for env in &fleet {
        fail(env).await.expect_err("the downstream failed");
        clock.advance(Duration::from_millis(100));
    }
    assert_eq!(
        store.reports(),
        0,
        "a shadow writes nothing the fleet shares"
    );
    assert_eq!(store.read("downstream").await.unwrap(), None);
}

#[tokio::test]
async fn a_shadowed_circuits_failures_do_not_reach_the_active_circuits_counters() {
    let clock = ManualClock::new();
    let store = counting_reports();
    // A canary in shadow beside the active version: same circuit, same store.
    let canaries: Vec<_> = (0..12)
        .map(|i| {
            let config = CircuitBreakerConfig::builder()
                .environment_id(format!("canary-{i}"))
                .local_cache_max_age(Duration::from_secs(5))
                .shadow(true)
                .clock(clock.clone())
                .build()
                .expect("valid config");
            CircuitBreaker::new("downstream", store.clone() as Arc<dyn StateStore>, config)
        })
        .collect();
    for canary in &canaries {
        for _ in 0..3 {
            fail(canary)
                .await
                .expect_err("runs and fails: shadow rejects nothing");
        }
    }
    assert_eq!(store.reports(), 0, "shadow reports nothing");
    assert_eq!(store.read("downstream").await.unwrap(), None);

    // The active version's next failures start from empty counters: nine, from nine
    // environments, are below the fleet threshold of ten.
    let active: Vec<_> = (0..9)
        .map(|i| environment(i, store.clone(), &clock))
        .collect();
    for env in &active {
        fail(env).await.expect_err("failed");
        assert_eq!(env.state(), CircuitState::Closed);
    }
    assert_eq!(store.reports(), 9);
}
