//! `make local`: the sample functions' local stack on fixed loopback ports, and
//! `cargo lambda watch` with every function's environment pointed at it, until Ctrl-C.
//!
//! Starts dynalite (DynamoDB), moto (SQS, Cost Explorer) behind the fault proxy, the stub
//! payment API and the fault control endpoint ([`FaultControl`]); creates the tables and
//! queues; seeds Cost Explorer; prints the endpoints; then runs cargo-lambda's emulator,
//! which builds each function on its first invocation and reloads it when the code
//! changes. On Ctrl-C (SIGINT) or SIGTERM it stops the emulator (which stops the
//! functions), then every local service: no process is left.
//!
//! Usage: `local-stack [--base-port N] [--bind ADDR] [--invoke-port P] [-- WATCH_ARGS...]`
//!
//! - `--base-port N` (default 4560): dynalite on N, the AWS endpoint (fault proxy) on N+1,
//!   the payment API on N+2, the fault control on N+3; 0 picks free ports (the tests).
//! - `--bind ADDR` (default 127.0.0.1): where dynalite, the AWS endpoint and the payment API
//!   listen; `0.0.0.0` lets functions in Docker reach them (`sam local invoke` on Linux).
//! - `--invoke-port P` (default 9000, cargo-lambda's): where `cargo lambda invoke` sends
//!   invocations.
//! - `WATCH_ARGS`: passed to `cargo lambda watch` (e.g. `--ignore-changes`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use devstack::harness::fault_control::FaultControl;
use devstack::harness::sample_stack::{
    CIRCUIT_TABLE, LEDGER_TABLE, QueueSettings, SNAPSHOT_TABLE, SampleStack, StackPorts,
};
use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tokio::signal::unix::{SignalKind, signal};

/// The base of the fixed ports: the ones `local/sam-env.json` and docs/functions.md name.
const DEFAULT_BASE_PORT: u16 = 4560;
/// cargo-lambda's default invoke port.
const DEFAULT_INVOKE_PORT: u16 = 9000;
/// How long the emulator may take to listen.
const WATCH_START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the emulator may take to stop its functions before it is killed.
const WATCH_STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// The variables on top of [`SampleStack::function_env`]: circuits a person can watch open
/// and recover by hand (3 failures, 15 s), one environment per function (no jitter), and
/// the functions' logs at INFO without the emulator's own (it reads `RUST_LOG` too).
const LOCAL_ENV: [(&str, &str); 4] = [
    ("CIRCUIT_FAILURE_THRESHOLD", "3"),
    ("CIRCUIT_RECOVERY_TIMEOUT_SECS", "15"),
    ("CIRCUIT_RECOVERY_JITTER_SECS", "0"),
    (
        "RUST_LOG",
        "info,cargo_lambda=warn,cargo_lambda_watch=warn,watchexec=warn,watchexec_supervisor=warn,tokio_graceful_shutdown=warn",
    ),
];

struct Options {
    base_port: u16,
    bind: std::net::IpAddr,
    invoke_port: u16,
    watch_args: Vec<String>,
}

fn options() -> anyhow::Result<Options> {
    let mut options = Options {
        base_port: DEFAULT_BASE_PORT,
        bind: std::net::Ipv4Addr::LOCALHOST.into(),
        invoke_port: DEFAULT_INVOKE_PORT,
        watch_args: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut port = |name: &str| -> anyhow::Result<u16> {
            let value = args
                .next()
                .with_context(|| format!("{name} needs a port"))?;
            value
                .parse()
                .with_context(|| format!("{name} {value}: not a port"))
        };
        match arg.as_str() {
            "--base-port" => options.base_port = port("--base-port")?,
            "--invoke-port" => options.invoke_port = port("--invoke-port")?,
            "--bind" => {
                let value = args.next().context("--bind needs an address")?;
                options.bind = value
                    .parse()
                    .with_context(|| format!("--bind {value}: not an IP address"))?;
            }
            "--" => options.watch_args.extend(args.by_ref()),
            other => bail!(
                "unknown argument {other}; usage: local-stack [--base-port N] [--bind ADDR] [--invoke-port P] [-- WATCH_ARGS...]"
            ),
        }
    }
    if options.base_port != 0 && options.base_port > u16::MAX - 3 {
        bail!("--base-port {}: N+3 must be a port", options.base_port);
    }
    Ok(options)
}

/// What to do when a port is taken.
fn in_use(base: u16) -> String {
    format!(
        "starting the local stack on ports {base}-{} (is another `make local` running? `--base-port N` moves them)",
        base.saturating_add(3)
    )
}

