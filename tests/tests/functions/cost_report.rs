//! `cost-report` end to end: the real binary under the loopback Runtime API, Cost
//! Explorer from moto behind the fault proxy, circuit and snapshots in dynalite.

use std::time::Duration;

use devstack::fixtures::fault_proxy::{Fault, Service};
use devstack::harness::sample_stack::SampleStack;
use serde_json::{Value, json};

use crate::support::{sample_event, start};

const CIRCUIT: &str = "cost-explorer";

fn group(service: &str, amount: &str) -> Value {
    json!({"Keys": [service], "Metrics": {"UnblendedCost": {"Amount": amount, "Unit": "USD"}}})
}

/// Two pages: the second is what the request with `NextPageToken` gets.
fn two_pages() -> Vec<Value> {
    vec![
        json!({
            "ResultsByTime": [{
                "TimePeriod": {"Start": "2026-11-01", "End": "2026-11-02"},
                "Total": {},
                "Groups": [group("Amazon EC2", "10.0"), group("AWS Lambda", "0.5")],
                "Estimated": false,
            }],
            "NextPageToken": "page-2",
        }),
        json!({
            "ResultsByTime": [{
                "TimePeriod": {"Start": "2026-11-02", "End": "2026-11-03"},
                "Total": {},
                "Groups": [group("Amazon EC2", "2.0"), group("Amazon S3", "1.25")],
                "Estimated": false,
            }],
        }),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttling_opens_the_circuit_stale_snapshots_are_served_and_recovery_closes_it() {
    let stack = SampleStack::start().await.unwrap();
    stack.moto.seed_cost_and_usage(two_pages()).await.unwrap();
    let function = start(&stack, "cost-report").await;

    // Healthy: every page is read and summed; the answer becomes the snapshot.
    let live = function.invoke(json!({})).await.unwrap().expect_response();
    assert_eq!(live["stale"], false, "{live}");
    assert_eq!(live["breaker"], "closed");
    assert_eq!(live["total"], json!({"amount": 13.75, "unit": "USD"}));
    assert_eq!(
        live["by_service"][0],
        json!({"service": "Amazon EC2", "amount": 12.0, "unit": "USD"})
    );
    assert_eq!(live["by_service"].as_array().unwrap().len(), 3);
    assert_eq!(stack.proxy.seen(Service::CostExplorer), 2);

    // Throttled: each invocation answers the snapshot; three of them open the circuit.
    stack
        .proxy
        .inject(Service::CostExplorer, Some(Fault::Throttle));
    for _ in 0..3 {
        let stale = function.invoke(json!({})).await.unwrap().expect_response();
        assert_eq!(stale["stale"], true, "{stale}");
        assert_eq!(stale["total"], live["total"]);
    }
    // CE_MAX_ATTEMPTS=2: the SDK retried each throttled call once.
    assert_eq!(stack.proxy.injected(Service::CostExplorer), 6);
    assert_eq!(stack.circuit_state(CIRCUIT).await.unwrap(), "OPEN");

    // Open: the snapshot without a call to Cost Explorer.
    let seen = stack.proxy.seen(Service::CostExplorer);
    let open = function.invoke(json!({})).await.unwrap().expect_response();
    assert_eq!(open["stale"], true);
    assert_eq!(open["breaker"], "open");
    assert_eq!(open["by_service"], live["by_service"]);
    assert_eq!(stack.proxy.seen(Service::CostExplorer), seen);
    // Priming needs a live answer: while open it fails rather than re-store the snapshot.
    let (error_type, message) = function
        .invoke(json!({"prime": true}))
        .await
        .unwrap()
        .expect_error();
    assert_eq!(error_type, "CostExplorerUnavailable", "{message}");
    assert!(message.contains("circuit is open"), "{message}");

    // Recovered: after the recovery timeout one probe succeeds and closes the circuit.
    stack.proxy.inject(Service::CostExplorer, None);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let recovered = function.invoke(json!({})).await.unwrap().expect_response();
    assert_eq!(recovered["stale"], false, "{recovered}");
    assert_eq!(recovered["total"], live["total"]);
    assert_eq!(stack.circuit_state(CIRCUIT).await.unwrap(), "CLOSED");
    let logs = function.logs();
    for metric in ["CircuitOpened", "CircuitHalfOpened", "CircuitClosed"] {
        let emf = format!(r#""{metric}":1}}"#);
        assert!(
            logs.iter().any(|l| l.ends_with(&emf)),
            "no {metric} record: {logs:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_snapshot_an_outage_is_an_error_that_says_the_cache_is_cold() {
    let stack = SampleStack::start().await.unwrap();
    let function = start(&stack, "cost-report").await;
    stack
        .proxy
        .inject(Service::CostExplorer, Some(Fault::Throttle));
    let (error_type, message) = function.invoke(json!({})).await.unwrap().expect_error();
    assert_eq!(error_type, "CacheCold");
    assert!(message.contains("cache is cold"), "{message}");
    assert!(message.contains("prime"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_connections_and_timeouts_count_as_failures() {
    let stack = SampleStack::start().await.unwrap();
    let function = start(&stack, "cost-report").await;
    stack
        .proxy
        .inject(Service::CostExplorer, Some(Fault::DropConnection));
    for _ in 0..2 {
        let (error_type, _) = function.invoke(json!({})).await.unwrap().expect_error();
        assert_eq!(error_type, "CacheCold");
    }
    assert_eq!(stack.circuit_state(CIRCUIT).await.unwrap(), "CLOSED");
    // Slower than CE_ATTEMPT_TIMEOUT_MS (2 s): the SDK times out.
    stack.proxy.inject(
        Service::CostExplorer,
        Some(Fault::Latency(Duration::from_secs(3))),
    );
    let (error_type, message) = function.invoke(json!({})).await.unwrap().expect_error();
    assert_eq!(error_type, "CacheCold");
    assert!(message.to_lowercase().contains("timeout"), "{message}");
    assert_eq!(stack.circuit_state(CIRCUIT).await.unwrap(), "OPEN");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_events_are_rejected_before_any_call() {
    let stack = SampleStack::start().await.unwrap();
    let function = start(&stack, "cost-report").await;
    for (event, expected) in [
        (
            json!({"start": "2026-02-30", "end": "2026-03-05"}),
            "start must be a date",
        ),
        (
            json!({"start": "2026-03-05", "end": "2026-03-01"}),
            "must be before end",
        ),
        (json!({"start": "2026-03-01"}), "both start and end"),
        (
            json!({"start": "2019-01-01", "end": "2019-02-01"}),
            "older than Cost Explorer keeps",
        ),
        (
            json!({"start": "2026-03-01", "end": "2999-01-01"}),
            "in the future",
        ),
        (json!([1, 2, 3]), "expected {\"start\""),
    ] {
        let (error_type, message) = function.invoke(event.clone()).await.unwrap().expect_error();
        assert_eq!(error_type, "InvalidRequest", "{event}");
        assert!(message.contains(expected), "{event}: {message}");
    }
    assert_eq!(stack.proxy.seen(Service::CostExplorer), 0);
    assert!(stack.circuit_item(CIRCUIT).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sample_events_invoke_successfully() {
    let stack = SampleStack::start().await.unwrap();
    stack.moto.seed_cost_and_usage(two_pages()).await.unwrap();
    let function = start(&stack, "cost-report").await;
    for name in ["cost-report-prime.json", "cost-report.json"] {
        let response = function
            .invoke(sample_event(name))
            .await
            .unwrap()
            .expect_response();
        assert_eq!(response["stale"], false, "{name}: {response}");
        assert_eq!(response["total"]["amount"], 13.75, "{name}");
    }
}
