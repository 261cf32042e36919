//! Runs a real function binary the way Lambda does: started with `AWS_LAMBDA_RUNTIME_API`
//! pointing at its own loopback [`RuntimeApi`], and supervised: killed and started again
//! (a fresh init) when an invocation runs past its deadline, wherever it was, as Lambda
//! does, or when a test crashes it. A function started with `AWS_LAMBDA_MAX_CONCURRENCY`
//! above 1 runs as on Lambda Managed Instances: [`FunctionProcess::invoke`] may be called
//! from several tasks at once, the process polls for that many invocations at once, and
//! an invocation past its deadline is timed out alone: the environment runs on.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use devstack::harness::function_process::{FunctionProcess, LogEcho};
//! use devstack::harness::runtime_api::Invocation;
//! let function = FunctionProcess::start("charge", &[("PAYMENT_API_URL", "http://127.0.0.1:9/".into())], LogEcho::Stderr).await?;
//! let outcome = function.invoke(serde_json::json!({"order_id": 1})).await?;
//! assert!(matches!(outcome, Invocation::Response(_)));
//! # Ok(()) }
//! ```
//!
//! No stray processes: the child is killed when the [`FunctionProcess`] is dropped (also
//! while unwinding from a panic), and a function whose Runtime API disappears (the test
//! process died) fails its next poll and exits.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::runtime_api::{EXIT_ERROR, Invocation, RuntimeApi, TIMED_OUT};
use crate::fixtures::sdk::REGION;
use crate::sync::lock;

/// Where the function's log lines go besides [`FunctionProcess::logs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogEcho {
    /// Also print them to stderr, prefixed with the function name (tests: nextest keeps
    /// them with the test's output).
    Stderr,
    /// Keep them only in memory (the demo prints its own timeline).
    Quiet,
}

/// A function binary running against its own [`RuntimeApi`]. Dropping it kills the process.
pub struct FunctionProcess {
    name: String,
    api: RuntimeApi,
    binary: PathBuf,
    env: Vec<(String, String)>,
    echo: LogEcho,
    /// `AWS_LAMBDA_MAX_CONCURRENCY` (1 when unset or not a positive number, as
    /// lambda_runtime reads it).
    max_concurrency: u32,
    child: Mutex<Child>,
    spawned_at: Instant,
    restarts: AtomicU64,
    logs: Arc<Mutex<Vec<String>>>,
}

impl std::fmt::Debug for FunctionProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FunctionProcess")
            .field("name", &self.name)
            .field("pid", &lock(&self.child).id())
            .finish()
    }
}

impl FunctionProcess {
    /// Starts `target/<profile>/<name>` with `env` plus the Lambda environment.
    pub async fn start(name: &str, env: &[(&str, String)], echo: LogEcho) -> anyhow::Result<Self> {
        Self::start_binary(&function_binary(name)?, name, env, echo).await
    }

    /// Starts `binary` as function `name` (e.g. a release build, to measure its init).
    pub async fn start_binary(
        binary: &std::path::Path,
        name: &str,
        env: &[(&str, String)],
        echo: LogEcho,
    ) -> anyhow::Result<Self> {
        let api = RuntimeApi::start(name).await?;
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        let max_concurrency = env
            .iter()
            .find(|(key, _)| key == "AWS_LAMBDA_MAX_CONCURRENCY")
            .and_then(|(_, value)| value.parse::<u32>().ok())
            .filter(|&n| n > 0)
            .unwrap_or(1);
        let logs = Arc::new(Mutex::new(Vec::new()));
        let spawned_at = Instant::now();
        let child = spawn(binary, name, api.address(), &env, echo, &logs)?;
        Ok(Self {
            name: name.to_owned(),
            api,
            binary: binary.to_owned(),
            env,
            echo,
            max_concurrency,
            child: Mutex::new(child),
            spawned_at,
            restarts: AtomicU64::new(0),
            logs,
        })
    }

    /// The function timeout (default 60 s): each invocation's deadline.
    pub fn set_timeout(&self, timeout: Duration) {
        self.api.set_timeout(timeout);
    }

