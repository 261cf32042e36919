//! Lambda Managed Instances: one execution environment serves many invocations at once
//! (`AWS_LAMBDA_MAX_CONCURRENCY`). `charge`, whose `breaker_runtime::lambda::run_concurrent`
//! then polls the Runtime API from that many workers, runs eight orders at once against the
//! local stack: the one whose payment call hangs is abandoned at its own deadline and
//! counted while the seven others are charged and answered, and a payment outage opens the
//! circuit with at most the failure threshold plus one call per worker reaching the payment
//! API. An invocation that runs past its deadline is timed out alone, the environment
//! running on, as Managed Instances do. And the loopback Runtime API itself, driven by hand:
//! polls at once, each invocation ended by its own request id or its own deadline.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;
use devstack::fixtures::fault_proxy::{Fault, Service};
use devstack::fixtures::http1::{self, Head, Unframed};
use devstack::harness::function_process::{FunctionProcess, LogEcho};
use devstack::harness::runtime_api::{Invocation, RuntimeApi, TIMED_OUT};
use devstack::harness::sample_stack::{CIRCUIT_TABLE, SampleStack};
use serde_json::{Value, json};
use tokio::io::BufReader;
use tokio::net::TcpStream;
use tokio::task::JoinSet;

/// `AWS_LAMBDA_MAX_CONCURRENCY`: the environment's workers.
const WORKERS: usize = 8;
/// The function timeout: each invocation's deadline, from when a worker takes it. Long
/// enough for seven charges at once on a loaded machine to end well before the hung one's.
const FUNCTION_TIMEOUT: Duration = Duration::from_secs(10);
/// Failures that open the circuit.
const FAILURE_THRESHOLD: usize = 3;
/// Orders sent at once during the outage: four per worker.
const OUTAGE_ORDERS: usize = 4 * WORKERS;
/// The circuit of `charge`.
const CIRCUIT: &str = "payment-backend";

fn order(id: &str, n: usize) -> Value {
    json!({"order_id": id, "amount": 10 + n, "currency": "EUR"})
}

