//! What no local server produces: throttling, 5xx, a lost write that carries the old item
//! (`ReturnValuesOnConditionCheckFailure`, which dynalite ignores; `lost_write.rs` takes
//! both paths on moto and dynalite), and a DynamoDB that
//! accepts connections but never answers. SDK errors must stop in the store as
//! `StoreError`s naming the operation, the table and the cause; the breaker fails open
//! and backs off.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::ErrorMetadata;
use aws_sdk_dynamodb::operation::get_item::{GetItemError, GetItemOutput};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::{UpdateItemError, UpdateItemOutput};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::types::error::{
    ConditionalCheckFailedException, ProvisionedThroughputExceededException, ThrottlingException,
};
use aws_smithy_mocks::{Rule, RuleMode, mock, mock_client};
use breaker_runtime::store::{
    CircuitRecord, DynamoDbStore, FailureReport, RecordWrite, StateStore, WriteOutcome,
};
use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitState};
use devstack::fixtures::sdk::local_sdk_config;

type Error = Box<dyn std::error::Error + Send + Sync>;

const T0: u64 = 1_700_000_000;

fn store_on(client: Client) -> DynamoDbStore {
    DynamoDbStore::builder()
        .table_name("circuits")
        .client(client)
        .build()
        .expect("valid store")
}

fn mocked(rules: &[&Rule]) -> DynamoDbStore {
    store_on(mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, rules))
}

fn open_item() -> HashMap<String, AttributeValue> {
    HashMap::from([
        ("id".into(), AttributeValue::S("ce".into())),
        ("state".into(), AttributeValue::S("OPEN".into())),
        ("failure_count".into(), AttributeValue::N("4".into())),
        ("opened_at".into(), AttributeValue::N(T0.to_string())),
        (
            "expiration".into(),
            AttributeValue::N((T0 + 3630).to_string()),
        ),
    ])
}

fn open_record() -> CircuitRecord {
    CircuitRecord::open(T0, 4)
}

fn trip() -> RecordWrite {
    RecordWrite::Trip {
        opened_by: None,
        failure_count: 5,
        opened_at: T0 + 1,
        expiration: T0 + 3631,
        open_until: None,
    }
}

#[tokio::test]
async fn throttling_is_a_store_error_naming_operation_table_and_cause() {
    let throttled = mock!(Client::get_item).then_error(|| {
        GetItemError::ProvisionedThroughputExceededException(
            ProvisionedThroughputExceededException::builder()
                .message("rate exceeded")
                .build(),
        )
    });
    let put_throttled = mock!(Client::put_item).then_error(|| {
        PutItemError::ThrottlingException(
            ThrottlingException::builder().message("slow down").build(),
        )
    });
    let store = mocked(&[&throttled, &put_throttled]);

    let read = store.read("ce").await.expect_err("throttled").to_string();
    assert!(read.contains("GetItem"), "{read}");
    assert!(read.contains("'circuits'"), "{read}");
    assert!(read.contains("ProvisionedThroughputExceeded"), "{read}");
    let write = store
        .apply("ce", &trip())
        .await
        .expect_err("throttled")
        .to_string();
    assert!(
        write.contains("PutItem") && write.contains("Throttling"),
        "{write}"
    );
}

fn failure_report() -> FailureReport {
    FailureReport {
        window_start: T0,
        window_secs: 10,
        failures: 1,
        calls: 1,
        new_reporter: 1,
        expiration: T0 + 3610,
    }
}

#[tokio::test]
async fn a_throttled_report_is_a_throttled_store_error() {
    let throttled = mock!(Client::update_item).then_error(|| {
        // The code, as the service's response carries it: throttling is told apart by it.
        let code = "ProvisionedThroughputExceededException";
        UpdateItemError::ProvisionedThroughputExceededException(
            ProvisionedThroughputExceededException::builder()
                .message("rate exceeded")
                .meta(ErrorMetadata::builder().code(code).build())
                .build(),
        )
    });
    let store = mocked(&[&throttled]);
    let error = store
        .report("ce", &failure_report())
        .await
        .expect_err("throttled");
    assert!(error.is_throttled(), "{error}");
    let text = error.to_string();
    assert!(
        text.contains("UpdateItem") && text.contains("'circuits'"),
        "{text}"
    );
}

#[tokio::test]
async fn a_report_answered_without_its_counters_is_a_store_error() {
    let bare = mock!(Client::update_item).then_output(|| {
        UpdateItemOutput::builder()
            .attributes("fleet_failures", AttributeValue::N("1".into()))
            .attributes("fleet_calls", AttributeValue::S("one".into()))
            .build()
    });
    let store = mocked(&[&bare]);
    let error = store
        .report("ce", &failure_report())
        .await
        .expect_err("malformed")
        .to_string();
    assert!(
        error.contains("malformed fleet tally") && error.contains("fleet_calls"),
        "{error}"
    );
}

