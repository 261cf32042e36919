//! A user's function written as the README's quickstart shows (`quickstart-function`: the
//! attribute with `failure_threshold = 3`, the default store, `breaker_runtime::lambda::run`),
//! as a fresh process under the Runtime API's deadlines, against an inventory API that
//! accepts connections and never answers: each invocation answers before its deadline with
//! the hang counted, and the third opens the circuit for the fleet.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use devstack::fixtures::dynalite::Dynalite;
use devstack::harness::function_process::{FunctionProcess, LogEcho};
use devstack::harness::runtime_api::{Invocation, TIMED_OUT};
use serde_json::json;
use tokio::net::TcpListener;

/// The function timeout, as in the template: each invocation's deadline.
const FUNCTION_TIMEOUT: Duration = Duration::from_secs(3);
/// The quickstart's `failure_threshold`.
const FAILURE_THRESHOLD: usize = 3;

/// An API that accepts every connection and never answers; how many it accepted.
async fn hung_api() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            held.push(stream);
        }
    });
    (address, accepted)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quickstart_function_whose_api_hangs_opens_its_circuit_within_three_invocations() {
    let dynalite = Dynalite::start().await.unwrap();
    dynalite
        .create_circuit_table("circuit-breakers")
        .await
        .unwrap();
    let (inventory, calls) = hung_api().await;
    let mut env = dynalite.env();
    env.push(("INVENTORY_URL", inventory));
    let function = FunctionProcess::start("quickstart-function", &env, LogEcho::Stderr)
        .await
        .unwrap();
    function.set_timeout(FUNCTION_TIMEOUT);

    let mut outcomes = Vec::new();
    for n in 1..=FAILURE_THRESHOLD {
        outcomes.push(
            function
                .invoke(json!({ "sku": format!("sku-{n}") }))
                .await
                .unwrap(),
        );
    }
    let timed_out = outcomes
        .iter()
        .filter(|o| matches!(o, Invocation::Error { error_type, .. } if error_type == TIMED_OUT))
        .count();
    let hung = calls.load(Ordering::SeqCst);
    let state = circuit_state(&dynalite).await;
    eprintln!(
        "{FAILURE_THRESHOLD} invocations: {timed_out} timed out, the hung API saw {hung} calls, circuit item: {state}"
    );
    for (n, outcome) in outcomes.into_iter().enumerate() {
        let (error_type, message) = outcome.expect_error();
        assert!(
            message.contains("abandoned"),
            "invocation {n} failed with the abandoned call, not its deadline: {error_type}: {message}"
        );
    }
    assert_eq!(state, "OPEN", "the hung calls opened the circuit");
    assert_eq!(
        function.restarts(),
        0,
        "no invocation ran into its deadline"
    );
    assert_eq!(
        hung, FAILURE_THRESHOLD,
        "one call per invocation reached the API"
    );

    // Open: the next invocation fails fast without calling the API.
    let (_, message) = function
        .invoke(json!({ "sku": "sku-open" }))
        .await
        .unwrap()
        .expect_error();
    assert!(message.contains("open"), "{message}");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        hung,
        "no call reached the API once open"
    );
}

/// The `state` of the circuit's item, `none` without one.
async fn circuit_state(dynalite: &Dynalite) -> String {
    let item = dynalite
        .client()
        .get_item()
        .table_name("circuit-breakers")
        .key(
            "id",
            aws_sdk_dynamodb::types::AttributeValue::S("inventory-api".into()),
        )
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item;
    match item.as_ref().and_then(|item| item.get("state")) {
        Some(aws_sdk_dynamodb::types::AttributeValue::S(state)) => state.clone(),
        _ => "none".into(),
    }
}