/// Waits until `done` holds, polling; fails the test after `within`, saying `what`.
async fn wait_until(within: Duration, what: &str, mut done: impl AsyncFnMut() -> bool) {
    let until = Instant::now() + within;
    while !done().await {
        assert!(Instant::now() < until, "{what} within {within:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The failures the fleet's counters of `circuit` hold, summed over every window.
async fn fleet_failures(stack: &SampleStack, circuit: &str) -> u64 {
    let prefix = format!("{circuit}#fleet@");
    let items = stack
        .dynalite
        .client()
        .scan()
        .table_name(CIRCUIT_TABLE)
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .items
        .unwrap_or_default();
    items
        .iter()
        .filter(
            |item| matches!(item.get("id"), Some(AttributeValue::S(id)) if id.starts_with(&prefix)),
        )
        .filter_map(|item| match item.get("fleet_failures") {
            Some(AttributeValue::N(n)) => n.parse::<u64>().ok(),
            _ => None,
        })
        .sum()
}

/// Invokes `function` with `event` on a task of its own: one invocation among others.
fn spawn_invoke(
    running: &mut JoinSet<(String, Invocation)>,
    function: &Arc<FunctionProcess>,
    id: String,
    event: Value,
) {
    let function = Arc::clone(function);
    running.spawn(async move { (id, function.invoke(event).await.unwrap()) });
}

/// Every invocation of `running`, as each ends.
async fn answers(mut running: JoinSet<(String, Invocation)>) -> BTreeMap<String, Invocation> {
    let mut answers = BTreeMap::new();
    while let Some(answer) = running.join_next().await {
        let (id, invocation) = answer.unwrap();
        answers.insert(id, invocation);
    }
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_invocations_at_once_abandon_only_the_hung_one_and_an_outage_trips_within_a_call_per_worker()
 {
    let stack = SampleStack::start().await.unwrap();
    let settings = [
        ("AWS_LAMBDA_MAX_CONCURRENCY", WORKERS.to_string()),
        ("CIRCUIT_FAILURE_THRESHOLD", FAILURE_THRESHOLD.to_string()),
        // No probe while the test runs.
        ("CIRCUIT_RECOVERY_TIMEOUT_SECS", "300".to_owned()),
        // The client's own timeout is longer than the deadline, so only the invocation's
        // deadline can end the hung charge.
        ("PAYMENT_TIMEOUT_MS", "60000".to_owned()),
        // The claim's lease outlasts the longest attempt, here the function timeout.
        ("LEDGER_LEASE_SECS", "30".to_owned()),
    ];
    let charge = stack
        .start_function("charge", LogEcho::Stderr, &settings)
        .await
        .unwrap();
    charge.set_timeout(FUNCTION_TIMEOUT);
    assert_eq!(charge.max_concurrency(), WORKERS as u32);
    let charge = Arc::new(charge);

    // The order whose payment call hangs goes first: a worker takes it and holds it.
    let hung_id = "managed-hung";
    stack.payments.hang_order(hung_id);
    let started = Instant::now();
    let hung = {
        let charge = Arc::clone(&charge);
        tokio::spawn(async move { charge.invoke(order(hung_id, 0)).await.unwrap() })
    };
    wait_until(
        Duration::from_secs(60),
        "the hung order taken",
        async || charge.in_flight().0 == 1,
    )
    .await;
    let mut running = JoinSet::new();
    for n in 1..WORKERS {
        let id = format!("managed-{n:02}");
        spawn_invoke(&mut running, &charge, id.clone(), order(&id, n));
    }
    let others = answers(running).await;
    assert!(
        !hung.is_finished(),
        "the seven others are answered while the hung one still runs, on the other workers"
    );
    for (id, invocation) in &others {
        let response = invocation.clone().expect_response();
        assert_eq!(response["statusCode"], 201, "{id}: {response}");
        assert_eq!(response["charged"], true, "{id}: {response}");
        assert_eq!(
            stack.ledger_status(id).await.unwrap().as_deref(),
            Some("charged")
        );
    }
    assert_eq!(others.len(), WORKERS - 1);

    // The hung one: abandoned at its own deadline, before it, counted, and parked as the
    // charge may have gone through (the function's answer for a hung payment API).
    let response = hung.await.unwrap().expect_response();
    let took = started.elapsed();
    assert!(took < FUNCTION_TIMEOUT, "answered after {took:?}");
    assert_eq!(response["statusCode"], 502, "{response}");
    assert_eq!(response["outcome"], "unknown", "{response}");
    assert_eq!(
        stack.ledger_status(hung_id).await.unwrap().as_deref(),
        Some("unknown")
    );
    assert_eq!(
        charge.in_flight(),
        (0, WORKERS),
        "eight invocations ran at once, and every one ended"
    );
    assert_eq!(charge.restarts(), 0, "no invocation ran into its deadline");
    // One failure is below the threshold: the circuit's item stays closed, and the failure
    // is in the fleet's counters of the circuit, the item this environment reports to.
    assert_eq!(stack.circuit_state(CIRCUIT).await.unwrap(), "CLOSED");
    wait_until(
        Duration::from_secs(10),
        "the abandoned call reported to the fleet's counters",
        async || fleet_failures(&stack, CIRCUIT).await > 0,
    )
    .await;
    assert_eq!(
        fleet_failures(&stack, CIRCUIT).await,
        1,
        "the abandoned call is the only failure"
    );

    // An outage: four orders per worker at once. The workers' calls in flight when the
    // circuit opens still reach the API; none starts after.
    stack.payments.set_down(true);
    let before = stack.payments.requests();
    let mut running = JoinSet::new();
    for n in 0..OUTAGE_ORDERS {
        let id = format!("outage-{n:02}");
        spawn_invoke(&mut running, &charge, id.clone(), order(&id, n));
    }
    let outage = answers(running).await;
    let reached = stack.payments.requests() - before;
    let mut reasons = BTreeMap::<String, usize>::new();
    for (id, invocation) in &outage {
        let response = invocation.clone().expect_response();
        assert_eq!(response["statusCode"], 202, "{id}: {response}");
        assert_eq!(response["buffered"], true, "{id}: {response}");
        let reason = response["reason"].as_str().unwrap_or_default().to_owned();
        *reasons.entry(reason).or_default() += 1;
    }
    eprintln!("outage: {reached} calls reached the payment API; answers by reason: {reasons:?}");
    assert_eq!(stack.circuit_state(CIRCUIT).await.unwrap(), "OPEN");
    assert!(
        reached <= FAILURE_THRESHOLD + WORKERS,
        "{reached} calls reached the API: more than the threshold ({FAILURE_THRESHOLD}) and one per worker ({WORKERS})"
    );
    assert!(
        reached >= FAILURE_THRESHOLD - 1,
        "{reached} failures cannot have opened it"
    );
    assert_eq!(
        reasons.get("payment_unavailable").copied().unwrap_or(0),
        reached,
        "every call that reached the API was refused and buffered"
    );
    assert_eq!(
        reasons.get("circuit_open").copied().unwrap_or(0),
        OUTAGE_ORDERS - reached,
        "every other order was buffered by the open circuit, without a call"
    );
    assert_eq!(charge.restarts(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_managed_environment_times_out_one_invocation_and_runs_on() {
    let stack = SampleStack::start().await.unwrap();
    let settings = [
        ("AWS_LAMBDA_MAX_CONCURRENCY", "4".to_owned()),
        // Only the deadline can end a buffering whose SQS call hangs: the function's own
        // bound on it is longer.
        ("SQS_OPERATION_TIMEOUT_MS", "60000".to_owned()),
    ];
    let charge = stack
        .start_function("charge", LogEcho::Stderr, &settings)
        .await
        .unwrap();
    // Room for the three charges beside the stuck one on a loaded machine.
    charge.set_timeout(Duration::from_secs(8));
    charge.wait_for_init(Duration::from_secs(60)).await.unwrap();
    let pid = charge.pid();
    let charge = Arc::new(charge);

    // The API refuses this order (503): it is buffered to SQS, and SQS hangs. Buffering is
    // no guarded call, so nothing ends it before the invocation's deadline.
    let stuck = "managed-stuck";
    stack.payments.fail_order(stuck);
    stack
        .proxy
        .inject(Service::Sqs, Some(Fault::Latency(Duration::from_secs(300))));
    let mut running = JoinSet::new();
    spawn_invoke(&mut running, &charge, stuck.to_owned(), order(stuck, 0));
    for n in 1..4 {
        let id = format!("managed-ok-{n}");
        spawn_invoke(&mut running, &charge, id.clone(), order(&id, n));
    }
    let mut answers = answers(running).await;
    let (error_type, message) = answers.remove(stuck).unwrap().expect_error();
    assert_eq!(error_type, TIMED_OUT, "{message}");
    for (id, invocation) in answers {
        let response = invocation.expect_response();
        assert_eq!(response["statusCode"], 201, "{id}: {response}");
    }
    assert_eq!(charge.restarts(), 0, "the environment was not restarted");
    assert_eq!(charge.pid(), pid);
    assert_eq!(charge.in_flight().0, 0);

    // The same process serves the next invocations, SQS healed: a charge and a buffering.
    stack.proxy.inject(Service::Sqs, None);
    let response = charge
        .invoke(order("managed-after", 5))
        .await
        .unwrap()
        .expect_response();
    assert_eq!(response["statusCode"], 201, "{response}");
    let refused = "managed-refused";
    stack.payments.fail_order(refused);
    let response = charge
        .invoke(order(refused, 6))
        .await
        .unwrap()
        .expect_response();
    assert_eq!(response["statusCode"], 202, "{response}");
    assert_eq!(response["reason"], "payment_unavailable", "{response}");
    assert_eq!(charge.restarts(), 0);
    assert_eq!(charge.pid(), pid, "one process served every invocation");
}

/// One keep-alive connection of a hand-written runtime client.
struct Poller(BufReader<TcpStream>);

impl Poller {
    async fn connect(api: &RuntimeApi) -> Self {
        Self(BufReader::new(
            TcpStream::connect(api.address()).await.unwrap(),
        ))
    }

    async fn send(&mut self, method: &str, path: &str, body: &[u8]) -> (Head, Vec<u8>) {
        let head = Head {
            start_line: format!("{method} {path} HTTP/1.1"),
            headers: vec![("Host".into(), "runtime".into())],
        };
        http1::write_message(self.0.get_mut(), head, body)
            .await
            .unwrap();
        http1::read_message(&mut self.0, Unframed::NoBody)
            .await
            .unwrap()
            .expect("an answer")
    }

    /// `GET /next`: the invocation's request id, deadline (unix ms) and event.
    async fn next(&mut self) -> (String, u64, Value) {
        let (head, body) = self
            .send("GET", "/2018-06-01/runtime/invocation/next", b"")
            .await;
        let id = head.header("Lambda-Runtime-Aws-Request-Id").unwrap();
        let deadline = head.header("Lambda-Runtime-Deadline-Ms").unwrap();
        (
            id.to_owned(),
            deadline.parse().unwrap(),
            serde_json::from_slice(&body).unwrap(),
        )
    }

    /// Posts `response` for invocation `id`: the Runtime API's status.
    async fn respond(&mut self, id: &str, response: &Value) -> u16 {
        let path = format!("/2018-06-01/runtime/invocation/{id}/response");
        let (head, _) = self
            .send("POST", &path, response.to_string().as_bytes())
            .await;
        head.status()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtime_api_serves_polls_at_once_and_ends_each_invocation_by_its_own_id() {
    let api = Arc::new(RuntimeApi::start("by-hand").await.unwrap());
    api.set_timeout(Duration::from_secs(2));
    let invoke = |event: Value| {
        let api = Arc::clone(&api);
        tokio::spawn(async move { api.invoke(&event).await.unwrap() })
    };
    let (mut first, mut second) = (Poller::connect(&api).await, Poller::connect(&api).await);

    // Two polls at once, each given an invocation with its own deadline.
    let a = invoke(json!({"n": "a"}));
    let (a_id, a_deadline, a_event) = first.next().await;
    let b = invoke(json!({"n": "b"}));
    let (b_id, b_deadline, b_event) = second.next().await;
    assert_eq!(
        (a_event["n"].as_str(), b_event["n"].as_str()),
        (Some("a"), Some("b"))
    );
    assert_ne!(a_id, b_id);
    assert!(b_deadline >= a_deadline, "{b_deadline} < {a_deadline}");
    assert_eq!(api.in_flight(), 2);

    // Answered by request id, out of order: `b` first, on its own connection.
    assert_eq!(second.respond(&b_id, &json!({"answer": "b"})).await, 202);
    assert_eq!(
        b.await.unwrap(),
        Invocation::Response(json!({"answer": "b"}))
    );
    assert!(!a.is_finished(), "a runs on");

    // `a` runs past its deadline: it alone times out, and a late answer changes nothing.
    let (error_type, _) = a.await.unwrap().expect_error();
    assert_eq!(error_type, TIMED_OUT);
    assert_eq!(first.respond(&a_id, &json!({"answer": "late"})).await, 202);
    assert_eq!(api.in_flight(), 0);

    // The same connections poll on.
    let c = invoke(json!({"n": "c"}));
    let (c_id, _, c_event) = first.next().await;
    assert_eq!(c_event["n"], "c");
    assert_eq!(first.respond(&c_id, &json!({"answer": "c"})).await, 202);
    assert_eq!(
        c.await.unwrap(),
        Invocation::Response(json!({"answer": "c"}))
    );
    assert_eq!(api.peak_in_flight(), 2);
}
