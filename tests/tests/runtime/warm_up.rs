//! Warm-up at init: one batched read for every circuit named, after which the first call of
//! each is a cache hit; a store that fails or hangs during it never holds init up.

use std::sync::Arc;
use std::time::Duration;

use breaker_runtime::store::{RecordWrite, StateStore};
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError, CircuitState, WarmUp,
    circuit_breaker,
};
use devstack::doubles::{Behaviour, ScriptedStore};

type Error = Box<dyn std::error::Error + Send + Sync>;

const NOW_SECS: u64 = 1_700_000_000;

fn config(clock: &ManualClock) -> CircuitBreakerConfig {
    CircuitBreakerConfig::builder()
        .recovery_timeout(Duration::from_secs(30))
        .local_cache_max_age(Duration::from_secs(60))
        .store_timeout(Duration::from_millis(200))
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// A store whose circuit `tripped` is open since now (by another environment).
async fn store_with_open_circuit(tripped: &str) -> Arc<ScriptedStore> {
    let store = Arc::new(ScriptedStore::new(Behaviour::Healthy));
    let trip = RecordWrite::Trip {
        opened_by: None,
        failure_count: 5,
        opened_at: NOW_SECS,
        expiration: NOW_SECS + 3600,
        open_until: None,
    };
    store.apply(tripped, &trip).await.unwrap();
    store.reset_counts();
    store
}

async fn runs(breaker: &CircuitBreaker) -> bool {
    let r: Result<(), Error> = breaker.call(|| async { Ok(()) }).await;
    match r {
        Ok(()) => true,
        Err(e) if e.downcast_ref::<CircuitBreakerOpenError>().is_some() => false,
        Err(e) => panic!("unexpected error {e}"),
    }
}

#[tokio::test]
async fn one_batched_read_warms_existing_and_later_circuits() {
    let clock = ManualClock::at_unix_millis(NOW_SECS * 1000);
    let store = store_with_open_circuit("tripped").await;
    let shared: Arc<dyn StateStore> = store.clone();
    // Created before the warm-up, named as a value.
    let existing = CircuitBreaker::new("existing", shared.clone(), config(&clock));

    let warmed = WarmUp::new()
        .breaker(&existing)
        .circuits_in(&shared, ["tripped", "later", "tripped"])
        .run()
        .await;
    assert_eq!(warmed, Ok(3), "one record per circuit, duplicates once");
    assert_eq!(store.batched_reads(), 1);
    assert_eq!(store.reads(), 0, "no read of its own");

    // Created after the warm-up: they find what it read.
    let tripped = CircuitBreaker::new("tripped", shared.clone(), config(&clock));
    let later = CircuitBreaker::new("later", shared.clone(), config(&clock));
    assert_eq!(tripped.state(), CircuitState::Open, "adopted at creation");
    assert!(runs(&existing).await);
    assert!(runs(&later).await);
    assert!(
        !runs(&tripped).await,
        "the fleet's open state, known from init"
    );
    assert_eq!(store.calls(), 1, "every first call was a cache hit");

    // Trusted for the cache age from the read, like any read: then read again.
    clock.advance(Duration::from_secs(61));
    assert!(runs(&later).await);
    assert_eq!(store.reads(), 1);
}

#[tokio::test]
async fn a_circuit_with_its_own_knowledge_keeps_it() {
    let clock = ManualClock::at_unix_millis(NOW_SECS * 1000);
    let store = Arc::new(ScriptedStore::new(Behaviour::Healthy));
    let shared: Arc<dyn StateStore> = store.clone();
    let breaker = CircuitBreaker::new("quiet", shared.clone(), config(&clock));
    assert!(runs(&breaker).await, "read the closed record itself");
    // Another environment trips it meanwhile. A warm-up's read does not replace what a
    // circuit read (or wrote) on its own: the circuit trusts its own read for its cache
    // age, as without a warm-up.
    let trip = RecordWrite::Trip {
        opened_by: None,
        failure_count: 5,
        opened_at: NOW_SECS,
        expiration: NOW_SECS + 3600,
        open_until: None,
    };
    store.apply("quiet", &trip).await.unwrap();
    assert_eq!(WarmUp::new().breaker(&breaker).run().await, Ok(1));
    assert_eq!(breaker.state(), CircuitState::Closed);
    assert!(runs(&breaker).await);
    assert_eq!(store.reads(), 1);
}

#[tokio::test]
async fn a_failing_or_hanging_store_fails_the_warm_up_open() {
    let clock = ManualClock::at_unix_millis(NOW_SECS * 1000);
    for behaviour in [Behaviour::Failing, Behaviour::Hanging] {
        let store = Arc::new(ScriptedStore::new(behaviour));
        let shared: Arc<dyn StateStore> = store.clone();
        let breaker = CircuitBreaker::new("downstream", shared.clone(), config(&clock));
        let warmed = tokio::time::timeout(
            Duration::from_secs(30),
            WarmUp::new()
                .breaker(&breaker)
                .timeout(Duration::from_millis(300))
                .run(),
        )
        .await
        .expect("the warm-up ends by its timeout");
        let error = warmed.expect_err("the store did not answer");
        assert!(
            !error.is_misconfiguration(),
            "an outage fails open: {error:?}"
        );
        if behaviour == Behaviour::Hanging {
            assert!(error.to_string().contains("timed out"), "{error}");
        }
        // Nothing was learnt: the first call reads the store (and fails open).
        store.set(Behaviour::Healthy);
        assert!(runs(&breaker).await);
        assert_eq!(store.reads(), 1, "{behaviour:?}");
    }
}

static STORE: std::sync::LazyLock<Arc<ScriptedStore>> =
    std::sync::LazyLock::new(|| Arc::new(ScriptedStore::new(Behaviour::Healthy)));

#[circuit_breaker(name = "attribute-site", local_cache_max_age = 60)]
async fn on_the_default_store() -> Result<u32, Error> {
    Ok(7)
}

#[circuit_breaker(name = "attribute-own-store", local_cache_max_age = 60, persistence_store = STORE.clone())]
async fn on_its_own_store() -> Result<u32, Error> {
    Ok(8)
}

#[tokio::test]
async fn attribute_call_sites_are_warmed_by_name() {
    breaker_runtime::set_default_store(Arc::clone(&STORE)).unwrap();
    let own: Arc<dyn StateStore> = STORE.clone();
    // The default store wraps `STORE` in an `Arc` of its own: two stores, one batched read
    // each (both counted by `STORE`).
    let warmed = WarmUp::new()
        .circuits(["attribute-site"])
        .circuits_in(&own, ["attribute-own-store"])
        .run()
        .await;
    assert_eq!(warmed, Ok(2));
    assert_eq!(STORE.batched_reads(), 2);
    assert_eq!(on_the_default_store().await.unwrap(), 7);
    assert_eq!(on_its_own_store().await.unwrap(), 8);
    assert_eq!(
        STORE.calls(),
        2,
        "the batched reads only: the first calls were cache hits"
    );
}

/// What `warm_up` answers in a fresh process with exactly `env` set.
pub(crate) fn warm_up_in_fresh_process(env: &[(&str, &str)]) -> String {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_default-store-probe"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .output()
        .expect("run default-store-probe");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

#[test]
fn inside_lambda_warm_up_reports_a_missing_or_invalid_table_naming_it() {
    let lambda = ("AWS_LAMBDA_FUNCTION_NAME", "charge");
    for env in [
        vec![lambda],
        vec![lambda, ("CIRCUIT_BREAKER_TABLE", " ")],
        vec![lambda, ("CIRCUIT_BREAKER_TABLE", "no such/table")],
    ] {
        let answer = warm_up_in_fresh_process(&env);
        assert!(
            answer.starts_with("error=CIRCUIT_BREAKER_TABLE "),
            "{env:?}: {answer}"
        );
        assert!(answer.contains("CIRCUIT_BREAKER_STORE=memory"), "{answer}");
    }
}

#[test]
fn an_explicit_in_memory_store_or_no_lambda_warms_up_as_before() {
    for env in [
        vec![
            ("AWS_LAMBDA_FUNCTION_NAME", "charge"),
            ("CIRCUIT_BREAKER_STORE", "memory"),
        ],
        vec![],
    ] {
        assert_eq!(warm_up_in_fresh_process(&env), "warmed=1", "{env:?}");
    }
}

#[tokio::test]
async fn a_sample_function_without_its_table_stops_at_init_naming_the_variable() {
    use devstack::harness::function_process::{FunctionProcess, LogEcho};
    let start = |extra: Option<(&'static str, String)>| {
        let mut env = vec![("SNAPSHOT_TABLE", "snapshots".to_owned())];
        env.extend(extra);
        async move {
            FunctionProcess::start("cost-report", &env, LogEcho::Stderr)
                .await
                .expect("cost-report is built")
        }
    };
    let missing = start(None).await;
    let status = missing
        .wait_exit(Duration::from_secs(20))
        .await
        .expect("the function stops at init");
    assert!(!status.success(), "{status:?}");
    let logs = missing.logs().join("\n");
    assert!(
        logs.contains("CIRCUIT_BREAKER_TABLE is not set"),
        "the error names the variable: {logs}"
    );

    // Chosen explicitly, the in-memory store starts and polls for work.
    let memory = start(Some(("CIRCUIT_BREAKER_STORE", "memory".into()))).await;
    assert_eq!(memory.wait_exit(Duration::from_secs(3)).await, None);
}
