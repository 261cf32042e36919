//! Local init time of the sample functions: process start to first poll of the Runtime API
//! (init) and to the first response, under the loopback Runtime API, median of several
//! cold starts. The events are answered without calling anything downstream, so the figure
//! is the binary's own start-up.
//!
//! Usage: `init-time [DIR]` with `DIR` holding the function binaries (default: next to
//! this executable), e.g. `target/debug/init-time target/release`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use breaker_tests::fixtures::sdk::local_env;
use breaker_tests::harness::runtime_api::{FunctionProcess, LogEcho, function_binary};
use serde_json::{Value, json};

const COLD_STARTS: usize = 7;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let dir = std::env::args().nth(1).map(PathBuf::from);
    // Never reached: the events below are answered before any AWS call.
    let unreachable = "http://127.0.0.1:9".to_owned();
    let mut env = local_env();
    env.extend([
        ("AWS_ENDPOINT_URL", unreachable.clone()),
        ("CIRCUIT_BREAKER_TABLE", "circuit-breakers".to_owned()),
        ("SNAPSHOT_TABLE", "cost-snapshots".to_owned()),
        (
            "OVERFLOW_QUEUE_URL",
            format!("{unreachable}/123456789012/overflow"),
        ),
        ("PAYMENT_API_URL", format!("{unreachable}/charges")),
    ]);
    let cases: [(&str, Value); 3] = [
        ("cost-report", json!({"start": "not-a-date"})),
        ("charge", json!({"amount": 1})),
        ("overflow-replay", json!({"Records": []})),
    ];
    println!(
        "{:<16} {:>10} {:>16}  ({COLD_STARTS} cold starts, median)",
        "function", "init", "first response"
    );
    for (name, event) in cases {
        let binary = match &dir {
            Some(dir) => dir.join(name),
            None => function_binary(name)?,
        };
        let (mut inits, mut firsts) = (Vec::new(), Vec::new());
        for _ in 0..COLD_STARTS {
            let function =
                FunctionProcess::start_binary(&binary, name, &env, LogEcho::Quiet).await?;
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

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