/// The port `offset` above `base`, or 0 (a free one) when `base` is 0.
fn port(base: u16, offset: u16) -> u16 {
    if base == 0 { 0 } else { base + offset }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let options = options()?;
    let root = workspace_root()?;
    let cargo_lambda = cargo_lambda(&root)?;
    // Listen before anything starts, so a Ctrl-C during start-up also stops it cleanly.
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;

    let base = options.base_port;
    let ports = StackPorts {
        bind: options.bind,
        dynamodb: port(base, 0),
        aws: port(base, 1),
        payments: port(base, 2),
    };
    let stack = tokio::select! {
        stack = SampleStack::start_on(ports, QueueSettings::default()) => Arc::new(stack.with_context(|| in_use(base))?),
        _ = interrupt.recv() => return Ok(()),
        _ = terminate.recv() => return Ok(()),
    };
    stack.moto.seed_cost_and_usage(cost_and_usage()).await?;
    let control = FaultControl::start(&format!("127.0.0.1:{}", port(base, 3)), Arc::clone(&stack))
        .await
        .with_context(|| in_use(base))?;

    let mut env = stack.function_env();
    env.retain(|(key, _)| !LOCAL_ENV.iter().any(|(k, _)| k == key));
    env.extend(LOCAL_ENV.iter().map(|(k, v)| (*k, (*v).to_owned())));
    print_endpoints(&stack, &control, options.invoke_port, &env);

    let mut watch = Command::new(&cargo_lambda)
        .args(["lambda", "watch", "--invoke-port"])
        .arg(options.invoke_port.to_string())
        .args(&options.watch_args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .current_dir(&root)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", cargo_lambda.display()))?;
    let outcome = tokio::select! {
        status = watch.wait() => Err(anyhow::anyhow!("cargo lambda watch exited: {}", status?)),
        _ = interrupt.recv() => Ok(()),
        _ = terminate.recv() => Ok(()),
        listening = announce_when_listening(options.invoke_port, control.url()) => match listening {
            Err(e) => Err(e),
            Ok(()) => tokio::select! {
                status = watch.wait() => Err(anyhow::anyhow!("cargo lambda watch exited: {}", status?)),
                _ = interrupt.recv() => Ok(()),
                _ = terminate.recv() => Ok(()),
            },
        },
    };
    stop(&mut watch).await;
    println!("local stack: stopping (no process stays behind)");
    drop(control);
    drop(stack);
    outcome
}

/// SIGTERM to the emulator, which stops its functions; SIGKILL if it takes too long.
async fn stop(watch: &mut Child) {
    if let Ok(Some(_)) = watch.try_wait() {
        return;
    }
    if let Some(pid) = watch.id() {
        let _ = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .await;
    }
    if tokio::time::timeout(WATCH_STOP_TIMEOUT, watch.wait())
        .await
        .is_err()
    {
        let _ = watch.kill().await;
    }
}

fn print_endpoints(
    stack: &SampleStack,
    control: &FaultControl,
    invoke_port: u16,
    env: &[(&str, String)],
) {
    let control = control.url();
    println!("local stack for the sample functions (Ctrl-C stops everything):");
    println!(
        "  DynamoDB (dynalite)         {}",
        stack.dynalite.endpoint()
    );
    println!(
        "  SQS + Cost Explorer (moto)  {}  (via the fault proxy)",
        stack.proxy.endpoint()
    );
    println!("  payment API (stub)          {}", stack.payments.url());
    println!("  fault control               {control}");
    println!("  Lambda emulator             http://127.0.0.1:{invoke_port}  (cargo lambda watch)");
    println!(
        "  tables {CIRCUIT_TABLE}, {SNAPSHOT_TABLE}, {LEDGER_TABLE}; queue {} (DLQ {})",
        stack.queues.queue_url, stack.queues.dlq_url
    );
    println!("the functions' environment:");
    for (key, value) in env {
        println!("  {key}={value}");
    }
    println!("in another terminal:");
    println!("  make invoke FUNCTION=charge EVENT=events/charge.json");
    println!(
        "  curl -X POST {control}/cost-explorer/throttle   # or /payments/down, .../heal; GET / for the state"
    );
    println!(
        "  AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1 cargo run -q -p breaker -- --table {CIRCUIT_TABLE} --endpoint-url {} watch",
        stack.dynalite.endpoint()
    );
}

/// Prints the ready line (the one the emulator test waits for) once the emulator accepts
/// invocations.
async fn announce_when_listening(invoke_port: u16, control: &str) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", invoke_port))
        .await
        .is_err()
    {
        if started.elapsed() > WATCH_START_TIMEOUT {
            bail!(
                "cargo lambda watch does not listen on port {invoke_port} after {WATCH_START_TIMEOUT:?}"
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("local stack ready: invoke port {invoke_port}, fault control {control}");
    Ok(())
}

/// This month's costs, one page, for whatever period is asked first.
fn cost_and_usage() -> Vec<Value> {
    let group = |service: &str, amount: &str| json!({"Keys": [service], "Metrics": {"UnblendedCost": {"Amount": amount, "Unit": "USD"}}});
    vec![
        json!({"ResultsByTime": [{"TimePeriod": {"Start": "2026-11-01", "End": "2026-11-02"}, "Total": {},
        "Groups": [group("Amazon EC2", "10.0"), group("AWS Lambda", "0.5"), group("Amazon S3", "1.25")], "Estimated": false}]}),
    ]
}

/// The workspace root: where `cargo lambda watch` finds every function.
fn workspace_root() -> anyhow::Result<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("the devstack package has no parent directory")?;
    Ok(root.to_path_buf())
}

/// cargo-lambda as `scripts/install-tools.sh` installs it, else from `PATH`.
fn cargo_lambda(root: &Path) -> anyhow::Result<PathBuf> {
    let local = root.join(".local/venv/bin/cargo-lambda");
    if local.is_file() {
        return Ok(local);
    }
    std::env::var_os("PATH")
        .and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("cargo-lambda"))
                .find(|candidate| candidate.is_file())
        })
        .context("cargo-lambda is not installed: run `scripts/install-tools.sh all` (make tools)")
}
