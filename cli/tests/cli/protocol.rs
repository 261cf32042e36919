//! Breaker environments (real `CircuitBreaker`s on the table) honour an operator's override
//! within their cache age, and none of their writes (trip, election, close) erases it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError, CircuitState,
};
use tokio::time::sleep;

use crate::support::{TABLE, Table, n, s};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// An environment: failure threshold 2, one probe success closes, recovery 1 s, no
/// jitter, this cache age.
pub(crate) fn environment(table: &Table, id: &str, cache_age: Duration) -> Arc<CircuitBreaker> {
    recovering_after(table, id, cache_age, Duration::from_secs(1))
}

/// An environment whose openings wait `recovery` before a probe: a test that must see an
/// opening it seeded as OPEN needs more than the 1 s default here, since the seeded
/// `opened_at` is whole seconds and may already be most of a second old.
pub(crate) fn recovering_after(
    table: &Table,
    id: &str,
    cache_age: Duration,
    recovery: Duration,
) -> Arc<CircuitBreaker> {
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(2)
        .success_threshold(1)
        .recovery_timeout(recovery)
        .recovery_jitter(Duration::ZERO)
        .local_cache_max_age(cache_age)
        .environment_id(id)
        .build()
        .expect("valid config");
    Arc::new(CircuitBreaker::new("svc", table.store.clone(), config))
}

/// Calls through `breaker` a downstream that answers `ok`; counts the calls that ran.
pub(crate) async fn call(breaker: &CircuitBreaker, ran: &AtomicU32, ok: bool) -> Result<(), Error> {
    breaker
        .call(|| async {
            ran.fetch_add(1, Ordering::SeqCst);
            match ok {
                true => Ok(()),
                false => Err("503".into()),
            }
        })
        .await
}

pub(crate) fn rejected(result: Result<(), Error>) -> bool {
    result.is_err_and(|e| e.downcast_ref::<CircuitBreakerOpenError>().is_some())
}

pub(crate) const CACHE_AGE: Duration = Duration::from_secs(1);
/// The cache age, plus the read's latency.
pub(crate) const SEEN: Duration = Duration::from_millis(1_300);

#[tokio::test]
async fn a_forced_open_is_honoured_within_the_cache_age_and_nobody_probes() {
    let table = Table::new().await;
    let env = environment(&table, "env-a", CACHE_AGE);
    let ran = AtomicU32::new(0);
    call(&env, &ran, true).await.expect("closed: the call runs");

    table
        .breaker(&["open", "svc", "--create", "--for", "1m", "--by", "ops"])
        .await
        .ok();
    sleep(SEEN).await;
    assert!(
        rejected(call(&env, &ran, true).await),
        "seen within the cache age"
    );
    // Long past the recovery timeout: still rejected, no probe, no election written.
    sleep(Duration::from_millis(2_500)).await;
    for _ in 0..3 {
        assert!(rejected(call(&env, &ran, true).await));
    }
    assert_eq!(
        ran.load(Ordering::SeqCst),
        1,
        "no call and no probe reached the downstream"
    );
    let item = table.raw("svc").await.expect("the item");
    assert_eq!(s(&item, "override").as_deref(), Some("OPEN"));
    assert!(
        !item.contains_key("half_open_owner"),
        "no election: {item:?}"
    );

    // Released: the opening starts at the release; after the recovery and this
    // environment's fallback (cache age + 1 s), one probe closes it.
    table.breaker(&["release", "svc"]).await.ok();
    let mut probed = false;
    for _ in 0..40 {
        if call(&env, &ran, true).await.is_ok() {
            probed = true;
            break;
        }
        sleep(Duration::from_millis(200)).await;
    }
    assert!(probed, "a probe ran within 8 s of the release");
    let item = table.raw("svc").await.expect("the item");
    assert_eq!(s(&item, "state").as_deref(), Some("CLOSED"), "{item:?}");
}

