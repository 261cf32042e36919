//! The slow start after a close, on one manual clock and a shared in-memory store: the
//! environment whose probe closed the circuit and one that only reads the close each admit
//! a share of their calls rising from a tenth to all over the ramp, turn the rest away with
//! `StopReason::SlowStart` and the ramp's end as the time to retry, count a failure in the
//! ramp as a closed circuit does, and take the closed path again once the ramp has ended.
//! Without a slow start every call runs from the close on; an operator's disable runs them
//! all too.

use std::sync::Arc;
use std::time::Duration;

use breaker_runtime::store::implement::{Override, OverrideKind};
use breaker_runtime::store::{InMemoryStore, RecordWrite, StateStore, WriteOutcome};
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError, CircuitState, StopReason,
};
use devstack::circuits::{BoxError, ran_or_rejected};

const CIRCUIT: &str = "downstream";
const RAMP: Duration = Duration::from_secs(100);
const RECOVERY: Duration = Duration::from_secs(30);

/// Environment `id`: one failure opens, one probe success closes, a 1 s cache age.
fn environment(
    id: &str,
    store: &Arc<dyn StateStore>,
    clock: &ManualClock,
    ramp: Option<Duration>,
) -> CircuitBreaker {
    let mut config = CircuitBreakerConfig::builder()
        .failure_threshold(1)
        .success_threshold(1)
        .recovery_timeout(RECOVERY)
        .local_cache_max_age(Duration::from_secs(1))
        .environment_id(id)
        .clock(clock.clone());
    if let Some(ramp) = ramp {
        config = config.slow_start(ramp);
    }
    CircuitBreaker::new(CIRCUIT, Arc::clone(store), config.build().expect("valid"))
}

/// One call answering `ok`: `Ok(true)` if it ran and succeeded, `Ok(false)` if it ran and
/// failed, `Err` the rejection.
async fn call(breaker: &CircuitBreaker, ok: bool) -> Result<bool, CircuitBreakerOpenError> {
    let result: Result<(), BoxError> = breaker
        .call(|| async {
            match ok {
                true => Ok(()),
                false => Err("downstream 503".into()),
            }
        })
        .await;
    ran_or_rejected(result)
}

/// Trips the circuit with `a`, shows the opening to each of `others` (a call of each,
/// rejected), waits the recovery and closes it with `a`'s probe; the close's time (unix
/// millis).
async fn trip_and_close(
    a: &CircuitBreaker,
    others: &[&CircuitBreaker],
    clock: &ManualClock,
) -> u64 {
    assert_eq!(call(a, false).await, Ok(false));
    assert_eq!(a.state(), CircuitState::Open);
    for other in others {
        assert!(call(other, true).await.is_err(), "{:?}", other.state());
    }
    clock.advance(RECOVERY + Duration::from_secs(1));
    assert_eq!(call(a, true).await, Ok(true), "the probe");
    assert_eq!(a.state(), CircuitState::Closed);
    clock.unix_millis()
}

/// Calls `breaker` once every 10 ms over `span`: the share admitted, and the rejections'
/// reasons and retry times seen.
async fn share_over(
    breaker: &CircuitBreaker,
    clock: &ManualClock,
    span: Duration,
) -> (f64, Vec<(StopReason, Option<u64>)>) {
    let (mut admitted, mut calls, mut rejections) = (0u32, 0u32, Vec::new());
    let end = clock.unix_millis() + span.as_millis() as u64;
    while clock.unix_millis() < end {
        calls += 1;
        match call(breaker, true).await {
            Ok(_) => admitted += 1,
            Err(open) => rejections.push((open.reason(), open.retry_after_unix_secs())),
        }
        clock.advance(Duration::from_millis(10));
    }
    (f64::from(admitted) / f64::from(calls), rejections)
}

#[tokio::test]
async fn after_a_close_each_environment_admits_a_rising_share_until_the_ramp_ends() {
    let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
    let clock = ManualClock::new();
    let a = environment("env-a", &store, &clock, Some(RAMP));
    let b = environment("env-b", &store, &clock, Some(RAMP));
    // B has seen the circuit open before A's probe closes it.
    let closed_at = trip_and_close(&a, &[&b], &clock).await;
    let ramp_end = (closed_at + RAMP.as_millis() as u64).div_ceil(1000);

    // The first tenth of the ramp: about 10 % to 19 % of A's calls run.
    let (early, rejections) = share_over(&a, &clock, RAMP / 10).await;
    assert!((0.07..0.22).contains(&early), "early share {early}");
    assert!(!rejections.is_empty());
    for (reason, retry) in &rejections {
        assert_eq!(*reason, StopReason::SlowStart);
        assert_eq!(*retry, Some(ramp_end), "retry at the ramp's end");
    }
    // B read the close within its cache age: it ramps too, from when it saw it.
    let (b_early, _) = share_over(&b, &clock, RAMP / 10).await;
    assert!((0.07..0.35).contains(&b_early), "B's early share {b_early}");

    // The last tenth: most calls run.
    clock.set_unix_millis(closed_at + (RAMP.as_millis() as u64) * 9 / 10);
    let (late, _) = share_over(&a, &clock, RAMP / 10 - Duration::from_millis(50)).await;
    assert!((0.85..1.0).contains(&late), "late share {late}");

    // Past the ramp every call runs (no rejection at all).
    clock.set_unix_millis(closed_at + RAMP.as_millis() as u64 + 1);
    let (after, rejections) = share_over(&a, &clock, Duration::from_secs(5)).await;
    assert_eq!((after, rejections.len()), (1.0, 0));
}

#[tokio::test]
async fn a_failure_in_the_ramp_counts_as_when_closed() {
    let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
    let clock = ManualClock::new();
    let a = environment("env-a", &store, &clock, Some(RAMP));
    trip_and_close(&a, &[], &clock).await;
    // Call until one is admitted: it fails, and one failure trips (threshold 1).
    loop {
        match call(&a, false).await {
            Ok(ran_ok) => {
                assert!(!ran_ok);
                break;
            }
            Err(open) => assert_eq!(open.reason(), StopReason::SlowStart),
        }
        clock.advance(Duration::from_millis(10));
    }
    assert_eq!(a.state(), CircuitState::Open, "the failure tripped it");
    let record = store.read(CIRCUIT).await.unwrap().unwrap();
    assert_eq!(record.state, CircuitState::Open);
}

#[tokio::test]
async fn without_a_slow_start_or_under_an_operators_disable_every_call_runs() {
    let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
    let clock = ManualClock::new();
    let plain = environment("env-plain", &store, &clock, None);
    trip_and_close(&plain, &[], &clock).await;
    let (share, _) = share_over(&plain, &clock, Duration::from_secs(2)).await;
    assert_eq!(share, 1.0, "no slow start configured");

    let store: Arc<dyn StateStore> = Arc::new(InMemoryStore::new());
    let ramped = environment("env-a", &store, &clock, Some(RAMP));
    trip_and_close(&ramped, &[], &clock).await;
    let now = clock.unix_millis() / 1000;
    let disable = RecordWrite::Override {
        set: Override::new(OverrideKind::Disabled, "operator", now),
        replaces: None,
        expiration: Some(now + 3600),
    };
    assert_eq!(store.apply(CIRCUIT, &disable).await, Ok(WriteOutcome::Won));
    clock.advance(Duration::from_secs(2));
    let (share, _) = share_over(&ramped, &clock, Duration::from_secs(2)).await;
    assert_eq!(share, 1.0, "an operator's disable runs every call");
}