    /// Waits up to `within` for the process to exit (a function that stops at init);
    /// its exit status, or `None` while it still runs.
    pub async fn wait_exit(&self, within: Duration) -> Option<std::process::ExitStatus> {
        let until = Instant::now() + within;
        loop {
            if let Ok(Some(status)) = lock(&self.child).try_wait() {
                return Some(status);
            }
            if Instant::now() >= until {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// How often the process was killed (at a deadline, or [`crash`](Self::crash)) and
    /// started again.
    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }

    /// Invokes the function once with `event`. Past its deadline the answer is a
    /// [`TIMED_OUT`] error, and the process is killed and started again, as Lambda does;
    /// with [`max_concurrency`](Self::max_concurrency) above 1 it runs on, its other
    /// invocations with it, as on Lambda Managed Instances.
    pub async fn invoke(&self, event: Value) -> anyhow::Result<Invocation> {
        let invocation = self.api.invoke(&event).await?;
        if matches!(&invocation, Invocation::Error { error_type, .. } if error_type == TIMED_OUT)
            && self.max_concurrency <= 1
        {
            self.restart()?;
        }
        Ok(invocation)
    }

    /// How many invocations the process runs at once: its `AWS_LAMBDA_MAX_CONCURRENCY`, 1
    /// when unset.
    pub fn max_concurrency(&self) -> u32 {
        self.max_concurrency
    }

    /// How many invocations the process runs now, and the most it ran at once so far.
    pub fn in_flight(&self) -> (usize, usize) {
        (self.api.in_flight(), self.api.peak_in_flight())
    }

    /// Kills the process wherever it is (a crash, an out-of-memory kill) and starts it
    /// again; every invocation it was running ends as a `Runtime.ExitError`.
    pub fn crash(&self) -> anyhow::Result<()> {
        self.restart()?;
        self.api.abort_in_flight(
            EXIT_ERROR,
            "RequestId: the runtime exited with signal: killed",
        );
        Ok(())
    }

    fn restart(&self) -> anyhow::Result<()> {
        let fresh = spawn(
            &self.binary,
            &self.name,
            self.api.address(),
            &self.env,
            self.echo,
            &self.logs,
        )?;
        let mut old = std::mem::replace(&mut *lock(&self.child), fresh);
        // kill_on_drop reaps it; start_kill only sends the signal, no await under a lock.
        let _ = old.start_kill();
        self.restarts.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// How long the process took from spawn to its first poll for an invocation (its
    /// init), once it has polled.
    pub fn init_duration(&self) -> Option<Duration> {
        self.api
            .first_poll()
            .map(|at| at.duration_since(self.spawned_at))
    }

    /// Waits until the process first polls for an invocation, at most `timeout`; returns
    /// its init, or an error with what it logged.
    pub async fn wait_for_init(&self, timeout: Duration) -> anyhow::Result<Duration> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(init) = self.init_duration() {
                return Ok(init);
            }
            if Instant::now() > deadline {
                bail!(
                    "{} did not finish its init\n{}",
                    self.name(),
                    self.logs().join("\n")
                );
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// When the process was spawned.
    pub fn spawned_at(&self) -> Instant {
        self.spawned_at
    }

    /// Every line the function wrote to stdout or stderr so far.
    pub fn logs(&self) -> Vec<String> {
        lock(&self.logs).clone()
    }

    /// What the function posted to `/init/error`, if anything.
    pub fn init_error(&self) -> Option<String> {
        self.api.init_error()
    }

    /// The function's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The process id, while the process runs (to read its `/proc` entry).
    pub fn pid(&self) -> Option<u32> {
        lock(&self.child).id()
    }
}

/// Starts `binary` as function `name` against the Runtime API at `api`.
fn spawn(
    binary: &std::path::Path,
    name: &str,
    api: &str,
    env: &[(String, String)],
    echo: LogEcho,
    logs: &Arc<Mutex<Vec<String>>>,
) -> anyhow::Result<Child> {
    let mut command = Command::new(binary);
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("AWS_LAMBDA_RUNTIME_API", api)
        .env("AWS_LAMBDA_FUNCTION_NAME", name)
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        .env("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{name}"))
        .env("AWS_LAMBDA_LOG_STREAM_NAME", "local")
        .env("AWS_LAMBDA_LOG_FORMAT", "JSON")
        .env("AWS_REGION", REGION)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    if let Some(stdout) = child.stdout.take() {
        tokio::spawn(collect_lines(
            stdout,
            name.to_owned(),
            Arc::clone(logs),
            echo,
        ));
    }
    if let Some(stderr) = child.stderr.take() {
        tokio::spawn(collect_lines(
            stderr,
            name.to_owned(),
            Arc::clone(logs),
            echo,
        ));
    }
    Ok(child)
}

async fn collect_lines<R>(stream: R, name: String, logs: Arc<Mutex<Vec<String>>>, echo: LogEcho)
where
    R: tokio::io::AsyncRead + Unpin,
{
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if echo == LogEcho::Stderr {
            eprintln!("[{name}] {line}");
        }
        lock(&logs).push(line);
    }
}

/// The function binary built next to the running executable: `target/<profile>/<name>`.
/// `cargo nextest run --workspace` and `cargo build --workspace` build it.
pub fn function_binary(name: &str) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let mut dir = exe
        .parent()
        .context("executable without a directory")?
        .to_path_buf();
    if dir.file_name().is_some_and(|d| d == "deps") {
        dir.pop();
    }
    let binary = dir.join(name);
    if !binary.is_file() {
        bail!(
            "{} is not built; run `cargo build -p {name}` (or the whole workspace) first",
            binary.display()
        );
    }
    Ok(binary)
}
