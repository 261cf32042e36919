//! `charge` and `overflow-replay` end to end: real binaries under the loopback Runtime API,
//! dynalite for the circuit, moto for SQS behind the fault proxy, a stub payment API.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_sqs::types::MessageSystemAttributeName;
use devstack::fixtures::fault_proxy::{Fault, Service};
use devstack::harness::function_process::{FunctionProcess, LogEcho};
use devstack::harness::runtime_api::Invocation;
use devstack::harness::sample_stack::SampleStack;
use serde_json::{Value, json};

use crate::support::{
    dead_letters, drain, in_overflow, overflow_depth, replay_fails_no_item, sample_event, start,
};

const ORDERS: usize = 100;
/// Longer than buffering 100 orders takes in a debug build on a busy 2-core machine.
const RECOVERY_SECS: u64 = 30;
/// The replay did not open the circuit (charge did): it probes once the recovery, its cache
/// age (5 s), a second and its jitter have passed.
const JITTER_SECS: u64 = 1;
const FALLBACK_SECS: u64 = 5 + 1 + JITTER_SECS;

fn order(n: usize) -> Value {
    json!({"order_id": format!("order-{n:03}"), "amount": 10 + n, "currency": "EUR", "customer": "c-1"})
}

/// Invokes like Lambda's asynchronous invocation: a failed invocation is retried (twice).
async fn invoke_async(function: &FunctionProcess, event: Value) -> Invocation {
    let mut outcome = function.invoke(event.clone()).await.unwrap();
    for _ in 0..2 {
        if matches!(outcome, Invocation::Response(_)) {
            break;
        }
        outcome = function.invoke(event.clone()).await.unwrap();
    }
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_buffers_every_order_and_replay_charges_each_once_after_recovery() {
    let stack = SampleStack::start().await.unwrap();
    // Two failures open the circuit (the first two orders are buffered as transient
    // failures); the recovery timeout is long enough that no probe runs while orders stream in.
    let slow_recovery = [
        ("CIRCUIT_FAILURE_THRESHOLD", "2".to_owned()),
        ("CIRCUIT_RECOVERY_TIMEOUT_SECS", RECOVERY_SECS.to_string()),
        ("CIRCUIT_RECOVERY_JITTER_SECS", JITTER_SECS.to_string()),
    ];
    let charge = stack
        .start_function("charge", LogEcho::Stderr, &slow_recovery)
        .await
        .unwrap();
    let replay = stack
        .start_function("overflow-replay", LogEcho::Stderr, &slow_recovery)
        .await
        .unwrap();

    stack.payments.set_down(true);
    let mut buffered = 0;
    for n in 0..ORDERS {
        let response = invoke_async(&charge, order(n)).await.expect_response();
        assert_eq!(response["statusCode"], 202, "{response}");
        assert_eq!(response["buffered"], true);
        let expected_reason = if n < 2 {
            "payment_unavailable"
        } else {
            "circuit_open"
        };
        assert_eq!(response["reason"], expected_reason, "{response}");
        if n >= 2 {
            assert_eq!(response["circuit"], "payment-backend");
        }
        buffered += 1;
    }
    assert_eq!(buffered, ORDERS);
    assert_eq!(
        stack.circuit_state("payment-backend").await.unwrap(),
        "OPEN"
    );
    // Two failures opened the circuit; after that the payment API was left alone.
    assert_eq!(stack.payments.requests(), 2);
    assert_eq!(in_overflow(&stack).await, ORDERS);

    // Each message is the order's validated fields, with the circuit's attributes.
    let sqs = stack.moto.sqs();
    let peek = sqs
        .receive_message()
        .queue_url(&stack.queues.queue_url)
        .message_attribute_names("All")
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .send()
        .await
        .unwrap();
    let message = &peek.messages()[0];
    let body: Value = serde_json::from_str(message.body().unwrap()).unwrap();
    let attributes = message.message_attributes().unwrap();
    let attribute = |name: &str| attributes[name].string_value().unwrap().to_owned();
    assert_eq!(attribute("circuit"), "payment-backend");
    assert_eq!(body["order_id"], attribute("order_id"));
    let n: usize = attribute("order_id")[6..].parse().unwrap();
    assert_eq!(body, order(n));
    assert!(attribute("buffered_at").parse::<u64>().unwrap() > 1_700_000_000);
    if attribute("reason") == "circuit_open" {
        assert!(attribute("opened_at").parse::<u64>().unwrap() > 1_700_000_000);
    } else {
        assert_eq!(attribute("reason"), "payment_unavailable");
    }
    sqs.change_message_visibility()
        .queue_url(&stack.queues.queue_url)
        .receipt_handle(message.receipt_handle().unwrap())
        .visibility_timeout(0)
        .send()
        .await
        .unwrap();

    // While open, replay defers every record without calling the payment API: none is
    // reported failed (no receive spent), every one is still in the queue, delayed.
    let requests_before = stack.payments.requests();
    let pass = stack.replay_once(&replay).await.unwrap();
    assert!(pass.received > 0);
    assert_eq!(pass.failed, 0, "{pass:?}");
    assert_eq!(stack.payments.requests(), requests_before);
    assert_eq!(overflow_depth(&stack).await, ORDERS);

    // Recovery: after the timeout (and the replay's fallback: charge opened the circuit)
    // one probe closes the circuit, then the queue drains.
    stack.payments.set_down(false);
    let opened_at = match stack
        .circuit_item("payment-backend")
        .await
        .unwrap()
        .unwrap()["opened_at"]
    {
        aws_sdk_dynamodb::types::AttributeValue::N(ref n) => n.parse::<u64>().unwrap(),
        ref other => panic!("opened_at is {other:?}"),
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    tokio::time::sleep(Duration::from_secs(
        (opened_at + RECOVERY_SECS + FALLBACK_SECS + 1).saturating_sub(now),
    ))
    .await;
    assert_eq!(drain(&stack, &replay, Duration::from_secs(120)).await, 0);
    assert_eq!(
        stack.circuit_state("payment-backend").await.unwrap(),
        "CLOSED"
    );
    let expected: BTreeSet<String> = (0..ORDERS).map(|n| format!("order-{n:03}")).collect();
    assert_eq!(stack.payments.charged(), expected);
    assert_eq!(stack.payments.charged_twice(), BTreeSet::new());
    assert_eq!(in_overflow(&stack).await, 0);
    assert_eq!(dead_letters(&stack).await, 0);
    // Each transition wrote one EMF record.
    let emf_opened = charge
        .logs()
        .iter()
        .filter(|l| l.contains(r#""CircuitOpened":1"#))
        .count();
    assert_eq!(emf_opened, 1, "{:#?}", charge.logs());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_sqs_is_unavailable_too_the_invocation_fails_instead_of_dropping_the_order() {
    let stack = SampleStack::start().await.unwrap();
    let charge = start(&stack, "charge").await;
    // The payment API fails: charge buffers the order (a transient failure).
    stack.payments.set_down(true);
    let response = charge.invoke(order(1)).await.unwrap().expect_response();
    assert_eq!(response["statusCode"], 202, "{response}");
    assert_eq!(response["reason"], "payment_unavailable");

    // SQS fails too: the invocation fails, and the ledger claim is released.
    stack.proxy.inject(Service::Sqs, Some(Fault::Unavailable));
    let (error_type, message) = charge.invoke(order(7)).await.unwrap().expect_error();
    assert_eq!(error_type, "BufferFailed");
    assert!(message.contains("order-007"), "{message}");
    assert!(stack.proxy.injected(Service::Sqs) >= 1);
    assert_eq!(stack.ledger_status("order-007").await.unwrap(), None);

    // SQS answers too slowly: SQS_OPERATION_TIMEOUT_MS bounds the wait.
    stack
        .proxy
        .inject(Service::Sqs, Some(Fault::Latency(Duration::from_secs(10))));
    let started = std::time::Instant::now();
    let (error_type, _) = charge.invoke(order(8)).await.unwrap().expect_error();
    assert_eq!(error_type, "BufferFailed");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );

    stack.proxy.inject(Service::Sqs, None);
    assert_eq!(in_overflow(&stack).await, 1);
    // Lambda's retry of the same event, once SQS is back, buffers it.
    let response = charge.invoke(order(7)).await.unwrap().expect_response();
    assert_eq!(response["statusCode"], 202, "{response}");
    assert_eq!(in_overflow(&stack).await, 2);
    assert_eq!(stack.payments.charged(), BTreeSet::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_events_get_an_error_and_leave_the_circuit_alone() {
    let stack = SampleStack::start().await.unwrap();
    let charge = start(&stack, "charge").await;
    let replay = start(&stack, "overflow-replay").await;
    for (event, expected) in [
        (
            json!({"amount": 5, "currency": "EUR"}),
            "order_id is required",
        ),
        (
            json!({"order_id": "o-1", "amount": -5, "currency": "EUR"}),
            "amount must be a positive number",
        ),
        (
            json!({"order_id": "o-1", "amount": 5, "currency": "euro"}),
            "currency must be an ISO 4217 code",
        ),
        (json!("not an order"), "must be a JSON object"),
        (
            json!({"order_id": "o-\u{FFFE}", "amount": 5, "currency": "EUR"}),
            "order_id contains U+FFFE",
        ),
        (
            json!({"order_id": "o-1", "amount": 5, "currency": "EUR", "customer": "c-\u{FFFF}"}),
            "customer contains U+FFFF",
        ),
        (
            json!({"order_id": "o-1", "amount": 5, "currency": "EUR", "note": "x".repeat(9000)}),
            "at most 8192 are accepted",
        ),
    ] {
        let response = charge
            .invoke(event.clone())
            .await
            .unwrap()
            .expect_response();
        assert_eq!(response["statusCode"], 400, "{event}: {response}");
        assert!(
            response["error"].as_str().unwrap().contains(expected),
            "{response}"
        );
    }

    // Not an SQS event at all: the runtime rejects it.
    let (error_type, _) = replay
        .invoke(json!({"Records": "none"}))
        .await
        .unwrap()
        .expect_error();
    assert!(!error_type.is_empty());
    // A record whose body is not an order: reported failed (it reaches the DLQ in time).
    let event = json!({"Records": [{"messageId": "m-1", "body": "{not json", "attributes": {}, "messageAttributes": {}}]});
    let response = replay.invoke(event).await.unwrap().expect_response();
    assert_eq!(
        response["batchItemFailures"],
        json!([{"itemIdentifier": "m-1"}])
    );

    assert_eq!(stack.payments.requests(), 0);
    assert_eq!(in_overflow(&stack).await, 0);
    assert!(
        stack
            .circuit_item("payment-backend")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sample_events_invoke_successfully() {
    let stack = SampleStack::start().await.unwrap();
    let charge = start(&stack, "charge").await;
    let replay = start(&stack, "overflow-replay").await;

    let response = charge
        .invoke(sample_event("charge.json"))
        .await
        .unwrap()
        .expect_response();
    assert_eq!(response["charged"], true, "{response}");
    assert_eq!(response["order_id"], "order-1001");

    replay_fails_no_item(&replay, sample_event("overflow-replay.json")).await;
    assert_eq!(
        stack.payments.charged(),
        BTreeSet::from(["order-1001".to_owned()])
    );
}
