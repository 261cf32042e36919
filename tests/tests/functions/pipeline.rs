//! The overflow pipeline's guarantees, end to end on the real binaries: no order lost to a
//! long outage, none charged twice whatever is duplicated, poison and refusals settled, and
//! the input limits and the configuration policy. The stub payment API does not deduplicate:
//! it counts every charge per order id.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use devstack::harness::event_source::ReplayPass;
use devstack::harness::function_process::{FunctionProcess, LogEcho};
use devstack::harness::runtime_api::EXIT_ERROR;
use devstack::harness::sample_stack::{QueueSettings, SampleStack};
use serde_json::{Value, json};

use crate::support::{dead_letters, drain, overflow_depth, replay_fails_no_item};

fn order(prefix: &str, n: usize) -> Value {
    json!({"order_id": format!("{prefix}-{n:03}"), "amount": 10 + n, "currency": "EUR"})
}

fn ids(prefix: &str, count: usize) -> BTreeSet<String> {
    (0..count).map(|n| format!("{prefix}-{n:03}")).collect()
}

/// Sends one message with `body` to the overflow queue, as `charge` would.
async fn send(stack: &SampleStack, body: &Value) {
    stack
        .moto
        .sqs()
        .send_message()
        .queue_url(&stack.queues.queue_url)
        .message_body(body.to_string())
        .send()
        .await
        .unwrap();
}

