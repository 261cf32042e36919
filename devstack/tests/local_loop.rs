//! `make local` as a newcomer runs it: the `local-stack` binary starts the stack and the real
//! `cargo lambda watch` emulator (on free ports here), each file of `events/` is invoked
//! with its function through `cargo lambda invoke`, the fault control makes Cost Explorer
//! throttle until the circuit opens, and a Ctrl-C (SIGINT to the whole process group, as a
//! terminal sends it) stops everything without leaving a process.
//!
//! Needs cargo-lambda, dynalite and moto in `.local/` (`scripts/install-tools.sh all`). The
//! emulator builds each function with `cargo run` on its first invocation: after
//! `cargo build --workspace --bins` that is a freshness check, not a compilation.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use devstack::fixtures::http1;
use devstack::fixtures::ports::free_port;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

const LOCAL_STACK: &str = env!("CARGO_BIN_EXE_local-stack");
/// The stack's start: dynalite and moto (a Python server) on a loaded machine.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// One invocation, the emulator's `cargo run` of the function included.
const INVOKE_TIMEOUT: Duration = Duration::from_secs(240);
/// From the SIGINT to the last process gone.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// The sample functions, the names `cargo lambda invoke` takes.
const FUNCTIONS: [&str; 3] = ["overflow-replay", "cost-report", "charge"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

fn cargo_lambda() -> PathBuf {
    let path = root().join(".local/venv/bin/cargo-lambda");
    assert!(
        path.is_file(),
        "{} is missing: run scripts/install-tools.sh all",
        path.display()
    );
    path
}

/// The running `local-stack`, in its own process group, and where it listens.
struct LocalStack {
    child: Child,
    invoke_port: u16,
    /// `127.0.0.1:PORT` of the fault control.
    control: String,
    /// In every process the stack starts (inherited): finds any that outlives it.
    marker: String,
    /// Interrupted and exited.
    stopped: bool,
}

impl LocalStack {
    async fn start() -> Self {
        let invoke_port = free_port().unwrap();
        let marker = format!(
            "{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        );
        let mut child = Command::new(LOCAL_STACK)
            .args(["--base-port", "0", "--invoke-port"])
            .arg(invoke_port.to_string())
            .args(["--", "--ignore-changes"])
            .env("BREAKER_LOCAL_LOOP_TEST", &marker)
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        // Echo its output (the test's log on failure) and catch the ready line.
        let (ready_tx, ready_rx) = oneshot::channel();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        tokio::spawn(async move {
            let mut ready_tx = Some(ready_tx);
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("[local-stack] {line}");
                if let Some(control) = line
                    .strip_prefix("local stack ready: ")
                    .and_then(|rest| rest.split("fault control http://").nth(1))
                    && let Some(tx) = ready_tx.take()
                {
                    let _ = tx.send(control.trim().to_owned());
                }
            }
        });
        let control = tokio::time::timeout(READY_TIMEOUT, ready_rx)
            .await
            .expect("local-stack did not print its ready line in time")
            .expect("local-stack exited before it was ready");
        Self {
            child,
            invoke_port,
            control,
            marker,
            stopped: false,
        }
    }

    /// `cargo lambda invoke FUNCTION --data-file EVENT`: the response, or a panic with
    /// what cargo-lambda printed.
    async fn invoke(&self, function: &str, event: &Path) -> Value {
        let output = tokio::time::timeout(
            INVOKE_TIMEOUT,
            Command::new(cargo_lambda())
                .args(["lambda", "invoke", "--invoke-port"])
                .arg(self.invoke_port.to_string())
                .arg(function)
                .arg("--data-file")
                .arg(event)
                .current_dir(root())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .unwrap_or_else(|_| panic!("{function} {}: no answer in time", event.display()))
        .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{function} {}: {}\n{stdout}{}",
            event.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("{function}: not JSON ({e}): {stdout}"))
    }

    /// The fault control's answer to `method path`.
    async fn control(&self, method: &str, path: &str) -> Value {
        let (status, body) = http1::request(&self.control, method, path, &[], b"")
            .await
            .unwrap();
        assert_eq!(
            status,
            200,
            "{method} {path}: {}",
            String::from_utf8_lossy(&body)
        );
        serde_json::from_slice(&body).unwrap()
    }

    /// Ctrl-C as a terminal sends it: SIGINT to every process of the group.
    async fn interrupt(&mut self) -> ExitStatus {
        let pid = self.child.id().unwrap();
        let sent = Command::new("kill")
            .args(["-INT", "--", &format!("-{pid}")])
            .status()
            .await
            .unwrap();
        assert!(sent.success(), "kill -INT -{pid}: {sent}");
        let status = tokio::time::timeout(STOP_TIMEOUT, self.child.wait())
            .await
            .expect("local-stack did not stop after SIGINT")
            .unwrap();
        self.stopped = true;
        status
    }
}

impl Drop for LocalStack {
    /// A test that fails half-way still stops the emulator and its functions: SIGKILL to
    /// the group (the local services die with local-stack's pipes).
    fn drop(&mut self) {
        if !self.stopped
            && let Some(pid) = self.child.id()
        {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .status();
        }
    }
}

/// The processes whose environment holds `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let needle = format!("BREAKER_LOCAL_LOOP_TEST={marker}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ
            .split(|b| *b == 0)
            .any(|var| var == needle.as_bytes())
        {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            found.push(format!(
                "{}: {}",
                entry.file_name().to_string_lossy(),
                String::from_utf8_lossy(&cmdline).replace('\0', " ")
            ));
        }
    }
    found
}

