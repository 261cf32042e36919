//! Size and init of function binaries, for "What breaker costs a function" in
//! docs/performance.md: each binary is started [`COLD_STARTS`] times under the loopback
//! Runtime API with the sample stack's environment (dynalite, moto, the payment stub); init
//! is process start to its first request for an invocation (`next`). The binaries take
//! turns, so a change in the machine's load reaches each alike. After each init the function
//! is invoked once and must answer (an invalid order for `charge`, a lookup for the others).
//!
//! Usage: `cold-start BINARY...`, e.g. `target/debug/cold-start target/release/charge
//! target/release/examples/lambda_dynamodb_plain target/release/examples/lambda_dynamodb_guarded`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use devstack::harness::function_process::{FunctionProcess, LogEcho};
use devstack::harness::runtime_api::Invocation;
use devstack::harness::sample_stack::SampleStack;
use serde_json::json;

const COLD_STARTS: usize = 20;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let binaries: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    if binaries.is_empty() {
        bail!("usage: cold-start BINARY...");
    }
    let stack = SampleStack::start().await?;
    let env = stack.function_env();
    let mut inits = vec![Vec::new(); binaries.len()];
    for _ in 0..COLD_STARTS {
        for (binary, inits) in binaries.iter().zip(&mut inits) {
            let name = binary
                .file_name()
                .and_then(|n| n.to_str())
                .context("a binary path")?;
            let function =
                FunctionProcess::start_binary(binary, name, &env, LogEcho::Quiet).await?;
            inits.push(function.wait_for_init(Duration::from_secs(30)).await?);
            let event = if name == "charge" {
                json!({"amount": 1})
            } else {
                json!({"order_id": "order-1"})
            };
            match function.invoke(event).await? {
                Invocation::Response(_) => {}
                other => bail!("{name}: {other:?}\n{}", function.logs().join("\n")),
            }
        }
    }
    println!(
        "{:<28} {:>10} {:>9} {:>9} {:>9}  ({COLD_STARTS} cold starts)",
        "binary", "size (MB)", "init p50", "min", "max"
    );
    for (binary, mut inits) in binaries.iter().zip(inits) {
        inits.sort();
        let size = std::fs::metadata(binary)?.len();
        println!(
            "{:<28} {:>10.2} {:>6.1} ms {:>6.1} ms {:>6.1} ms",
            binary.file_name().unwrap_or_default().to_string_lossy(),
            size as f64 / 1e6,
            millis(inits[inits.len() / 2]),
            millis(inits[0]),
            millis(inits[inits.len() - 1]),
        );
    }
    Ok(())
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
