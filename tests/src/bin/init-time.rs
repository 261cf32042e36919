//! Start-up and footprint of the sample functions, under a loopback Runtime API, in three
//! measurements (medians of several cold starts each):
//!
//! 1. **init**: process start to the first poll of the Runtime API, and to the first
//!    response, with events answered without a downstream call: the binary's own start-up
//!    (and, with a warm-up, one read of its circuits).
//! 2. **first invocation against a warm one**, with the whole sample stack on loopback and
//!    DynamoDB behind a proxy that delays every request by [`DYNAMODB_DELAY`]: each event
//!    makes one guarded call, so a first invocation that reads its circuit's record (and
//!    opens the connection to DynamoDB) pays the delay a warm one does not.
//! 3. **peak memory**: the process's max RSS (`VmHWM`) after serving [`SERVED`] such
//!    invocations, without the delay.
//!
//! Usage: `init-time [DIR]` with `DIR` holding the function binaries (default: next to
//! this executable), e.g. `target/debug/init-time target/release`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use devstack::fixtures::fault_proxy::{Fault, FaultProxy, Service};
use devstack::harness::function_process::{FunctionProcess, LogEcho, function_binary};
use devstack::harness::runtime_api::Invocation;
use devstack::harness::sample_stack::SampleStack;
use serde_json::{Value, json};

const COLD_STARTS: usize = 7;
/// Cold starts per function of the delayed measurement, each followed by warm invocations.
const DELAYED_STARTS: usize = 5;
const WARM_INVOCATIONS: usize = 5;
const DYNAMODB_DELAY: Duration = Duration::from_millis(150);
const SERVED: usize = 1_000;
const FUNCTIONS: [&str; 3] = ["cost-report", "charge", "overflow-replay"];

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let dir = std::env::args().nth(1).map(PathBuf::from);
    let binary = |name: &str| match &dir {
        Some(dir) => Ok(dir.join(name)),
        None => function_binary(name),
    };
    let mut binaries = Vec::new();
    for name in FUNCTIONS {
        binaries.push((name, binary(name)?));
    }
    let stack = SampleStack::start().await?;
    stack.moto.seed_cost_and_usage(vec![cost_page()]).await?;
    init_without_downstream(&stack, &binaries).await?;
    first_against_warm(&stack, &binaries).await?;
    peak_memory(&stack, &binaries).await
}

/// Measurement 1: the binaries' own start-up.
async fn init_without_downstream(
    stack: &SampleStack,
    binaries: &[(&str, PathBuf)],
) -> anyhow::Result<()> {
    let env = stack_env(stack, None);
    println!(
        "{:<16} {:>10} {:>16}  (events answered without a downstream call; {COLD_STARTS} cold starts, median)",
        "function", "init", "first response"
    );
    for (name, binary) in binaries {
        let event = match *name {
            "cost-report" => json!({"start": "not-a-date"}),
            "charge" => json!({"amount": 1}),
            _ => json!({"Records": []}),
        };
        let (mut inits, mut firsts) = (Vec::new(), Vec::new());
        for _ in 0..COLD_STARTS {
            let function =
                FunctionProcess::start_binary(binary, name, &env, LogEcho::Quiet).await?;
            function.invoke(event.clone()).await?;
            let answered = Instant::now();
            firsts.push(answered.duration_since(function.spawned_at()));
            inits.push(function.init_duration().unwrap_or_default());
        }
        println!(
            "{name:<16} {:>7.1} ms {:>13.1} ms",
            millis(median(inits)),
            millis(median(firsts))
        );
    }
    Ok(())
}