/// The function an event file is for: its name, or its name and a `-suffix`.
fn function_of(event: &Path) -> &'static str {
    let stem = event.file_stem().unwrap().to_str().unwrap();
    FUNCTIONS
        .into_iter()
        .find(|f| stem == *f || stem.starts_with(&format!("{f}-")))
        .unwrap_or_else(|| panic!("{}: no function of that name", event.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_answers_through_cargo_lambda_and_ctrl_c_leaves_no_process() {
    let stack = LocalStack::start().await;

    let mut events: Vec<PathBuf> = std::fs::read_dir(root().join("events"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    events.sort();
    // charge, cost-report-prime, cost-report, overflow-replay: the replay's order is the
    // one charge charged, so the ledger answers it without a second payment call.
    assert_eq!(events.len(), 4, "{events:?}");
    for event in &events {
        let function = function_of(event);
        let response = stack.invoke(function, event).await;
        let name = event.file_name().unwrap().to_string_lossy();
        match function {
            "charge" => {
                assert_eq!(response["statusCode"], 201, "{name}: {response}");
                assert_eq!(response["charged"], true, "{name}: {response}");
                assert_eq!(response["order_id"], "order-1001", "{name}: {response}");
            }
            "cost-report" => {
                assert_eq!(response["stale"], false, "{name}: {response}");
                assert_eq!(response["breaker"], "closed", "{name}: {response}");
                assert_eq!(response["total"]["amount"], 11.75, "{name}: {response}");
                assert_eq!(
                    response["by_service"].as_array().map(Vec::len),
                    Some(3),
                    "{name}: {response}"
                );
            }
            _ => {
                assert_eq!(
                    response["batchItemFailures"],
                    serde_json::json!([]),
                    "{name}: {response}"
                );
            }
        }
    }
    let payments = stack.control("GET", "/").await["payments"].clone();
    assert_eq!(payments["requests"], 1, "one payment call: {payments}");
    assert_eq!(payments["charged"], 1, "{payments}");

    // Cost Explorer throttles: stale snapshots, then the circuit opens (3 failures) and
    // the next invocation answers without calling it.
    let throttled = stack.control("POST", "/cost-explorer/throttle").await;
    assert_eq!(throttled["cost-explorer"]["fault"], "throttle");
    let month = root().join("events/cost-report.json");
    for attempt in 1..=3 {
        let response = stack.invoke("cost-report", &month).await;
        assert_eq!(response["stale"], true, "attempt {attempt}: {response}");
    }
    let before = stack.control("GET", "/").await["cost-explorer"]["requests"].clone();
    let open = stack.invoke("cost-report", &month).await;
    assert_eq!(open["breaker"], "open", "{open}");
    assert_eq!(open["stale"], true, "{open}");
    let after = stack.control("GET", "/").await["cost-explorer"].clone();
    assert_eq!(after["requests"], before, "no call while open: {after}");
    assert!(after["faulted"].as_u64().unwrap() >= 3, "{after}");
    let healed = stack.control("POST", "/cost-explorer/heal").await;
    assert_eq!(healed["cost-explorer"]["fault"], "none");

    let mut stack = stack;
    let started = Instant::now();
    let status = stack.interrupt().await;
    assert!(status.success(), "local-stack after SIGINT: {status}");
    let mut left = processes_with(&stack.marker);
    while !left.is_empty() && started.elapsed() < STOP_TIMEOUT {
        tokio::time::sleep(Duration::from_millis(200)).await;
        left = processes_with(&stack.marker);
    }
    assert!(left.is_empty(), "processes left after Ctrl-C: {left:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fault_control_applies_what_it_names_and_refuses_the_rest() {
    use devstack::fixtures::fault_proxy::{Fault, Service};
    use devstack::harness::fault_control::{FaultControl, SLOW};
    use devstack::harness::sample_stack::SampleStack;
    use std::sync::Arc;

    let stack = Arc::new(SampleStack::start().await.unwrap());
    let control = FaultControl::start("127.0.0.1:0", Arc::clone(&stack))
        .await
        .unwrap();
    let address = control.url().trim_start_matches("http://").to_owned();
    let post = |path: &'static str| {
        let address = address.clone();
        async move {
            let (status, body) = http1::request(&address, "POST", path, &[], b"")
                .await
                .unwrap();
            (status, serde_json::from_slice::<Value>(&body).unwrap())
        }
    };

    let (status, state) = post("/sqs/slow").await;
    assert_eq!(status, 200, "{state}");
    assert_eq!(state["sqs"]["fault"], "slow");
    assert_eq!(stack.proxy.fault(Service::Sqs), Some(Fault::Latency(SLOW)));
    let (_, state) = post("/payments/down").await;
    assert_eq!(state["payments"]["fault"], "down");
    assert!(stack.payments.is_down());

    // A typo changes nothing and says what exists.
    for path in [
        "/cost-explorer/throttled",
        "/dynamodb/throttle",
        "/payments/slow",
    ] {
        let (status, answer) = post(path).await;
        assert_eq!(status, 404, "{path}: {answer}");
        assert!(
            answer["error"]
                .as_str()
                .unwrap()
                .contains("throttle | unavailable"),
            "{path}: {answer}"
        );
    }
    assert_eq!(stack.proxy.fault(Service::CostExplorer), None);
    assert_eq!(stack.proxy.fault(Service::Sqs), Some(Fault::Latency(SLOW)));

    let (_, state) = post("/sqs/heal").await;
    assert_eq!(state["sqs"]["fault"], "none");
    let (_, state) = post("/payments/heal").await;
    assert_eq!(state["payments"]["fault"], "none");
    assert!(!stack.payments.is_down());
}
