//! `make demo`: the three sample functions, as real binaries, against local DynamoDB
//! (dynalite), SQS and Cost Explorer (moto) behind a fault-injecting proxy, and a stub
//! payment API, through one scenario: healthy → Cost Explorer throttles → circuit opens →
//! stale snapshots → payment API down → orders buffered → replay defers them while open →
//! recovery → one probe → closed → the buffer drains, each order charged once. Everything
//! it starts stops when it exits.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use aws_sdk_dynamodb::types::AttributeValue;
use devstack::fixtures::fault_proxy::{Fault, Service};
use devstack::harness::function_process::{FunctionProcess, LogEcho};
use devstack::harness::runtime_api::Invocation;
use devstack::harness::sample_stack::SampleStack;
use devstack::wall_clock::unix_secs;
use serde_json::{Value, json};

/// Orders sent during the payment outage.
const ORDERS: usize = 25;
/// The demo's recovery timeout: long enough for the outage scenes, short enough to wait.
const RECOVERY_SECS: u64 = 6;
/// The demo's recovery jitter: a fleet of three functions needs little spread.
const JITTER_SECS: u64 = 1;
/// How long after the recovery a function that did not open a circuit may probe it: its
/// cache age (5 s), a second, and its jitter.
const FALLBACK_SECS: u64 = 5 + 1 + JITTER_SECS;

/// Prints the scenario with the time since start.
struct Timeline {
    started: Instant,
}

impl Timeline {
    fn scene(&self, title: &str) {
        println!("\n\x1b[1m{title}\x1b[0m");
    }