#[tokio::test]
async fn a_stale_environments_trip_does_not_erase_a_forced_open() {
    let table = Table::new().await;
    // A long cache age: this environment believes the circuit closed throughout.
    let stale = environment(&table, "env-stale", Duration::from_secs(60));
    let ran = AtomicU32::new(0);
    call(&stale, &ran, true).await.expect("closed");
    table
        .breaker(&["open", "svc", "--create", "--for", "10m", "--by", "ops"])
        .await
        .ok();
    let forced = table.raw("svc").await.expect("the item");

    // Two failures: it trips, its write loses to the override, it adopts the forced open.
    for _ in 0..2 {
        call(&stale, &ran, false)
            .await
            .expect_err("the failure is the call's");
    }
    assert_eq!(
        table.raw("svc").await.expect("the item"),
        forced,
        "the trip lost"
    );
    assert!(
        rejected(call(&stale, &ran, true).await),
        "it adopted the forced open"
    );
    assert_eq!(ran.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_probe_in_flight_cannot_close_a_circuit_forced_open_under_it() {
    let table = Table::new().await;
    let prober = environment(&table, "env-prober", Duration::ZERO);
    let ran = Arc::new(AtomicU32::new(0));
    for _ in 0..2 {
        call(&prober, &ran, false)
            .await
            .expect_err("failures trip it");
    }
    sleep(Duration::from_millis(1_100)).await;

    // The probe waits for the test; meanwhile the operator forces the circuit open.
    let (finish, finished) = tokio::sync::oneshot::channel::<()>();
    let probe = {
        let prober = prober.clone();
        let ran = ran.clone();
        tokio::spawn(async move {
            let result: Result<(), Error> = prober
                .call(|| async move {
                    ran.fetch_add(1, Ordering::SeqCst);
                    finished.await.expect("released by the test");
                    Ok(())
                })
                .await;
            result
        })
    };
    let mut owner = None;
    for _ in 0..100 {
        owner = table
            .raw("svc")
            .await
            .and_then(|item| s(&item, "half_open_owner"));
        if owner.is_some() {
            break;
        }
        sleep(Duration::from_millis(20)).await;
    }
    if owner.is_none() {
        finish.send(()).ok();
        let item = table.raw("svc").await;
        panic!(
            "no election written: {item:?}; the probe: {:?}",
            probe.await
        );
    }
    assert_eq!(owner.as_deref(), Some("env-prober"));
    table.breaker(&["open", "svc", "--by", "ops"]).await.ok();
    finish.send(()).expect("the probe waits");
    probe
        .await
        .expect("no panic")
        .expect("the probe itself succeeded");

    // Its close lost: still forced open, and the prober rejects now.
    let item = table.raw("svc").await.expect("the item");
    assert_eq!(s(&item, "override").as_deref(), Some("OPEN"), "{item:?}");
    assert_eq!(s(&item, "state").as_deref(), Some("OPEN"));
    assert!(rejected(call(&prober, &ran, true).await));
}

#[tokio::test]
async fn a_state_stored_under_a_forced_open_is_not_the_state_reported() {
    let table = Table::new().await;
    let env = environment(&table, "env-a", Duration::ZERO);
    table
        .breaker(&["open", "svc", "--create", "--for", "10m", "--by", "ops"])
        .await
        .ok();
    // A Powertools prober's unconditional close under the override.
    table
        .dynalite
        .client()
        .update_item()
        .table_name(TABLE)
        .key("id", AttributeValue::S("svc".into()))
        .update_expression("SET #st = :closed REMOVE opened_at")
        .expression_attribute_names("#st", "state")
        .expression_attribute_values(":closed", AttributeValue::S("CLOSED".into()))
        .send()
        .await
        .expect("UpdateItem");

    let ran = AtomicU32::new(0);
    let rejection = call(&env, &ran, true).await.expect_err("still forced open");
    let open = rejection
        .downcast_ref::<CircuitBreakerOpenError>()
        .expect("a rejection");
    assert_eq!(
        open.circuit.state,
        CircuitState::Open,
        "what the rejection reports"
    );
    assert_eq!(env.state(), CircuitState::Open, "the state it acts on");
    assert_eq!(
        env.info().await.state,
        CircuitState::Open,
        "what info reports"
    );
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_disabled_circuit_runs_every_call_and_never_trips_until_released() {
    let table = Table::new().await;
    let opened = table.trip("svc", 5).await;
    let env = recovering_after(&table, "env-a", CACHE_AGE, Duration::from_secs(60));
    let ran = AtomicU32::new(0);
    assert!(rejected(call(&env, &ran, true).await), "open");

    table
        .breaker(&["disable", "svc", "--for", "1m", "--by", "ops"])
        .await
        .ok();
    sleep(SEEN).await;
    for _ in 0..6 {
        call(&env, &ran, false)
            .await
            .expect_err("every call runs and fails");
    }
    assert_eq!(ran.load(Ordering::SeqCst), 6);
    let item = table.raw("svc").await.expect("the item");
    assert_eq!(
        s(&item, "state").as_deref(),
        Some("CLOSED"),
        "never tripped: {item:?}"
    );
    assert_eq!(s(&item, "override").as_deref(), Some("DISABLED"));
    assert_ne!(n(&item, "opened_at"), Some(opened));

    // Released: the failures under the override do not count, the next ones do.
    table.breaker(&["release", "svc"]).await.ok();
    sleep(SEEN).await;
    call(&env, &ran, false).await.expect_err("runs and fails");
    let item = table.raw("svc").await.expect("the item");
    assert_eq!(
        s(&item, "state").as_deref(),
        Some("CLOSED"),
        "one failure: {item:?}"
    );
    call(&env, &ran, false).await.expect_err("runs and fails");
    let item = table.raw("svc").await.expect("the item");
    assert_eq!(
        s(&item, "state").as_deref(),
        Some("OPEN"),
        "it trips again: {item:?}"
    );
    assert!(!item.contains_key("override"));
}