/// Measurement 2: the first invocation of a new environment against the warm ones after it.
async fn first_against_warm(
    stack: &SampleStack,
    binaries: &[(&str, PathBuf)],
) -> anyhow::Result<()> {
    let delayed = FaultProxy::start(&stack.dynalite.endpoint().replace("http://", "")).await?;
    delayed.inject(Service::Other, Some(Fault::Latency(DYNAMODB_DELAY)));
    let env = stack_env(stack, Some(delayed.endpoint()));
    println!(
        "\n{:<16} {:>10} {:>16} {:>12} {:>12}  (DynamoDB delayed {} ms; {DELAYED_STARTS} cold starts, median)",
        "function",
        "init",
        "first invoke",
        "warm invoke",
        "first - warm",
        DYNAMODB_DELAY.as_millis()
    );
    for (name, binary) in binaries {
        let (mut inits, mut firsts, mut warms) = (Vec::new(), Vec::new(), Vec::new());
        for start in 0..DELAYED_STARTS {
            let function =
                FunctionProcess::start_binary(binary, name, &env, LogEcho::Quiet).await?;
            let init = function.wait_for_init(Duration::from_secs(30)).await?;
            firsts.push(timed_invoke(stack, &function, event(name, start * 100)).await?);
            let mut warm = Vec::new();
            for n in 1..=WARM_INVOCATIONS {
                warm.push(timed_invoke(stack, &function, event(name, start * 100 + n)).await?);
            }
            inits.push(init);
            warms.push(median(warm));
        }
        let (first, warm) = (median(firsts), median(warms));
        println!(
            "{name:<16} {:>7.1} ms {:>13.1} ms {:>9.1} ms {:>9.1} ms",
            millis(median(inits)),
            millis(first),
            millis(warm),
            millis(first) - millis(warm)
        );
    }
    Ok(())
}

/// Measurement 3: max RSS after serving [`SERVED`] invocations.
async fn peak_memory(stack: &SampleStack, binaries: &[(&str, PathBuf)]) -> anyhow::Result<()> {
    let env = stack_env(stack, None);
    println!(
        "\n{:<16} {:>12}  (after {SERVED} invocations)",
        "function", "max RSS"
    );
    for (name, binary) in binaries {
        let function = FunctionProcess::start_binary(binary, name, &env, LogEcho::Quiet).await?;
        for n in 0..SERVED {
            timed_invoke(stack, &function, event(name, 10_000 + n)).await?;
        }
        let pid = function.pid().context("the function exited")?;
        println!("{name:<16} {:>9.1} MB", max_rss_kb(pid)? as f64 / 1024.0);
    }
    Ok(())
}

/// The sample stack's function environment, DynamoDB through `dynamodb` if given, and the
/// circuits' production cache age.
fn stack_env(stack: &SampleStack, dynamodb: Option<&str>) -> Vec<(&'static str, String)> {
    let mut env = stack.function_env();
    env.retain(|(key, _)| {
        !matches!(
            *key,
            "CIRCUIT_CACHE_MAX_AGE_SECS" | "AWS_ENDPOINT_URL_DYNAMODB" | "RUST_LOG"
        )
    });
    let dynamodb = dynamodb.map_or_else(|| stack.dynalite.endpoint(), str::to_owned);
    env.extend([
        ("AWS_ENDPOINT_URL_DYNAMODB", dynamodb),
        ("RUST_LOG", "warn".to_owned()),
    ]);
    env
}

/// An event that makes one guarded call which succeeds downstream.
fn event(function: &str, n: usize) -> Value {
    let order = json!({"order_id": format!("{function}-{n}"), "amount": 5, "currency": "EUR"});
    match function {
        "cost-report" => json!({"start": "2026-11-01", "end": "2026-11-02"}),
        "charge" => order,
        _ => json!({"Records": [{
            "messageId": format!("m-{n}"),
            "body": order.to_string(),
            "attributes": {},
            "messageAttributes": {},
        }]}),
    }
}

fn cost_page() -> Value {
    json!({
        "ResultsByTime": [{
            "TimePeriod": {"Start": "2026-11-01", "End": "2026-11-02"},
            "Total": {},
            "Groups": [{"Keys": ["AWS Lambda"], "Metrics": {"UnblendedCost": {"Amount": "0.5", "Unit": "USD"}}}],
            "Estimated": false,
        }],
    })
}

/// Invokes once; fails unless the function made its guarded call and answered from the
/// downstream (a charge reached the payment API; a report is live, not a snapshot).
async fn timed_invoke(
    stack: &SampleStack,
    function: &FunctionProcess,
    event: Value,
) -> anyhow::Result<Duration> {
    let charges = stack.payments.requests();
    let sent = Instant::now();
    let invocation = function.invoke(event).await?;
    let took = sent.elapsed();
    let served = match &invocation {
        Invocation::Response(answer) if function.name() == "cost-report" => {
            answer["stale"] == json!(false)
        }
        Invocation::Response(_) => stack.payments.requests() == charges + 1,
        Invocation::Error { .. } => false,
    };
    if !served {
        bail!(
            "{}: not served by the downstream: {invocation:?}\n{}",
            function.name(),
            function.logs().join("\n")
        );
    }
    Ok(took)
}

fn max_rss_kb(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("status"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmHWM in /proc/PID/status")
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