    fn say(&self, line: impl AsRef<str>) {
        let t = self.started.elapsed().as_secs_f64();
        println!("  [{t:6.2}s] {}", line.as_ref());
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let timeline = Timeline {
        started: Instant::now(),
    };
    println!("breaker demo: three Lambda functions, one shared circuit state, no AWS account");

    timeline.scene("0. Local stack");
    let stack = SampleStack::start().await?;
    timeline.say(format!(
        "dynalite {}  moto {}  fault proxy {}  payment API {}",
        stack.dynalite.endpoint(),
        stack.moto.endpoint(),
        stack.proxy.endpoint(),
        stack.payments.url()
    ));
    timeline.say("tables circuit-breakers, cost-snapshots, orders-ledger; queues overflow, overflow-dlq (maxReceiveCount 5)");
    stack
        .moto
        .seed_cost_and_usage(cost_explorer_results())
        .await?;
    timeline.say("Cost Explorer seeded with this month's costs (two pages)");
    // Two failures open a circuit; charge buffers the orders of those failures too.
    let overrides = [
        ("CIRCUIT_FAILURE_THRESHOLD", "2".to_owned()),
        ("CIRCUIT_RECOVERY_TIMEOUT_SECS", RECOVERY_SECS.to_string()),
        ("CIRCUIT_RECOVERY_JITTER_SECS", JITTER_SECS.to_string()),
    ];
    let cost_report = stack
        .start_function("cost-report", LogEcho::Quiet, &overrides)
        .await?;
    let charge = stack
        .start_function("charge", LogEcho::Quiet, &overrides)
        .await?;
    let replay = stack
        .start_function("overflow-replay", LogEcho::Quiet, &overrides)
        .await?;
    timeline.say("cost-report, charge, overflow-replay running under a local Lambda Runtime API");
    timeline.say("circuits: open after 2 failures, probe after 6 s, close after 1 probe success");

    timeline.scene("1. Healthy");
    let live = cost_report.invoke(json!({})).await?.expect_response();
    timeline.say(format!("cost-report → {}", describe_report(&live)));
    let receipt = charge.invoke(order(0)).await?.expect_response();
    timeline.say(format!(
        "charge order-000 → HTTP {} charged={}",
        receipt["statusCode"], receipt["charged"]
    ));

    timeline.scene("2. Cost Explorer throttles (the proxy answers ThrottlingException)");
    stack
        .proxy
        .inject(Service::CostExplorer, Some(Fault::Throttle));
    for attempt in 1..=2 {
        let answer = cost_report.invoke(json!({})).await?.expect_response();
        timeline.say(format!(
            "cost-report #{attempt} → {} (throttled calls so far: {})",
            describe_report(&answer),
            stack.proxy.injected(Service::CostExplorer)
        ));
    }
    show_circuit(&timeline, &stack, "cost-explorer").await?;

    timeline.scene("3. Circuit open: the snapshot, without calling Cost Explorer");
    let before = stack.proxy.seen(Service::CostExplorer);
    let open = cost_report.invoke(json!({})).await?.expect_response();
    timeline.say(format!("cost-report → {}", describe_report(&open)));
    timeline.say(format!(
        "Cost Explorer requests during that invocation: {}",
        stack.proxy.seen(Service::CostExplorer) - before
    ));

    timeline.scene("4. Payment API down (HTTP 503)");
    stack.payments.set_down(true);
    let (mut failed, mut buffered, mut transient) = (0, 0, 0);
    for n in 1..=ORDERS {
        match invoke_with_lambda_retries(&charge, order(n)).await? {
            (Invocation::Response(r), failures) if r["statusCode"] == 202 => {
                failed += failures;
                buffered += 1;
                if r["reason"] == "payment_unavailable" {
                    transient += 1;
                }
            }
            (other, _) => bail!("order {n} was neither charged nor buffered: {other:?}"),
        }
    }
    timeline.say(format!(
        "{ORDERS} orders → {buffered} buffered with 202 ({transient} after a 503, the rest while open), {failed} invocations failed"
    ));
    show_circuit(&timeline, &stack, "payment-backend").await?;
    timeline.say(format!(
        "overflow queue: {} messages; payment API requests during the outage: {}",
        stack.moto.message_count(&stack.queues.queue_url).await?,
        stack.payments.requests() - 1
    ));
    let requests = stack.payments.requests();
    let pass = stack.replay_once(&replay).await?;
    timeline.say(format!(
        "overflow-replay while open → {} records deferred (sent again, delayed until the recovery), {} failed, payment API calls: {}",
        pass.received - pass.failed,
        pass.failed,
        stack.payments.requests() - requests
    ));

    timeline.scene("5. Recovery");
    stack.proxy.inject(Service::CostExplorer, None);
    stack.payments.set_down(false);
    timeline.say(format!("Cost Explorer and the payment API are healthy again; waiting out the {RECOVERY_SECS} s recovery timeout and the {FALLBACK_SECS} s fallback"));
    wait_for_recovery(&stack, "payment-backend").await?;
    let recovered = cost_report.invoke(json!({})).await?.expect_response();
    timeline.say(format!(
        "cost-report (one probe) → {}",
        describe_report(&recovered)
    ));
    show_circuit(&timeline, &stack, "cost-explorer").await?;
    let mut passes = 0;
    while stack.queue_depth(&stack.queues.queue_url).await? > 0 {
        passes += 1;
        if passes > 60 {
            bail!("the overflow queue did not drain");
        }
        let pass = stack.replay_once(&replay).await?;
        if pass.received > 0 {
            timeline.say(format!(
                "overflow-replay pass {passes} → {} records, {} failed",
                pass.received, pass.failed
            ));
        }
    }
    show_circuit(&timeline, &stack, "payment-backend").await?;

    timeline.scene("6. Final tallies");
    let charged = stack.payments.charged();
    let charged_twice = stack.payments.charged_twice();
    timeline.say(format!(
        "orders charged: {} of {} (the ledger lets one copy of each through; the stub API does not deduplicate)",
        charged.len(),
        ORDERS + 1
    ));
    timeline.say(format!("orders charged twice = {}", charged_twice.len()));
    timeline.say(format!(
        "overflow queue: {}  DLQ: {}",
        stack.moto.message_count(&stack.queues.queue_url).await?,
        stack.moto.message_count(&stack.queues.dlq_url).await?
    ));
    timeline.say(format!(
        "Cost Explorer requests: {} ({} throttled)",
        stack.proxy.seen(Service::CostExplorer),
        stack.proxy.injected(Service::CostExplorer)
    ));
    for function in [&cost_report, &charge, &replay] {
        timeline.say(format!(
            "{:<16} init {:>4} ms, EMF transition records: {}",
            function.name(),
            function.init_duration().map_or(0, |d| d.as_millis()),
            emf_summary(function)
        ));
    }
    if !charged_twice.is_empty() {
        bail!("orders charged twice: {charged_twice:?}");
    }
    if charged.len() != ORDERS + 1 {
        bail!(
            "expected {} charged orders, got {}",
            ORDERS + 1,
            charged.len()
        );
    }
    println!("\ndemo finished: every local process stops now");
    Ok(())
}

fn order(n: usize) -> Value {
    json!({"order_id": format!("order-{n:03}"), "amount": 10 + n, "currency": "EUR"})
}

fn cost_explorer_results() -> Vec<Value> {
    let group = |service: &str, amount: &str| json!({"Keys": [service], "Metrics": {"UnblendedCost": {"Amount": amount, "Unit": "USD"}}});
    vec![
        json!({"ResultsByTime": [{"TimePeriod": {"Start": "2026-11-01", "End": "2026-11-02"}, "Total": {},
            "Groups": [group("Amazon EC2", "10.0"), group("AWS Lambda", "0.5")], "Estimated": false}],
            "NextPageToken": "page-2"}),
        json!({"ResultsByTime": [{"TimePeriod": {"Start": "2026-11-02", "End": "2026-11-03"}, "Total": {},
            "Groups": [group("Amazon EC2", "2.0"), group("Amazon S3", "1.25")], "Estimated": false}]}),
    ]
}

/// Lambda's asynchronous invocation: a failed invocation is retried up to twice.
async fn invoke_with_lambda_retries(
    function: &FunctionProcess,
    event: Value,
) -> anyhow::Result<(Invocation, usize)> {
    let mut failures = 0;
    loop {
        let outcome = function.invoke(event.clone()).await?;
        if matches!(outcome, Invocation::Response(_)) || failures == 2 {
            return Ok((outcome, failures));
        }
        failures += 1;
    }
}

fn describe_report(report: &Value) -> String {
    let services: Vec<String> = report["by_service"]
        .as_array()
        .map(|s| {
            s.iter()
                .map(|s| format!("{} {}", s["service"].as_str().unwrap_or("?"), s["amount"]))
                .collect()
        })
        .unwrap_or_default();
    format!(
        "total {} {} [{}] stale={} breaker={}",
        report["total"]["amount"],
        report["total"]["unit"].as_str().unwrap_or("?"),
        services.join(", "),
        report["stale"],
        report["breaker"].as_str().unwrap_or("?")
    )
}

async fn show_circuit(
    timeline: &Timeline,
    stack: &SampleStack,
    circuit: &str,
) -> anyhow::Result<()> {
    let item = stack.circuit_item(circuit).await?;
    timeline.say(format!(
        "circuit {circuit}: DynamoDB item {}",
        item.as_ref()
            .map_or_else(|| "(none: closed)".to_owned(), format_item)
    ));
    Ok(())
}

fn format_item(item: &HashMap<String, AttributeValue>) -> String {
    let order = [
        "id",
        "state",
        "failure_count",
        "opened_at",
        "half_open_owner",
        "probe_lease_expiry",
        "expiration",
    ];
    let mut fields: Vec<String> = Vec::new();
    for name in order {
        let Some(value) = item.get(name) else {
            continue;
        };
        let text = match value {
            AttributeValue::S(s) if name == "half_open_owner" => {
                format!("{}…", &s[..s.len().min(8)])
            }
            AttributeValue::S(s) => s.clone(),
            AttributeValue::N(n) => n.clone(),
            other => format!("{other:?}"),
        };
        fields.push(format!("{name}={text}"));
    }
    format!("{{{}}}", fields.join(", "))
}

/// Sleeps until any function may probe the circuit: the recovery timeout and the fallback
/// of the functions that did not open it have passed.
async fn wait_for_recovery(stack: &SampleStack, circuit: &str) -> anyhow::Result<()> {
    let item = stack
        .circuit_item(circuit)
        .await?
        .context("no circuit item")?;
    let opened_at: u64 = match item.get("opened_at") {
        Some(AttributeValue::N(n)) => n.parse()?,
        _ => return Ok(()),
    };
    tokio::time::sleep(Duration::from_secs(
        (opened_at + RECOVERY_SECS + FALLBACK_SECS + 1).saturating_sub(unix_secs()),
    ))
    .await;
    Ok(())
}

fn emf_summary(function: &FunctionProcess) -> String {
    let logs = function.logs();
    let count = |metric: &str| {
        let needle = format!(r#""{metric}":1}}"#);
        logs.iter().filter(|l| l.ends_with(&needle)).count()
    };
    format!(
        "opened {}, half-opened {}, closed {}",
        count("CircuitOpened"),
        count("CircuitHalfOpened"),
        count("CircuitClosed")
    )
}
