//! A user's function written as the README's quickstart shows (`quickstart-function`: the
//! attribute with `failure_threshold = 3`, the default store, `breaker_runtime::lambda::run`),
//! as a fresh process under the Runtime API's deadlines, against an inventory API that
//! accepts connections and never answers: each invocation answers before its deadline with
//! the hang counted, and the third opens the circuit for the fleet. The same with an
//! `on_circuit_open` callback (`quickstart-callback`): the hang protection holds, and the
//! callback answers once the circuit is open.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

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

/// `binary`, a function written as the quickstart, started against dynalite with its
/// table and an inventory API that hangs: the stack (kept alive by the caller), the
/// function, and how many connections the API accepted.
async fn against_a_hung_api(binary: &str) -> (Dynalite, FunctionProcess, Arc<AtomicUsize>) {
    let dynalite = Dynalite::start().await.unwrap();
    dynalite
        .create_circuit_table("circuit-breakers")
        .await
        .unwrap();
    let (inventory, calls) = hung_api().await;
    let mut env = dynalite.env();
    env.push(("INVENTORY_URL", inventory));
    let function = FunctionProcess::start(binary, &env, LogEcho::Stderr)
        .await
        .unwrap();
    function.set_timeout(FUNCTION_TIMEOUT);
    (dynalite, function, calls)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quickstart_function_whose_api_hangs_opens_its_circuit_within_three_invocations() {
    let (dynalite, function, calls) = against_a_hung_api("quickstart-function").await;

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

/// Invocations of the callback's function: the hung ones and the ones the callback answers.
const CALLBACK_INVOCATIONS: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quickstart_function_with_a_callback_keeps_its_hang_protection() {
    let (dynalite, function, calls) = against_a_hung_api("quickstart-callback").await;

    let mut outcomes = Vec::new();
    for n in 1..=CALLBACK_INVOCATIONS {
        let started = Instant::now();
        let outcome = function
            .invoke(json!({ "sku": format!("sku-{n}") }))
            .await
            .unwrap();
        outcomes.push((outcome, started.elapsed()));
    }
    let state = circuit_state(&dynalite).await;
    let hung = calls.load(Ordering::SeqCst);
    eprintln!("{CALLBACK_INVOCATIONS} invocations: {outcomes:?}; the hung API saw {hung} calls");
    for (n, (outcome, took)) in outcomes.iter().enumerate() {
        assert!(
            !matches!(outcome, Invocation::Error { error_type, .. } if error_type == TIMED_OUT),
            "invocation {n} timed out"
        );
        assert!(
            *took < FUNCTION_TIMEOUT,
            "invocation {n} answered after {took:?}"
        );
    }
    // The hung calls are abandoned (with their error, not the callback's answer: they may
    // have reached the API); once open, the callback holds every reservation.
    let abandoned = outcomes
        .iter()
        .take_while(|(outcome, _)| matches!(outcome, Invocation::Error { .. }))
        .count();
    assert!(
        (1..=FAILURE_THRESHOLD).contains(&abandoned),
        "{abandoned} abandoned before the circuit opened"
    );
    for (outcome, _) in &outcomes[..abandoned] {
        let Invocation::Error { error_message, .. } = outcome else {
            unreachable!("counted above")
        };
        assert!(error_message.contains("abandoned"), "{error_message}");
    }
    for (outcome, _) in &outcomes[abandoned..] {
        let Invocation::Response(response) = outcome else {
            panic!("answered by the callback once open: {outcome:?}")
        };
        assert_eq!(response["held"], true, "{response}");
        assert_eq!(response["reason"], "Some(Open)", "{response}");
    }
    assert!(hung <= FAILURE_THRESHOLD, "{hung} calls reached the API");
    assert_eq!(state, "OPEN", "the hung calls opened the circuit");
    assert_eq!(
        function.restarts(),
        0,
        "no invocation ran into its deadline"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quickstart_function_without_its_table_fails_its_init_naming_the_table() {
    let dynalite = Dynalite::start().await.unwrap();
    let (inventory, _) = hung_api().await;
    let mut env = dynalite.env();
    env.push(("INVENTORY_URL", inventory));
    let function = FunctionProcess::start("quickstart-function", &env, LogEcho::Stderr)
        .await
        .unwrap();
    let logs = crate::support::stopped_at_init(&function).await;
    assert!(
        logs.contains("table 'circuit-breakers'") && logs.contains("ResourceNotFoundException"),
        "the init error names the table: {logs}"
    );
    assert_eq!(function.init_duration(), None, "it never polled for work");
}

/// The quickstart's warm-up timeout: the default `store_timeout`.
const WARM_UP_TIMEOUT: Duration = Duration::from_secs(1);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quickstart_function_whose_store_is_unreachable_starts_within_its_warm_up_timeout() {
    // DynamoDB's endpoint accepts connections and never answers: an outage, not a
    // misconfiguration.
    let (blackhole, _) = hung_api().await;
    let inventory = answering_api().await;
    let dynalite = Dynalite::start().await.unwrap();
    let mut env: Vec<(&str, String)> = dynalite
        .env()
        .into_iter()
        .filter(|(name, _)| *name != "AWS_ENDPOINT_URL_DYNAMODB")
        .collect();
    env.push(("AWS_ENDPOINT_URL_DYNAMODB", format!("http://{blackhole}")));
    env.push(("INVENTORY_URL", inventory));
    let function = FunctionProcess::start("quickstart-function", &env, LogEcho::Stderr)
        .await
        .unwrap();
    function.set_timeout(FUNCTION_TIMEOUT);
    let init = function
        .wait_for_init(Duration::from_secs(10))
        .await
        .unwrap();
    eprintln!("init with the store unreachable: {init:?}");
    assert!(
        init <= WARM_UP_TIMEOUT + Duration::from_millis(500),
        "init took {init:?}"
    );

    for n in 1..=2 {
        let answer = function
            .invoke(json!({ "sku": format!("sku-{n}") }))
            .await
            .unwrap();
        match answer {
            Invocation::Response(body) => assert_eq!(body["reserved"], true, "{body}"),
            other => panic!("invocation {n}: the call fails open and runs: {other:?}"),
        }
    }
}

/// An inventory API that answers every request `200 OK`.
async fn answering_api() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut request = [0u8; 1024];
                let _ = stream.read(&mut request).await;
                let _ = stream
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    .await;
            });
        }
    });
    address
}
