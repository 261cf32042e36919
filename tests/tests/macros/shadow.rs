//! `shadow = true`: the call site's circuit runs in shadow, with inline tunables and with
//! a `config` expression alike: failures past the threshold trip nothing and reject
//! nothing.

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::{CircuitBreakerConfig, CircuitBreakerOpenError, circuit_breaker};

#[circuit_breaker(name = "macro-shadow", failure_threshold = 2, shadow = true, persistence_store = InMemoryStore::new())]
fn charge(fail: bool) -> Result<u32, anyhow::Error> {
    anyhow::ensure!(!fail, "downstream 503");
    Ok(1)
}

fn strict() -> CircuitBreakerConfig {
    CircuitBreakerConfig::builder()
        .failure_threshold(1)
        .build()
        .unwrap()
}

#[circuit_breaker(name = "macro-shadow-config", config = strict(), shadow = true, persistence_store = InMemoryStore::new())]
async fn refund(fail: bool) -> Result<u32, anyhow::Error> {
    anyhow::ensure!(!fail, "downstream 503");
    Ok(2)
}

#[circuit_breaker(name = "macro-not-shadowed", failure_threshold = 1, shadow = false, persistence_store = InMemoryStore::new())]
fn plain(fail: bool) -> Result<u32, anyhow::Error> {
    anyhow::ensure!(!fail, "downstream 503");
    Ok(3)
}

fn rejected<T>(result: &Result<T, anyhow::Error>) -> bool {
    result
        .as_ref()
        .is_err_and(anyhow::Error::is::<CircuitBreakerOpenError>)
}

#[test]
fn a_shadowed_call_site_runs_every_call_past_its_threshold() {
    for _ in 0..5 {
        let failed = charge(true);
        assert!(!rejected(&failed), "the call ran: {failed:?}");
    }
    assert_eq!(
        charge(false).unwrap(),
        1,
        "still runs after a would-be trip"
    );
}

#[tokio::test]
async fn shadow_applies_to_a_config_expression_too() {
    for _ in 0..3 {
        assert!(!rejected(&refund(true).await));
    }
    assert_eq!(refund(false).await.unwrap(), 2);
}

#[test]
fn shadow_false_leaves_the_circuit_acting_on_its_verdicts() {
    assert!(!rejected(&plain(true)));
    assert!(rejected(&plain(false)), "one failure opened it");
}