#[tokio::test]
async fn server_errors_are_store_errors() {
    let get_500 = mock!(Client::get_item)
        .sequence()
        .http_status(500, Some("{\"__type\":\"InternalServerError\"}".into()))
        .repeatedly()
        .build();
    let update_503 = mock!(Client::update_item)
        .sequence()
        .http_status(503, None)
        .repeatedly()
        .build();
    let store = mocked(&[&get_500, &update_503]);
    let read = store.read("ce").await.expect_err("500").to_string();
    assert!(read.contains("GetItem"), "{read}");
    let election = RecordWrite::Elect {
        owner: "env".into(),
        expected_opened_at: Some(T0),
        expected_successes: 0,
        now: T0 + 30,
        lease_expiry: T0 + 60,
        expiration: T0 + 3660,
    };
    let elect = store
        .apply("ce", &election)
        .await
        .expect_err("503")
        .to_string();
    assert!(elect.contains("UpdateItem"), "{elect}");
}

#[tokio::test]
async fn a_lost_write_adopts_the_returned_item_without_reading() {
    let lost_with_item = mock!(Client::put_item).then_error(|| {
        PutItemError::ConditionalCheckFailedException(
            ConditionalCheckFailedException::builder()
                .message("The conditional request failed")
                .set_item(Some(open_item()))
                .build(),
        )
    });
    let read = mock!(Client::get_item).then_output(|| GetItemOutput::builder().build());
    let store = mocked(&[&lost_with_item, &read]);
    let outcome = store.apply("ce", &trip()).await;
    assert_eq!(outcome, Ok(WriteOutcome::Lost(Some(open_record()))));
    assert_eq!(
        read.num_calls(),
        0,
        "the old item came with the error: no read"
    );
}

#[tokio::test]
async fn a_lost_write_without_the_item_reads_it_once_consistently() {
    let lost_bare = mock!(Client::put_item).then_error(|| {
        PutItemError::ConditionalCheckFailedException(
            ConditionalCheckFailedException::builder().build(),
        )
    });
    let consistent_read = mock!(Client::get_item)
        .match_requests(|r| r.consistent_read() == Some(true))
        .then_output(|| GetItemOutput::builder().set_item(Some(open_item())).build());
    let store = mocked(&[&lost_bare, &consistent_read]);
    let outcome = store.apply("ce", &trip()).await;
    assert_eq!(outcome, Ok(WriteOutcome::Lost(Some(open_record()))));
    assert_eq!(consistent_read.num_calls(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_store_fails_open_backs_off_and_still_trips_locally() {
    let throttled_reads = mock!(Client::get_item).then_error(|| {
        GetItemError::ProvisionedThroughputExceededException(
            ProvisionedThroughputExceededException::builder().build(),
        )
    });
    let throttled_writes = mock!(Client::put_item)
        .then_error(|| PutItemError::ThrottlingException(ThrottlingException::builder().build()));
    let store = Arc::new(mocked(&[&throttled_reads, &throttled_writes]));
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(3)
        .local_cache_max_age(Duration::ZERO)
        .store_error_backoff(Duration::from_secs(60))
        .build()
        .expect("valid config");
    let breaker = CircuitBreaker::new("ce", store, config);

    for i in 0..1_000u32 {
        let ran: Result<u32, Error> = breaker.call(|| async move { Ok(i) }).await;
        assert_eq!(ran.expect("fails open: the call runs"), i);
    }
    // One read failed; the back-off kept the other 999 calls away from the store.
    assert_eq!(throttled_reads.num_calls(), 1);

    // Failures still trip the circuit, locally, even though the store is unusable.
    for _ in 0..3 {
        let _: Result<(), Error> = breaker.call(|| async { Err("503".into()) }).await;
    }
    assert_eq!(breaker.state(), CircuitState::Open);
    assert_eq!(
        throttled_writes.num_calls(),
        0,
        "still backing off: no write attempted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_never_answers_costs_at_most_the_store_timeout() {
    // Accepts connections, never answers: a DynamoDB that hangs.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let endpoint = format!("http://{}", listener.local_addr().expect("address"));
    let black_hole = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let local_config = local_sdk_config(&endpoint);
    let store = DynamoDbStore::builder()
        .table_name("circuits")
        .sdk_config(&local_config)
        .build()
        .expect("valid store");
    let timeout = Duration::from_millis(300);
    let config = CircuitBreakerConfig::builder()
        .store_timeout(timeout)
        .store_error_backoff(Duration::from_secs(60))
        .build()
        .expect("valid config");
    let breaker = CircuitBreaker::new("ce", Arc::new(store), config);

    let started = Instant::now();
    let first: Result<u8, Error> = breaker.call(|| async { Ok(1) }).await;
    let first_took = started.elapsed();
    assert_eq!(first.expect("fails open"), 1);
    assert!(first_took >= timeout, "the store was asked: {first_took:?}");
    // Scheduling slack on a shared 2-core machine.
    assert!(
        first_took < timeout + Duration::from_millis(200),
        "{first_took:?}"
    );

    let started = Instant::now();
    for _ in 0..100 {
        let again: Result<u8, Error> = breaker.call(|| async { Ok(2) }).await;
        assert_eq!(again.expect("fails open"), 2);
    }
    assert!(
        started.elapsed() < timeout,
        "backing off: 100 calls never waited for the store ({:?})",
        started.elapsed()
    );
    black_hole.abort();
}
