//! Refusals: an order the API (or validation) refuses is one order's problem, never the
//! API's, and leaves a trace even when nobody reads the answer.

use devstack::harness::function_process::LogEcho;
use devstack::harness::sample_stack::SampleStack;
use serde_json::{Value, json};

use crate::support::{logs_with, replay_fails_no_item};

fn rejected_lines(logs: &[String], reason: &str) -> usize {
    logs.iter()
        .filter(|l| {
            l.contains(r#""OrderRejected":1"#) && l.contains(&format!(r#""reason":"{reason}""#))
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_order_or_a_conflict_sent_as_an_event_invocation_leaves_a_warning_and_a_metric()
{
    let stack = SampleStack::start().await.unwrap();
    let charge = stack
        .start_function("charge", LogEcho::Stderr, &[])
        .await
        .unwrap();
    // An Event invocation: Lambda discards whatever the function answers.
    let _discarded = charge
        .invoke(json!({"order_id": "bad-000", "amount": "12", "currency": "EUR"}))
        .await
        .unwrap();
    let logs = logs_with(&charge, 2, |l| l.contains("bad-000")).await;
    assert_eq!(rejected_lines(&logs, "invalid"), 1, "{logs:#?}");
    assert!(
        logs.iter()
            .any(|l| l.contains("WARN") && l.contains("order rejected") && l.contains("bad-000")),
        "{logs:#?}"
    );

    let first = json!({"order_id": "taken-000", "amount": 12, "currency": "EUR"});
    charge.invoke(first).await.unwrap().expect_response();
    let other = json!({"order_id": "taken-000", "amount": 13, "currency": "EUR"});
    let _discarded = charge.invoke(other).await.unwrap();
    // The warning and the metric are two lines: wait for both, the metric's last.
    let logs = logs_with(&charge, 2, |l| l.contains(r#""reason":"conflict""#)).await;
    assert_eq!(rejected_lines(&logs, "conflict"), 1, "{logs:#?}");
}

fn order(id: &str, currency: &str) -> Value {
    json!({"order_id": id, "amount": 12, "currency": currency})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_abc_orders_among_good_ones_are_refused_and_leave_the_circuit_closed() {
    let stack = SampleStack::start().await.unwrap();
    let charge = stack
        .start_function("charge", LogEcho::Stderr, &[])
        .await
        .unwrap();
    // The provider refuses the currency; so must validation, before any call.
    stack.payments.refuse("ABC");
    for n in 0..5 {
        let good = charge
            .invoke(order(&format!("good-{n:03}"), "EUR"))
            .await
            .unwrap()
            .expect_response();
        assert_eq!(good["charged"], true, "{good}");
        let bad = charge
            .invoke(order(&format!("abc-{n:03}"), "ABC"))
            .await
            .unwrap()
            .expect_response();
        assert_eq!(bad["statusCode"], 400, "{bad}");
    }
    let good = charge
        .invoke(order("good-005", "EUR"))
        .await
        .unwrap()
        .expect_response();
    assert_eq!(good["charged"], true, "{good}");
    assert_eq!(
        stack.circuit_state("payment-backend").await.unwrap(),
        "CLOSED"
    );
    assert_eq!(
        stack.payments.requests(),
        6,
        "only the good orders reach the API"
    );
    assert!(stack.payments.charged_twice().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_orders_refusal_never_opens_the_circuit_every_orders_refusal_does() {
    let stack = SampleStack::start().await.unwrap();
    let replay = stack
        .start_function("overflow-replay", LogEcho::Stderr, &[])
        .await
        .unwrap();
    let batch = |ids: &[&str]| {
        let records: Vec<Value> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| json!({"messageId": format!("m-{i}"), "body": order(id, "EUR").to_string(), "attributes": {}, "messageAttributes": {}}))
            .collect();
        json!({ "Records": records })
    };
    // A poison order the API refuses (400, no decline code), received again and again:
    // more than the failure threshold (3) of refusals, all its own.
    stack.payments.refuse("poison-000");
    for _ in 0..6 {
        replay
            .invoke(batch(&["poison-000"]))
            .await
            .unwrap()
            .expect_response();
    }
    assert_eq!(
        stack.circuit_state("payment-backend").await.unwrap(),
        "CLOSED"
    );
    replay_fails_no_item(&replay, batch(&["good-000"])).await;
    assert_eq!(stack.payments.charges().get("good-000").copied(), Some(1));

    // The API refuses every order alike (it changed): distinct orders corroborate each
    // other's refusal, and the circuit opens.
    stack.payments.refuse("EUR");
    let ids: Vec<String> = (0..6).map(|n| format!("changed-{n:03}")).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    replay.invoke(batch(&ids)).await.unwrap().expect_response();
    assert_eq!(
        stack.circuit_state("payment-backend").await.unwrap(),
        "OPEN"
    );
}
