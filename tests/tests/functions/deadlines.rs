//! `charge` under the Runtime API's deadlines: a payment API that hangs past the function
//! timeout opens the circuit, each invocation answering before its deadline instead of
//! being killed with its failure uncounted.

use std::time::{Duration, Instant};

use devstack::harness::function_process::LogEcho;
use devstack::harness::runtime_api::Invocation;
use devstack::harness::sample_stack::SampleStack;
use serde_json::{Value, json};

/// The function timeout: the deadline of each invocation, a few seconds after it starts.
const FUNCTION_TIMEOUT: Duration = Duration::from_secs(3);
/// Failures that open the circuit.
const FAILURE_THRESHOLD: usize = 2;
/// How long the payment API takes to answer: far past the function timeout.
const HANG: Duration = Duration::from_secs(120);

fn order(n: usize) -> Value {
    json!({"order_id": format!("hang-{n:03}"), "amount": 10 + n, "currency": "EUR"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payment_api_hanging_past_the_function_timeout_opens_the_circuit_before_each_deadline() {
    let stack = SampleStack::start().await.unwrap();
    let settings = [
        ("CIRCUIT_FAILURE_THRESHOLD", FAILURE_THRESHOLD.to_string()),
        // No probe while the test runs.
        ("CIRCUIT_RECOVERY_TIMEOUT_SECS", "300".to_owned()),
        // The client's own timeout is longer than the deadline, so only the deadline can
        // end a hung charge.
        ("PAYMENT_TIMEOUT_MS", "60000".to_owned()),
    ];
    let charge = stack
        .start_function("charge", LogEcho::Stderr, &settings)
        .await
        .unwrap();
    charge.set_timeout(FUNCTION_TIMEOUT);
    stack.payments.set_latency(HANG);

    for n in 0..FAILURE_THRESHOLD {
        let started = Instant::now();
        let invocation = charge.invoke(order(n)).await.unwrap();
        let took = started.elapsed();
        let response = match invocation {
            Invocation::Response(response) => response,
            error => panic!("invocation {n} was not answered before its deadline: {error:?}"),
        };
        assert!(took < FUNCTION_TIMEOUT, "answered after {took:?}");
        // The request reached the API (the stub charged it): its outcome is unknown, and
        // the order is parked, never buffered as if the API had not been called.
        assert_eq!(response["statusCode"], 502, "{response}");
        assert_eq!(response["outcome"], "unknown", "{response}");
        let id = format!("hang-{n:03}");
        assert_eq!(
            stack.ledger_status(&id).await.unwrap().as_deref(),
            Some("unknown")
        );
        if n + 1 < FAILURE_THRESHOLD {
            assert_eq!(
                stack.circuit_state("payment-backend").await.unwrap(),
                "CLOSED",
                "one abandoned charge is below the threshold"
            );
        }
    }
    assert_eq!(
        stack.circuit_state("payment-backend").await.unwrap(),
        "OPEN",
        "the abandoned charges opened the circuit"
    );
    assert_eq!(charge.restarts(), 0, "no invocation ran into its deadline");

    // Open: the next order is buffered without calling the hung API.
    let started = Instant::now();
    let response = charge
        .invoke(order(FAILURE_THRESHOLD))
        .await
        .unwrap()
        .expect_response();
    assert!(started.elapsed() < FUNCTION_TIMEOUT);
    assert_eq!(response["statusCode"], 202, "{response}");
    assert_eq!(response["reason"], "circuit_open", "{response}");
    assert_eq!(stack.payments.requests(), FAILURE_THRESHOLD);
}
