//! The replay waits out the circuit's backed-off recovery: a record that meets the circuit
//! after a failed probe reopened it is deferred until the rejection's `retry_after`, not
//! the plain recovery timeout, so it does not come back to meet the open circuit again.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::types::AttributeValue;
use devstack::harness::function_process::LogEcho;
use devstack::harness::sample_stack::SampleStack;
use serde_json::{Value, json};

use crate::support::logs_with;

const RECOVERY_SECS: u64 = 10;

fn batch(ids: &[&str]) -> Value {
    let records: Vec<Value> = ids
        .iter()
        .map(|id| {
            let body = json!({"order_id": id, "amount": 12, "currency": "EUR"}).to_string();
            json!({"messageId": id, "body": body, "attributes": {}, "messageAttributes": {}})
        })
        .collect();
    json!({ "Records": records })
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

async fn circuit_number(stack: &SampleStack, attribute: &str) -> Option<u64> {
    let item = stack.circuit_item("payment-backend").await.unwrap()?;
    match item.get(attribute) {
        Some(AttributeValue::N(n)) => n.parse().ok(),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_reopen_the_replay_defers_by_the_backed_off_wait_not_the_recovery_timeout() {
    let stack = SampleStack::start().await.unwrap();
    // The doubling backoff (less up to a quarter of jitter): after one reopen the wait is 15
    // to 20 s, where the recovery timeout alone says 10.
    let tunables = [
        ("CIRCUIT_RECOVERY_BACKOFF", "doubling".to_owned()),
        ("CIRCUIT_FAILURE_THRESHOLD", "3".to_owned()),
        ("CIRCUIT_RECOVERY_TIMEOUT_SECS", RECOVERY_SECS.to_string()),
        ("CIRCUIT_RECOVERY_JITTER_SECS", "0".to_owned()),
    ];
    let replay = stack
        .start_function("overflow-replay", LogEcho::Stderr, &tunables)
        .await
        .unwrap();
    stack.payments.set_down(true);
    replay
        .invoke(batch(&["down-000", "down-001", "down-002"]))
        .await
        .unwrap()
        .expect_response();
    assert_eq!(
        stack.circuit_state("payment-backend").await.unwrap(),
        "OPEN"
    );
    let opened_at = circuit_number(&stack, "opened_at").await.unwrap();

    // This environment opened it, so it probes at the recovery; the API is still down.
    while unix_now() < opened_at + RECOVERY_SECS + 1 {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    replay
        .invoke(batch(&["probe-000"]))
        .await
        .unwrap()
        .expect_response();
    assert_eq!(circuit_number(&stack, "reopen_count").await, Some(1));
    let reopened_at = circuit_number(&stack, "opened_at").await.unwrap();

    // A record that meets the reopened circuit waits until its backed-off probe.
    replay
        .invoke(batch(&["waiting-000"]))
        .await
        .unwrap()
        .expect_response();
    let deferred_by = unix_now();
    let deferred = |l: &str| l.contains("record deferred") && l.contains("waiting-000");
    let logs = logs_with(&replay, 1, deferred).await;
    let line = logs
        .iter()
        .find(|l| deferred(l))
        .unwrap_or_else(|| panic!("no deferral logged: {logs:#?}"));
    let delay: u64 = line
        .split("delay_secs")
        .nth(1)
        .and_then(|rest| {
            let digits: String = rest
                .chars()
                .skip_while(|c| !c.is_ascii_digit())
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        })
        .unwrap_or_else(|| panic!("no delay in {line}"));
    assert!(
        deferred_by + delay >= reopened_at + RECOVERY_SECS * 3 / 2,
        "deferred {delay} s at {deferred_by}: back before the backed-off probe of the opening at {reopened_at} ({line})"
    );
    assert_eq!(
        stack.payments.requests(),
        4,
        "three failures and one probe: the waiting record was not sent"
    );
}
