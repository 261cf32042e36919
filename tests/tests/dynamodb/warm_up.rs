//! The warm-up's batched read on DynamoDB: one `BatchGetItem` for every circuit (chunks of
//! 100 keys, duplicates asked once, answers in the order asked, with a sort key too), after
//! which a circuit's first call sends nothing.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::ErrorMetadata;
use aws_sdk_dynamodb::operation::batch_get_item::BatchGetItemError;
use aws_sdk_dynamodb::types::error::ProvisionedThroughputExceededException;
use aws_smithy_mocks::{RuleMode, mock, mock_client};
use breaker_runtime::store::StoreErrorKind;
use breaker_runtime::store::{CircuitRecord, DynamoDbStore, RecordWrite, StateStore};
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError, WarmUp, WarmUpError,
};
use devstack::fixtures::dynalite::Dynalite;
use devstack::fixtures::fault_proxy::{FaultProxy, Service};
use devstack::fixtures::sdk::local_sdk_config;
use devstack::fixtures::shared_table;
use devstack::wall_clock::unix_secs;

use super::simple_table;

type Error = Box<dyn std::error::Error + Send + Sync>;

fn trip(opened_at: u64) -> RecordWrite {
    RecordWrite::Trip {
        opened_by: None,
        failure_count: 4,
        opened_at,
        expiration: opened_at + 3600,
        open_until: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_many_answers_every_circuit_in_the_order_asked() {
    let (_dynalite, store) = simple_table().await;
    store.apply("open-a", &trip(100)).await.unwrap();
    store.apply("open-b", &trip(200)).await.unwrap();
    // More than one request's worth of keys, with duplicates.
    let mut names: Vec<String> = (0..130).map(|i| format!("missing-{i}")).collect();
    names.insert(7, "open-a".into());
    names.push("open-b".into());
    names.push("open-a".into());
    let asked: Vec<&str> = names.iter().map(String::as_str).collect();

    let records = store.read_many(&asked).await.unwrap();
    assert_eq!(records.len(), asked.len());
    for (name, record) in asked.iter().zip(&records) {
        let expected = match *name {
            "open-a" => Some(CircuitRecord::open(100, 4)),
            "open-b" => Some(CircuitRecord::open(200, 4)),
            _ => None,
        };
        assert_eq!(record, &expected, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_many_finds_circuits_under_a_static_partition_key() {
    let dynalite = Dynalite::start().await.unwrap();
    let store = shared_table::create(&dynalite)
        .await
        .unwrap()
        .client(dynalite.client())
        .build()
        .unwrap();
    store.apply("open", &trip(300)).await.unwrap();
    let records = store.read_many(&["closed", "open"]).await.unwrap();
    assert_eq!(records, vec![None, Some(CircuitRecord::open(300, 4))]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_warm_up_the_first_calls_send_nothing() {
    let dynalite = Dynalite::start().await.unwrap();
    dynalite.create_circuit_table("circuits").await.unwrap();
    let proxy = FaultProxy::start(&format!("127.0.0.1:{}", dynalite.port()))
        .await
        .unwrap();
    let store: Arc<dyn StateStore> = Arc::new(
        DynamoDbStore::builder()
            .table_name("circuits")
            .sdk_config(&local_sdk_config(proxy.endpoint()))
            .build()
            .unwrap(),
    );
    store.apply("tripped", &trip(unix_secs())).await.unwrap();
    let sent_before = proxy.seen(Service::Other);

    let config = CircuitBreakerConfig::builder()
        .local_cache_max_age(Duration::from_secs(60))
        .build()
        .unwrap();
    let healthy = CircuitBreaker::new("healthy", Arc::clone(&store), config.clone());
    let warmed = WarmUp::new()
        .breaker(&healthy)
        .circuits_in(&store, ["tripped"])
        .run()
        .await;
    assert_eq!(warmed, Ok(2));
    assert_eq!(
        proxy.seen(Service::Other),
        sent_before + 1,
        "one BatchGetItem"
    );

    let tripped = CircuitBreaker::new("tripped", Arc::clone(&store), config);
    let ran: Result<u8, Error> = healthy.call(|| async { Ok(1) }).await;
    assert_eq!(ran.unwrap(), 1);
    let rejected: Result<u8, Error> = tripped.call(|| async { Ok(2) }).await;
    assert!(rejected.unwrap_err().is::<CircuitBreakerOpenError>());
    assert_eq!(
        proxy.seen(Service::Other),
        sent_before + 1,
        "both first calls were cache hits"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inside_lambda_the_table_named_by_the_environment_is_warmed_up() {
    let (dynalite, store) = simple_table().await;
    store.apply("probe", &trip(unix_secs())).await.unwrap();
    let mut env = dynalite.env();
    env.extend([
        ("AWS_LAMBDA_FUNCTION_NAME", "charge".to_owned()),
        ("CIRCUIT_BREAKER_TABLE", "circuits".to_owned()),
    ]);
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_default-store-probe"))
        .env_clear()
        .envs(env)
        .output()
        .expect("run default-store-probe");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.trim(), "warmed=1", "{output:?}");
}

/// The warm-up of one circuit on `store`.
async fn warm_up_on(store: impl StateStore + 'static) -> Result<usize, WarmUpError> {
    let store: Arc<dyn StateStore> = Arc::new(store);
    WarmUp::new()
        .circuits_in(&store, ["payment-backend"])
        .run()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_that_does_not_exist_is_a_misconfiguration_naming_it() {
    let dynalite = Dynalite::start().await.unwrap();
    let store = DynamoDbStore::builder()
        .table_name("no-such-table")
        .client(dynalite.client())
        .build()
        .unwrap();
    let error = warm_up_on(store).await.expect_err("no table");
    assert!(
        matches!(&error, WarmUpError::Misconfigured(e) if e.kind() == StoreErrorKind::NotFound),
        "{error:?}"
    );
    assert!(error.is_misconfiguration());
    assert!(
        error.to_string().contains("table 'no-such-table'"),
        "{error}"
    );
}

#[tokio::test]
async fn access_denied_is_a_misconfiguration_naming_the_table_and_the_permission() {
    let denied = mock!(Client::batch_get_item).then_error(|| {
        BatchGetItemError::generic(
            ErrorMetadata::builder()
                .code("AccessDeniedException")
                .message("User: arn:aws:sts::123456789012:assumed-role/charge is not authorized")
                .build(),
        )
    });
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, [&denied]);
    let store = DynamoDbStore::builder()
        .table_name("circuits")
        .client(client)
        .build()
        .unwrap();
    let error = warm_up_on(store).await.expect_err("denied");
    assert!(
        matches!(&error, WarmUpError::Misconfigured(e) if e.kind() == StoreErrorKind::AccessDenied),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("table 'circuits'") && message.contains("dynamodb:BatchGetItem"),
        "{message}"
    );
}

#[tokio::test]
async fn a_throttled_warm_up_fails_open() {
    let throttled = mock!(Client::batch_get_item).then_error(|| {
        BatchGetItemError::ProvisionedThroughputExceededException(
            ProvisionedThroughputExceededException::builder()
                .message("rate exceeded")
                .build(),
        )
    });
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, [&throttled]);
    let store = DynamoDbStore::builder()
        .table_name("circuits")
        .client(client)
        .build()
        .unwrap();
    let error = warm_up_on(store).await.expect_err("throttled");
    assert!(matches!(error, WarmUpError::Unavailable(_)), "{error:?}");
    assert!(!error.is_misconfiguration());
}
