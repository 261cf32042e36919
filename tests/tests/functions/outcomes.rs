//! Every outcome of a payment attempt ends charged once, declined, deferred, or kept (in the
//! queue, the DLQ, or parked `unknown` with its alarm): the paths where an order could vanish
//! or be answered for wrongly, on the real binaries.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use devstack::harness::function_process::LogEcho;
use devstack::harness::sample_stack::SampleStack;
use serde_json::{Value, json};

use crate::support::{RawPaymentApi, in_overflow, replay_fails_no_item};

/// An SQS event of one record per body, each with these message attributes.
fn batch(bodies: &[&str], attributes: Value) -> Value {
    let records: Vec<Value> = bodies
        .iter()
        .enumerate()
        .map(|(i, body)| json!({"messageId": format!("m-{i}"), "body": body, "attributes": {}, "messageAttributes": attributes}))
        .collect();
    json!({ "Records": records })
}

fn order_body(id: &str) -> String {
    json!({"order_id": id, "amount": 12, "currency": "EUR"}).to_string()
}

fn outcome_unknown_lines(logs: &[String]) -> usize {
    logs.iter()
        .filter(|l| l.contains(r#""PaymentOutcomeUnknown":1"#))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_the_ledger_cannot_park_keeps_the_record_until_a_later_receive_parks_it() {
    let mut stack = SampleStack::start().await.unwrap();
    // A lease that outlasts the attempt (0.9 s charge, put and settle of 1 s each).
    let settings = [
        ("LEDGER_LEASE_SECS", "3".to_owned()),
        ("LEDGER_OPERATION_TIMEOUT_MS", "1000".to_owned()),
        ("PAYMENT_TIMEOUT_MS", "900".to_owned()),
    ];
    let replay = Arc::new(
        stack
            .start_function("overflow-replay", LogEcho::Stderr, &settings)
            .await
            .unwrap(),
    );
    let body = order_body("lost-000");
    let event = batch(&[&body], json!({}));
    // The API takes the charge and never answers in time; while it is in flight the
    // ledger goes away, so the outcome cannot be parked.
    stack.payments.set_latency(Duration::from_secs(5));
    let invocation = {
        let replay = Arc::clone(&replay);
        let event = event.clone();
        tokio::spawn(async move { replay.invoke(event).await })
    };
    while stack.payments.requests() == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stack.dynalite.stop();
    let response = invocation.await.unwrap().unwrap().expect_response();
    assert_eq!(
        response["batchItemFailures"],
        json!([{"itemIdentifier": "m-0"}]),
        "a possibly charged order whose outcome is nowhere must not be deleted: {response}"
    );
    assert_eq!(
        outcome_unknown_lines(&replay.logs()),
        0,
        "nothing was parked yet"
    );

    // The ledger is back and the lease ran out: the record's next receive parks it, alarmed.
    stack.dynalite.restart().await.unwrap();
    stack.payments.set_latency(Duration::ZERO);
    tokio::time::sleep(Duration::from_millis(3500)).await;
    replay_fails_no_item(&replay, event).await;
    assert_eq!(
        stack.ledger_status("lost-000").await.unwrap().as_deref(),
        Some("unknown")
    );
    assert_eq!(outcome_unknown_lines(&replay.logs()), 1);
    assert_eq!(stack.payments.charges().get("lost-000").copied(), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_order_id_with_other_contents_is_a_conflict_not_a_duplicate() {
    let stack = SampleStack::start().await.unwrap();
    let charge = stack
        .start_function("charge", LogEcho::Stderr, &[])
        .await
        .unwrap();
    let first =
        json!({"order_id": "reused-000", "amount": 10.5, "currency": "EUR", "customer": "c-1"});
    let response = charge.invoke(first).await.unwrap().expect_response();
    assert_eq!(response["charged"], true, "{response}");

    // The same order again: a duplicate.
    let again =
        json!({"order_id": "reused-000", "amount": 10.50, "currency": "EUR", "customer": "c-1"});
    let response = charge.invoke(again).await.unwrap().expect_response();
    assert_eq!(response["duplicate"], true, "{response}");

    for other in [
        json!({"order_id": "reused-000", "amount": 99, "currency": "EUR", "customer": "c-1"}),
        json!({"order_id": "reused-000", "amount": 10.5, "currency": "EUR", "customer": "c-2"}),
    ] {
        let response = charge.invoke(other).await.unwrap().expect_response();
        assert_eq!(response["statusCode"], 409, "{response}");
        assert_eq!(response["conflict"], true, "{response}");
        assert!(response.get("duplicate").is_none(), "{response}");
    }
    assert_eq!(stack.payments.charges().get("reused-000").copied(), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_circuit_buffers_through_on_circuit_open_without_touching_the_ledger() {
    let stack = SampleStack::start().await.unwrap();
    let charge = stack
        .start_function("charge", LogEcho::Stderr, &[])
        .await
        .unwrap();
    stack.payments.set_down(true);
    for n in 0..3 {
        let response = charge
            .invoke(json!({"order_id": format!("down-{n:03}"), "amount": 5, "currency": "EUR"}))
            .await
            .unwrap()
            .expect_response();
        assert_eq!(response["reason"], "payment_unavailable", "{response}");
    }
    assert_eq!(
        stack.circuit_state("payment-backend").await.unwrap(),
        "OPEN"
    );
    let requests = stack.payments.requests();

    // A charge whose ledger does not exist: any claim would fail. The open circuit rejects
    // the call first, and its callback buffers the order.
    let no_ledger = [("LEDGER_TABLE", "no-such-ledger".to_owned())];
    let charge = stack
        .start_function("charge", LogEcho::Stderr, &no_ledger)
        .await
        .unwrap();
    let buffered_before = in_overflow(&stack).await;
    let response = charge
        .invoke(json!({"order_id": "open-000", "amount": 5, "currency": "EUR"}))
        .await
        .unwrap()
        .expect_response();
    assert_eq!(response["statusCode"], 202, "{response}");
    assert_eq!(response["reason"], "circuit_open", "{response}");
    assert_eq!(response["circuit"], "payment-backend", "{response}");
    assert_eq!(in_overflow(&stack).await, buffered_before + 1);
    assert_eq!(stack.payments.requests(), requests);
    assert_eq!(stack.ledger_status("open-000").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn amounts_reach_the_payment_api_exactly_as_the_caller_wrote_them() {
    let stack = SampleStack::start().await.unwrap();
    let api = RawPaymentApi::start().await;
    let replay = stack
        .start_function(
            "overflow-replay",
            LogEcho::Stderr,
            &[("PAYMENT_API_URL", api.url().to_owned())],
        )
        .await
        .unwrap();
    let amounts = ["10.50", "12345678901234567890.123456789", "0.10"];
    let bodies: Vec<String> = amounts
        .iter()
        .enumerate()
        .map(|(n, amount)| {
            format!(r#"{{"order_id": "exact-{n:03}", "amount": {amount}, "currency": "EUR"}}"#)
        })
        .collect();
    let bodies: Vec<&str> = bodies.iter().map(String::as_str).collect();
    replay_fails_no_item(&replay, batch(&bodies, json!({}))).await;
    let sent = api.bodies();
    assert_eq!(sent.len(), amounts.len(), "{sent:#?}");
    for (body, amount) in sent.iter().zip(amounts) {
        assert!(
            body.contains(&format!(r#""amount":{amount},"#)),
            "{amount} was not sent as written: {body}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_buffered_longer_than_the_maximum_is_left_for_the_dlq_uncharged() {
    let stack = SampleStack::start().await.unwrap();
    let replay = stack
        .start_function(
            "overflow-replay",
            LogEcho::Stderr,
            &[("REPLAY_MAX_ORDER_AGE_SECS", "3600".to_owned())],
        )
        .await
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let buffered_at = |at: u64| json!({"buffered_at": {"stringValue": at.to_string(), "stringListValues": [], "binaryListValues": [], "dataType": "Number"}});
    let old = order_body("old-000");
    let response = replay
        .invoke(batch(&[&old], buffered_at(now - 7200)))
        .await
        .unwrap()
        .expect_response();
    // Reported failed on every receive: the queue's redrive moves it to the DLQ (alarmed).
    assert_eq!(
        response["batchItemFailures"],
        json!([{"itemIdentifier": "m-0"}]),
        "{response}"
    );
    assert_eq!(
        stack.payments.requests(),
        0,
        "an expired order is not charged"
    );

    let fresh = order_body("fresh-000");
    replay_fails_no_item(&replay, batch(&[&fresh], buffered_at(now - 60))).await;
    assert_eq!(stack.payments.charges().get("fresh-000").copied(), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_bodies_stay_out_of_the_logs_and_the_ledger() {
    let stack = SampleStack::start().await.unwrap();
    let charge = stack
        .start_function("charge", LogEcho::Stderr, &[])
        .await
        .unwrap();
    stack.payments.decline("redacted-000");
    let response = charge
        .invoke(json!({"order_id": "redacted-000", "amount": 3, "currency": "EUR"}))
        .await
        .unwrap()
        .expect_response();
    assert_eq!(response["declined"], true, "{response}");
    let leaked: Vec<String> = charge
        .logs()
        .into_iter()
        .filter(|l| l.contains("card declined"))
        .collect();
    assert!(
        leaked.is_empty(),
        "the provider's body was logged: {leaked:#?}"
    );
    let item = stack.ledger_item("redacted-000").await.unwrap().unwrap();
    let Some(AttributeValue::S(detail)) = item.get("detail") else {
        panic!("no detail: {item:?}");
    };
    assert_eq!(detail, "payment API declined the order: HTTP 402");
}
