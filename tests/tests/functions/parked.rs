//! Orders whose charge may have gone through: an ambiguous answer parks them, every parked
//! order is counted once and kept until an operator settles it with `parked-orders`.

use aws_sdk_dynamodb::types::AttributeValue;
use devstack::harness::function_process::{LogEcho, function_binary};
use devstack::harness::sample_stack::{LEDGER_TABLE, SampleStack};
use serde_json::json;

use crate::support::{drain, in_overflow, logs_with, replay_fails_no_item};

fn outcome_unknown_lines(logs: &[String]) -> usize {
    logs.iter()
        .filter(|l| l.contains(r#""PaymentOutcomeUnknown":1"#))
        .count()
}

/// Runs the `parked-orders` tool against the stack's ledger: exit status, stdout.
fn parked_orders(stack: &SampleStack, args: &[&str]) -> (bool, String) {
    let output = std::process::Command::new(function_binary("parked-orders").unwrap())
        .args(args)
        .envs(stack.function_env())
        .output()
        .unwrap();
    eprintln!("{}", String::from_utf8_lossy(&output.stderr));
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_504_after_the_charge_was_committed_parks_the_order_never_charges_it_twice() {
    let stack = SampleStack::start().await.unwrap();
    let charge = stack
        .start_function("charge", LogEcho::Stderr, &[])
        .await
        .unwrap();
    let replay = stack
        .start_function("overflow-replay", LogEcho::Stderr, &[])
        .await
        .unwrap();
    // The provider charges, its load balancer answers 504.
    stack.payments.commit_then_fail("gateway-000", 504);
    let order = json!({"order_id": "gateway-000", "amount": 12, "currency": "EUR"});
    let response = charge
        .invoke(order.clone())
        .await
        .unwrap()
        .expect_response();
    assert_eq!(response["outcome"], "unknown", "{response}");
    assert_eq!(response["statusCode"], 502, "{response}");
    assert_eq!(
        in_overflow(&stack).await,
        0,
        "a possibly charged order is not buffered"
    );
    assert_eq!(
        stack.ledger_status("gateway-000").await.unwrap().as_deref(),
        Some("unknown")
    );
    let unknown = |l: &str| l.contains(r#""PaymentOutcomeUnknown":1"#);
    assert_eq!(
        outcome_unknown_lines(&logs_with(&charge, 1, unknown).await),
        1
    );

    // Every later copy (a Lambda retry, a redrive) leaves it alone; the replay has nothing.
    let response = charge.invoke(order).await.unwrap().expect_response();
    assert_eq!(response["outcome"], "unknown", "{response}");
    drain(&stack, &replay, std::time::Duration::from_secs(20)).await;
    assert_eq!(
        stack.payments.charges().get("gateway-000").copied(),
        Some(1)
    );
    assert_eq!(
        outcome_unknown_lines(&charge.logs()),
        1,
        "counted once per order, not per copy"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_order_never_expires_and_an_operator_lists_and_settles_it() {
    let stack = SampleStack::start().await.unwrap();
    let charge = stack
        .start_function("charge", LogEcho::Stderr, &[])
        .await
        .unwrap();
    stack.payments.commit_then_fail("parked-000", 500);
    stack.payments.commit_then_fail("parked-001", 502);
    for id in ["parked-000", "parked-001"] {
        let response = charge
            .invoke(json!({"order_id": id, "amount": 12, "currency": "EUR"}))
            .await
            .unwrap()
            .expect_response();
        assert_eq!(response["outcome"], "unknown", "{response}");
        let item = stack.ledger_item(id).await.unwrap().unwrap();
        assert_eq!(item["status"], AttributeValue::S("unknown".into()));
        assert!(
            !item.contains_key("expiration"),
            "a parked item must not expire: {item:?}"
        );
    }
    let charged = json!({"order_id": "charged-000", "amount": 12, "currency": "EUR"});
    charge.invoke(charged).await.unwrap().expect_response();

    let (ok, listed) = parked_orders(&stack, &["list"]);
    assert!(ok);
    assert!(
        listed.contains("parked-000") && listed.contains("parked-001"),
        "{listed}"
    );
    assert!(!listed.contains("charged-000"), "{listed}");

    // The provider says: parked-000 was charged, parked-001 was not.
    let (ok, _) = parked_orders(
        &stack,
        &["settle", "parked-000", "charged", "ops: provider dashboard"],
    );
    assert!(ok);
    let item = stack.ledger_item("parked-000").await.unwrap().unwrap();
    assert_eq!(item["status"], AttributeValue::S("charged".into()));
    assert!(item.contains_key("expiration"), "{item:?}");
    let (ok, _) = parked_orders(
        &stack,
        &[
            "settle",
            "parked-001",
            "not-charged",
            "ops: no charge found",
        ],
    );
    assert!(ok);
    assert_eq!(stack.ledger_item("parked-001").await.unwrap(), None);
    // Only a parked order can be settled by hand.
    let (ok, _) = parked_orders(
        &stack,
        &["settle", "charged-000", "not-charged", "ops: typo"],
    );
    assert!(!ok, "a charged order must not be deleted by hand");
    assert!(stack.ledger_item("charged-000").await.unwrap().is_some());

    // A redriven copy of the order not charged is charged now; the charged one is a duplicate.
    for (id, duplicate) in [("parked-000", true), ("parked-001", false)] {
        let response = charge
            .invoke(json!({"order_id": id, "amount": 12, "currency": "EUR"}))
            .await
            .unwrap()
            .expect_response();
        assert_eq!(response["charged"], true, "{response}");
        assert_eq!(response.get("duplicate").is_some(), duplicate, "{response}");
    }
    assert_eq!(stack.payments.charges().get("parked-000").copied(), Some(1));
    assert_eq!(stack.payments.charges().get("parked-001").copied(), Some(2));
    let (_, listed) = parked_orders(&stack, &["list"]);
    assert!(!listed.contains("parked-"), "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_that_meets_a_parked_order_nobody_counted_counts_it_once() {
    let stack = SampleStack::start().await.unwrap();
    let replay = stack
        .start_function("overflow-replay", LogEcho::Stderr, &[])
        .await
        .unwrap();
    // What a park whose write landed but whose answer was lost (an SDK timeout, a killed
    // process) leaves: `unknown`, never counted, the claim's expiration still set.
    let s = |v: &str| AttributeValue::S(v.into());
    let n = |v: u64| AttributeValue::N(v.to_string());
    stack
        .dynalite
        .client()
        .put_item()
        .table_name(LEDGER_TABLE)
        .item("order_id", s("silent-000"))
        .item("status", s("unknown"))
        .item("attempt_id", s("a-lost"))
        .item("idempotency_key", s("silent-000"))
        .item("contents", s("12 EUR "))
        .item("started_at", n(1_700_000_000))
        .item("lease_until", n(1_700_000_060))
        .item("expiration", n(1_705_000_000))
        .item("detail", s("payment API timed out after 2s"))
        .send()
        .await
        .unwrap();
    let body = json!({"order_id": "silent-000", "amount": 12, "currency": "EUR"}).to_string();
    let event = json!({"Records": [{"messageId": "m-0", "body": body, "attributes": {}, "messageAttributes": {}}]});
    for _ in 0..3 {
        replay_fails_no_item(&replay, event.clone()).await;
    }
    let logs = logs_with(&replay, 1, |l| l.contains(r#""PaymentOutcomeUnknown":1"#)).await;
    assert_eq!(
        outcome_unknown_lines(&logs),
        1,
        "the parked order must be counted once, by the first copy that meets it"
    );
    let item = stack.ledger_item("silent-000").await.unwrap().unwrap();
    assert!(!item.contains_key("expiration"), "{item:?}");
    assert_eq!(stack.payments.requests(), 0);
}