/// Waits until the background pollers emptied the overflow queue, delayed messages included.
async fn until_empty(stack: &SampleStack, within: Duration) {
    let until = Instant::now() + within;
    while overflow_depth(stack).await > 0 {
        assert!(
            Instant::now() < until,
            "the overflow queue did not drain within {within:?}: {} left",
            overflow_depth(stack).await
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// A stack whose overflow queue gives a record 2 receives, 1 s apart, before the DLQ.
async fn short_receive_budget() -> SampleStack {
    SampleStack::start_with(QueueSettings {
        max_receive_count: 2,
        visibility_timeout: Duration::from_secs(1),
    })
    .await
    .unwrap()
}

/// An SQS event of records with these bodies (the shape of `events/overflow-replay.json`).
fn batch(bodies: &[Value]) -> Value {
    let records: Vec<Value> = bodies
        .iter()
        .enumerate()
        .map(|(i, body)| json!({"messageId": format!("m-{i}"), "body": body.to_string(), "attributes": {}, "messageAttributes": {}}))
        .collect();
    json!({ "Records": records })
}

/// Invokes `replay` with `event` (one order) against a slow payment API and kills the
/// process once the request reached the API: the charge went through, its answer never
/// comes back. Returns the invocation's error type and the order's ledger status then.
async fn crash_mid_charge(
    stack: &SampleStack,
    replay: &Arc<FunctionProcess>,
    event: &Value,
) -> (String, Option<String>) {
    let order_id = serde_json::from_str::<Value>(event["Records"][0]["body"].as_str().unwrap())
        .unwrap()["order_id"]
        .as_str()
        .unwrap()
        .to_owned();
    stack.payments.set_latency(Duration::from_secs(5));
    let requests = stack.payments.requests();
    let invocation = {
        let replay = Arc::clone(replay);
        let event = event.clone();
        tokio::spawn(async move { replay.invoke(event).await })
    };
    let until = Instant::now() + Duration::from_secs(20);
    while stack.payments.requests() == requests {
        assert!(Instant::now() < until, "the charge never reached the API");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    replay.crash().unwrap();
    let (error_type, _) = invocation.await.unwrap().unwrap().expect_error();
    stack.payments.set_latency(Duration::ZERO);
    (error_type, stack.ledger_status(&order_id).await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_longer_than_the_receive_budget_charges_every_order_exactly_once() {
    // 3 receives × 2 s of visibility: without deferral, an order buffered at the start of a
    // 20 s outage would be in the DLQ after about 6 s.
    let settings = QueueSettings {
        max_receive_count: 3,
        visibility_timeout: Duration::from_secs(2),
    };
    const ORDERS: usize = 200;
    const OUTAGE: Duration = Duration::from_secs(20);
    assert!(OUTAGE > settings.visibility_timeout * settings.max_receive_count);
    let stack = SampleStack::start_with(settings).await.unwrap();
    let tunables = [
        ("CIRCUIT_FAILURE_THRESHOLD", "3".to_owned()),
        ("CIRCUIT_RECOVERY_TIMEOUT_SECS", "2".to_owned()),
        ("CIRCUIT_RECOVERY_JITTER_SECS", "1".to_owned()),
    ];
    let charge = stack
        .start_function("charge", LogEcho::Quiet, &tunables)
        .await
        .unwrap();
    // MaximumConcurrency 2: two environments, each with its own poller.
    let mut pollers = Vec::new();
    let mut replays = Vec::new();
    for _ in 0..2 {
        let replay = Arc::new(
            stack
                .start_function("overflow-replay", LogEcho::Quiet, &tunables)
                .await
                .unwrap(),
        );
        replay.set_timeout(Duration::from_secs(10));
        pollers.push(stack.poll(Arc::clone(&replay)));
        replays.push(replay);
    }

    let outage_started = Instant::now();
    stack.payments.set_down(true);
    for n in 0..ORDERS {
        let response = charge
            .invoke(order("outage", n))
            .await
            .unwrap()
            .expect_response();
        assert_eq!(response["statusCode"], 202, "{response}");
    }
    tokio::time::sleep(OUTAGE.saturating_sub(outage_started.elapsed())).await;
    // Nothing was charged, nothing reached the DLQ, though every order outlived its budget.
    assert_eq!(stack.payments.charged(), BTreeSet::new());
    assert_eq!(dead_letters(&stack).await, 0);
    stack.payments.set_down(false);

    until_empty(&stack, Duration::from_secs(90)).await;
    let mut total = ReplayPass::default();
    for poller in pollers {
        total += poller.stop().await.unwrap();
    }
    assert_eq!(stack.payments.charged(), ids("outage", ORDERS));
    assert_eq!(stack.payments.charged_twice(), BTreeSet::new());
    assert_eq!(dead_letters(&stack).await, 0);
    // The orders waited by deferral: far more records were received than orders.
    assert!(total.received > ORDERS, "{total:?}");
    assert_eq!(total.invocation_errors, 0, "{total:?}");
    assert_eq!(
        stack.ledger_status("outage-000").await.unwrap().as_deref(),
        Some("charged")
    );
    let deferring_batches = replays
        .iter()
        .flat_map(|r| r.logs())
        .filter(|l| l.contains("batch replayed") && !l.contains(r#""deferred":0"#))
        .count();
    assert!(deferring_batches > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicates_from_sqs_sdk_retries_lambda_retries_and_redelivered_batches_charge_once() {
    let stack = SampleStack::start().await.unwrap();
    let charge = stack
        .start_function("charge", LogEcho::Stderr, &[])
        .await
        .unwrap();
    let replay = Arc::new(
        stack
            .start_function("overflow-replay", LogEcho::Stderr, &[])
            .await
            .unwrap(),
    );

    // The same message delivered twice, and a SendMessage retried: two copies in the queue.
    send(&stack, &order("dup", 0)).await;
    send(&stack, &order("dup", 0)).await;
    send(&stack, &order("dup", 1)).await;
    // A send that succeeded but reported an error: Lambda retries `charge`, which charges
    // directly, while the buffered copy is replayed later.
    send(&stack, &order("dup", 2)).await;
    let response = charge
        .invoke(order("dup", 2))
        .await
        .unwrap()
        .expect_response();
    assert_eq!(response["charged"], true, "{response}");
    // Lambda retries an invocation that did succeed: charged once, answered as a duplicate.
    let again = charge
        .invoke(order("dup", 2))
        .await
        .unwrap()
        .expect_response();
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(drain(&stack, &replay, Duration::from_secs(30)).await, 0);

    // A replay batch redelivered whole (the first invocation's answer was lost).
    let redelivered = batch(&[order("dup", 3), order("dup", 4), order("dup", 3)]);
    for _ in 0..2 {
        replay_fails_no_item(&replay, redelivered.clone()).await;
    }

    // An environment that dies mid-charge: the batch comes back whole, within the claim's
    // lease, and is deferred, not charged again.
    let slow = batch(&[order("dup", 5)]);
    let (error_type, in_progress) = crash_mid_charge(&stack, &replay, &slow).await;
    assert_eq!(error_type, EXIT_ERROR);
    assert_eq!(in_progress.as_deref(), Some("in_progress"));
    replay_fails_no_item(&replay, slow.clone()).await;
    assert_eq!(
        stack.ledger_status("dup-005").await.unwrap().as_deref(),
        Some("in_progress")
    );
    assert_eq!(overflow_depth(&stack).await, 1);

    assert_eq!(stack.payments.charged(), ids("dup", 6));
    assert_eq!(stack.payments.charged_twice(), BTreeSet::new());
    for n in 0..5 {
        assert_eq!(
            stack
                .ledger_status(&format!("dup-{n:03}"))
                .await
                .unwrap()
                .as_deref(),
            Some("charged")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_killed_mid_call_is_parked_as_unknown_with_an_alarm_never_charged_again() {
    let stack = SampleStack::start().await.unwrap();
    // A lease of 3 s that still outlasts an attempt: a 0.9 s charge between a put and a
    // settle of up to 1 s each.
    let short_lease = [
        ("LEDGER_LEASE_SECS", "3".to_owned()),
        ("LEDGER_OPERATION_TIMEOUT_MS", "1000".to_owned()),
        ("PAYMENT_TIMEOUT_MS", "900".to_owned()),
    ];
    let replay = Arc::new(
        stack
            .start_function("overflow-replay", LogEcho::Stderr, &short_lease)
            .await
            .unwrap(),
    );
    let event = batch(&[order("killed", 0)]);
    let (error_type, status) = crash_mid_charge(&stack, &replay, &event).await;
    assert_eq!(error_type, EXIT_ERROR);
    assert_eq!(status.as_deref(), Some("in_progress"));
    tokio::time::sleep(Duration::from_millis(3500)).await;

    // The lease ran out: the outcome is unknown. Parked and alarmed, the record deleted.
    replay_fails_no_item(&replay, event.clone()).await;
    assert_eq!(
        stack.ledger_status("killed-000").await.unwrap().as_deref(),
        Some("unknown")
    );
    let alarms: Vec<String> = replay
        .logs()
        .into_iter()
        .filter(|l| l.contains(r#""PaymentOutcomeUnknown":1"#))
        .collect();
    assert_eq!(alarms.len(), 1, "{alarms:#?}");
    assert!(alarms[0].contains(r#""level":"ERROR""#), "{}", alarms[0]);
    // Every later copy leaves it alone: one charge, the one that may have gone through.
    replay.invoke(event).await.unwrap().expect_response();
    assert_eq!(stack.payments.charges().get("killed-000").copied(), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_record_reaches_the_dlq_a_refusal_is_declined_and_deleted() {
    let stack = short_receive_budget().await;
    let replay = stack
        .start_function("overflow-replay", LogEcho::Stderr, &[])
        .await
        .unwrap();
    stack.payments.decline("refused-000");
    send(&stack, &json!("not an order")).await;
    // A record of charge's on-failure destination, moved here as is: the order inside.
    let parked = json!({
        "version": "1.0",
        "timestamp": "2026-12-01T00:00:00.000Z",
        "requestContext": {"requestId": "r-1", "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:charge", "condition": "RetriesExhausted", "approximateInvokeCount": 3},
        "requestPayload": order("parked", 0),
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "responsePayload": {"errorType": "BufferFailed", "errorMessage": "overflow queue: could not send order parked-000"},
    });
    send(&stack, &parked).await;
    send(&stack, &order("refused", 0)).await;
    send(&stack, &order("fine", 0)).await;

    let failed = drain(&stack, &replay, Duration::from_secs(30)).await;
    // The poison record failed on each of its 2 receives, then moved to the DLQ.
    assert_eq!(failed, 2);
    assert_eq!(dead_letters(&stack).await, 1);
    // The refusal was final: one request, declined in the ledger, deleted from the queue.
    let refused_requests = stack
        .payments
        .bodies()
        .iter()
        .filter(|b| b["order_id"] == "refused-000")
        .count();
    assert_eq!(refused_requests, 1);
    assert_eq!(
        stack.ledger_status("refused-000").await.unwrap().as_deref(),
        Some("declined")
    );
    let mut expected = ids("fine", 1);
    expected.extend(ids("parked", 1));
    assert_eq!(stack.payments.charged(), expected);
    // The 10 kB refusal body is quoted cut, in the logs as in the ledger.
    let longest = replay.logs().iter().map(String::len).max().unwrap_or(0);
    assert!(longest < 2_000, "a log line of {longest} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn intermittent_5xx_below_the_threshold_lose_no_order() {
    let stack = SampleStack::start().await.unwrap();
    let tunables = [
        ("CIRCUIT_FAILURE_THRESHOLD", "5".to_owned()),
        ("CIRCUIT_RECOVERY_TIMEOUT_SECS", "2".to_owned()),
    ];
    let charge = stack
        .start_function("charge", LogEcho::Quiet, &tunables)
        .await
        .unwrap();
    let replay = stack
        .start_function("overflow-replay", LogEcho::Stderr, &tunables)
        .await
        .unwrap();
    const ORDERS: usize = 40;
    stack.payments.fail_every(4);
    let (mut charged, mut buffered) = (0, 0);
    for n in 0..ORDERS {
        let response = charge
            .invoke(order("flaky", n))
            .await
            .unwrap()
            .expect_response();
        match response["statusCode"].as_u64() {
            Some(201) => charged += 1,
            Some(202) => {
                assert_eq!(response["reason"], "payment_unavailable", "{response}");
                buffered += 1;
            }
            _ => panic!("neither charged nor buffered: {response}"),
        }
    }
    assert_eq!(charged + buffered, ORDERS);
    assert!(buffered >= ORDERS / 4 - 1, "{buffered}");
    assert_eq!(
        stack.circuit_state("payment-backend").await.unwrap(),
        "CLOSED"
    );

    assert_eq!(drain(&stack, &replay, Duration::from_secs(60)).await, 0);
    assert_eq!(stack.payments.charged(), ids("flaky", ORDERS));
    assert_eq!(stack.payments.charged_twice(), BTreeSet::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_api_makes_replay_stop_starting_records_before_its_deadline() {
    let stack = SampleStack::start().await.unwrap();
    let replay = stack
        .start_function("overflow-replay", LogEcho::Stderr, &[])
        .await
        .unwrap();
    // Budget per record: store 2 × 1 s + ledger 6 × 1.5 s + payment 2 s + SQS 1.5 s =
    // 14.5 s. With 9 s and a 1 s API, the first record starts (its payment call fits); the
    // others are deferred, none fails.
    replay.set_timeout(Duration::from_secs(9));
    stack.payments.set_latency(Duration::from_secs(1));
    let orders: Vec<Value> = (0..10).map(|n| order("slow", n)).collect();
    replay_fails_no_item(&replay, batch(&orders)).await;
    let charged_first = stack.payments.charged().len();
    assert!((1..10).contains(&charged_first), "{charged_first} charged");
    assert_eq!(overflow_depth(&stack).await, 10 - charged_first);
    assert_eq!(replay.restarts(), 0);

    stack.payments.set_latency(Duration::ZERO);
    replay.set_timeout(Duration::from_secs(60));
    assert_eq!(drain(&stack, &replay, Duration::from_secs(30)).await, 0);
    assert_eq!(stack.payments.charged(), ids("slow", 10));
    assert_eq!(stack.payments.charged_twice(), BTreeSet::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_validated_fields_are_forwarded_and_refusals_are_quoted_cut() {
    let stack = SampleStack::start().await.unwrap();
    let charge = stack
        .start_function("charge", LogEcho::Stderr, &[])
        .await
        .unwrap();
    let event = json!({"order_id": "extra-000", "amount": 12.5, "currency": "EUR", "customer": "c-1", "card_number": "4111111111111111", "debug": {"x": 1}});
    let response = charge.invoke(event).await.unwrap().expect_response();
    assert_eq!(response["charged"], true, "{response}");
    assert_eq!(
        stack.payments.bodies(),
        vec![
            json!({"order_id": "extra-000", "amount": 12.5, "currency": "EUR", "customer": "c-1"})
        ]
    );

    stack.payments.decline("declined-000");
    let response = charge
        .invoke(json!({"order_id": "declined-000", "amount": 1, "currency": "EUR"}))
        .await
        .unwrap()
        .expect_response();
    assert_eq!(response["statusCode"], 402, "{response}");
    assert_eq!(response["declined"], true);
    let error = response["error"].as_str().unwrap();
    assert!(error.len() < 400, "{} bytes quoted", error.len());
    assert!(error.contains("card declined"), "{error}");
    // Final: a retry is answered from the ledger, the API is not asked again.
    let requests = stack.payments.requests();
    let again = charge
        .invoke(json!({"order_id": "declined-000", "amount": 1, "currency": "EUR"}))
        .await
        .unwrap()
        .expect_response();
    assert_eq!(again["statusCode"], 409, "{again}");
    assert_eq!(stack.payments.requests(), requests);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_setting_stops_each_function_at_start_naming_it() {
    let stack = SampleStack::start().await.unwrap();
    for (function, variable, value) in [
        ("charge", "PAYMENT_TIMEOUT_MS", "0"),
        ("charge", "SQS_OPERATION_TIMEOUT_MS", "soon"),
        (
            "charge",
            "PAYMENT_API_URL",
            "http://pay.example.com/charges",
        ),
        ("overflow-replay", "REPLAY_MAX_ORDER_AGE_SECS", "1300000"),
        ("overflow-replay", "CIRCUIT_FAILURE_THRESHOLD", "five"),
        ("overflow-replay", "REPLAY_MAX_FAILURES", "0"),
        ("cost-report", "CE_MAX_ATTEMPTS", "0"),
        ("cost-report", "PRIME_ON_INIT", "maybe"),
    ] {
        let process = stack
            .start_function(function, LogEcho::Stderr, &[(variable, value.to_owned())])
            .await
            .unwrap();
        let status = process.wait_exit(Duration::from_secs(20)).await;
        assert!(
            status.is_some_and(|s| !s.success()),
            "{function} with {variable}={value} did not stop: {status:?}"
        );
        let needle = format!("{variable}={value}");
        assert!(
            process.logs().iter().any(|l| l.contains(&needle)),
            "{function}: no line names {needle}: {:#?}",
            process.logs()
        );
        assert!(
            process.init_duration().is_none(),
            "{function} polled for work"
        );
    }
    assert_eq!(stack.payments.requests(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_charge_that_times_out_is_parked_as_unknown_not_charged_again() {
    let stack = SampleStack::start().await.unwrap();
    let charge = stack
        .start_function(
            "charge",
            LogEcho::Stderr,
            &[("PAYMENT_TIMEOUT_MS", "300".to_owned())],
        )
        .await
        .unwrap();
    // The API charges on arrival and answers after the client gave up.
    stack.payments.set_latency(Duration::from_secs(1));
    let event = order("late", 0);
    let response = charge
        .invoke(event.clone())
        .await
        .unwrap()
        .expect_response();
    assert_eq!(response["statusCode"], 502, "{response}");
    assert_eq!(response["outcome"], "unknown");
    assert_eq!(
        stack.ledger_status("late-000").await.unwrap().as_deref(),
        Some("unknown")
    );
    assert!(
        charge
            .logs()
            .iter()
            .any(|l| l.contains(r#""PaymentOutcomeUnknown":1"#)),
        "no PaymentOutcomeUnknown metric"
    );
    // Lambda's retry, or a caller's: answered from the ledger, the API left alone.
    stack.payments.set_latency(Duration::ZERO);
    let requests = stack.payments.requests();
    let again = charge.invoke(event).await.unwrap().expect_response();
    assert_eq!(again["statusCode"], 502, "{again}");
    assert_eq!(stack.payments.requests(), requests);
    assert_eq!(stack.payments.charges().get("late-000").copied(), Some(1));
    // Nothing was buffered for it either.
    assert_eq!(overflow_depth(&stack).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_the_api_always_fails_reaches_the_dlq_while_the_circuit_stays_closed() {
    let stack = short_receive_budget().await;
    let replay = stack
        .start_function(
            "overflow-replay",
            LogEcho::Stderr,
            &[
                ("REPLAY_MAX_FAILURES", "2".to_owned()),
                ("CIRCUIT_RECOVERY_TIMEOUT_SECS", "1".to_owned()),
                ("CIRCUIT_FAILURE_THRESHOLD", "20".to_owned()),
            ],
        )
        .await
        .unwrap();
    stack.payments.fail_order("choke-000");
    send(&stack, &order("choke", 0)).await;
    for n in 0..3 {
        send(&stack, &order("good", n)).await;
    }
    let failed = drain(&stack, &replay, Duration::from_secs(40)).await;
    // Deferred once (1 failure), then reported failed on each of its 2 receives.
    assert_eq!(failed, 2);
    assert_eq!(dead_letters(&stack).await, 1);
    let dlq = stack
        .moto
        .sqs()
        .receive_message()
        .queue_url(&stack.queues.dlq_url)
        .message_attribute_names("All")
        .send()
        .await
        .unwrap();
    let message = &dlq.messages()[0];
    assert!(message.body().unwrap().contains("choke-000"));
    let attributes = message.message_attributes().unwrap();
    assert_eq!(attributes["failures"].string_value(), Some("1"));
    assert_eq!(stack.payments.charged(), ids("good", 3));
    assert_eq!(
        stack.circuit_state("payment-backend").await.unwrap(),
        "CLOSED"
    );
    // Never charged, so never parked: the ledger holds no claim on it.
    assert_eq!(stack.ledger_status("choke-000").await.unwrap(), None);
}
