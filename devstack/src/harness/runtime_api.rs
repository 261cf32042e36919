//! Runs a real function binary the way Lambda does: a loopback Lambda Runtime API
//! (`/2018-06-01/runtime/invocation/next`, `/response`, `/error`, `/init/error`) on a free
//! port, and the binary started with `AWS_LAMBDA_RUNTIME_API` pointing at it.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use devstack::harness::runtime_api::{FunctionProcess, Invocation, LogEcho};
//! let function = FunctionProcess::start("charge", &[("PAYMENT_API_URL", "http://127.0.0.1:9/".into())], LogEcho::Stderr).await?;
//! let outcome = function.invoke(serde_json::json!({"order_id": 1})).await?;
//! assert!(matches!(outcome, Invocation::Response(_)));
//! # Ok(()) }
//! ```
//!
//! No stray processes: the child is killed when the [`FunctionProcess`] is dropped (also
//! while unwinding from a panic), and a function whose Runtime API disappears (the test
//! process died) fails its next poll and exits.
//!
//! Each invocation gets a deadline (`Lambda-Runtime-Deadline-Ms`), the function's timeout
//! after it is handed out ([`FunctionProcess::set_timeout`], default 60 s). Like Lambda,
//! an invocation that runs past it ends as a `Sandbox.Timedout` error and the process is
//! killed and started again (a fresh init), wherever it was.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::fixtures::http1::{self, Unframed};
use crate::fixtures::sdk::REGION;
use crate::wall_clock::unix_millis;

/// The default function timeout: the deadline of each invocation.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest a queued invocation may wait for the function to ask for it (its init).
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// The `errorType` Lambda reports for an invocation that ran past its deadline.
pub const TIMED_OUT: &str = "Sandbox.Timedout";
/// The `errorType` Lambda reports when the runtime process dies mid-invocation.
pub const EXIT_ERROR: &str = "Runtime.ExitError";

/// How an invocation ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Invocation {
    /// The handler returned `Ok`: its JSON response.
    Response(Value),
    /// The handler returned `Err`: what the runtime posted to `/error`.
    Error {
        /// `errorType`.
        error_type: String,
        /// `errorMessage`.
        error_message: String,
    },
}

impl Invocation {
    /// The response, or a panic that shows the error.
    pub fn expect_response(self) -> Value {
        match self {
            Self::Response(value) => value,
            Self::Error {
                error_type,
                error_message,
            } => {
                panic!("expected a response, got error {error_type}: {error_message}")
            }
        }
    }

    /// The error, or a panic that shows the response.
    pub fn expect_error(self) -> (String, String) {
        match self {
            Self::Error {
                error_type,
                error_message,
            } => (error_type, error_message),
            Self::Response(value) => panic!("expected an error, got response {value}"),
        }
    }
}

/// Where the function's log lines go besides [`FunctionProcess::logs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogEcho {
    /// Also print them to stderr, prefixed with the function name (tests: nextest keeps
    /// them with the test's output).
    Stderr,
    /// Keep them only in memory (the demo prints its own timeline).
    Quiet,
}

struct Pending {
    request_id: String,
    event: Vec<u8>,
    /// Told the deadline when the function takes the invocation.
    started: oneshot::Sender<Instant>,
}

#[derive(Default)]
struct Shared {
    waiting: Mutex<HashMap<String, oneshot::Sender<Invocation>>>,
    init_error: Mutex<Option<String>>,
    first_poll: OnceLock<Instant>,
    /// The function timeout in milliseconds (0: the default).
    timeout_ms: AtomicU64,
    /// The invocation the function took last.
    in_flight: Mutex<Option<String>>,
}

impl Shared {
    fn timeout(&self) -> Duration {
        match self.timeout_ms.load(Ordering::Relaxed) {
            0 => DEFAULT_TIMEOUT,
            ms => Duration::from_millis(ms),
        }
    }
}

/// The loopback Runtime API. Dropping it stops the server.
pub struct RuntimeApi {
    address: String,
    function_name: String,
    queue: mpsc::UnboundedSender<Pending>,
    shared: Arc<Shared>,
    next_id: AtomicU64,
    server: JoinHandle<()>,
}

impl std::fmt::Debug for RuntimeApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeApi")
            .field("address", &self.address)
            .finish()
    }
}

impl Drop for RuntimeApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl RuntimeApi {
    /// Listens on a free loopback port.
    pub async fn start(function_name: &str) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?.to_string();
        let (queue, receiver) = mpsc::unbounded_channel();
        let receiver = Arc::new(tokio::sync::Mutex::new(receiver));
        let shared = Arc::new(Shared::default());
        let server = tokio::spawn(serve(
            listener,
            receiver,
            Arc::clone(&shared),
            function_name.to_owned(),
        ));
        Ok(Self {
            address,
            function_name: function_name.to_owned(),
            queue,
            shared,
            next_id: AtomicU64::new(1),
            server,
        })
    }

    /// `127.0.0.1:PORT`, the value of `AWS_LAMBDA_RUNTIME_API`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The function timeout: each invocation's deadline is this long after the function
    /// takes it.
    pub fn set_timeout(&self, timeout: Duration) {
        let ms = u64::try_from(timeout.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        self.shared.timeout_ms.store(ms, Ordering::Relaxed);
    }

    /// Queues `event` and waits for the function's answer, until its deadline: past it the
    /// answer is a [`TIMED_OUT`] error (the caller restarts the function).
    pub async fn invoke(&self, event: &Value) -> anyhow::Result<Invocation> {
        let request_id = format!(
            "{}-{:08}",
            self.function_name,
            self.next_id.fetch_add(1, Ordering::Relaxed)
        );
        let (done, answer) = oneshot::channel();
        let (started, deadline) = oneshot::channel();
        lock(&self.shared.waiting).insert(request_id.clone(), done);
        self.queue
            .send(Pending {
                request_id: request_id.clone(),
                event: serde_json::to_vec(event)?,
                started,
            })
            .context("the Runtime API server stopped")?;
        let forget = || lock(&self.shared.waiting).remove(&request_id);
        let deadline = match tokio::time::timeout(START_TIMEOUT, deadline).await {
            Ok(Ok(deadline)) => deadline,
            _ => {
                forget();
                bail!("the function did not take invocation {request_id} within {START_TIMEOUT:?}")
            }
        };
        match tokio::time::timeout_at(deadline.into(), answer).await {
            Ok(Ok(invocation)) => Ok(invocation),
            Ok(Err(_)) => bail!("invocation {request_id} was dropped"),
            Err(_) => {
                forget();
                let timeout = self.shared.timeout();
                Ok(Invocation::Error {
                    error_type: TIMED_OUT.into(),
                    error_message: format!(
                        "Task timed out after {:.2} seconds",
                        timeout.as_secs_f64()
                    ),
                })
            }
        }
    }

    /// What the function posted to `/init/error`, if anything.
    pub fn init_error(&self) -> Option<String> {
        lock(&self.shared.init_error).clone()
    }

    /// Ends the invocation the function is running, if any, with `error_type`: what Lambda
    /// answers when the runtime process dies mid-invocation.
    fn abort_in_flight(&self, error_type: &str, error_message: &str) {
        let Some(request_id) = lock(&self.shared.in_flight).take() else {
            return;
        };
        if let Some(done) = lock(&self.shared.waiting).remove(&request_id) {
            let _ = done.send(Invocation::Error {
                error_type: error_type.into(),
                error_message: error_message.into(),
            });
        }
    }

    /// When the function first asked for an invocation: the end of its init.
    pub fn first_poll(&self) -> Option<Instant> {
        self.shared.first_poll.get().copied()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn serve(
    listener: TcpListener,
    queue: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<Pending>>>,
    shared: Arc<Shared>,
    function_name: String,
) {
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(connection(
            stream,
            Arc::clone(&queue),
            Arc::clone(&shared),
            function_name.clone(),
        ));
    }
}

/// One keep-alive connection from the runtime client.
async fn connection(
    stream: TcpStream,
    queue: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<Pending>>>,
    shared: Arc<Shared>,
    function_name: String,
) -> std::io::Result<()> {
    let (reader, mut writer) = stream.into_split();
    let mut reader = BufReader::new(reader);
    while let Some((head, body)) = http1::read_message(&mut reader, Unframed::NoBody).await? {
        let path = head.path().to_owned();
        if head.method() == "GET" && path.ends_with("/runtime/invocation/next") {
            let _ = shared.first_poll.set(Instant::now());
            let Some(pending) = queue.lock().await.recv().await else {
                return Ok(());
            };
            let timeout = shared.timeout();
            *lock(&shared.in_flight) = Some(pending.request_id.clone());
            let _ = pending.started.send(Instant::now() + timeout);
            let deadline = (unix_millis() + timeout.as_millis() as u64).to_string();
            let arn = format!("arn:aws:lambda:us-east-1:123456789012:function:{function_name}");
            let headers = [
                ("Content-Type", "application/json"),
                ("Lambda-Runtime-Aws-Request-Id", pending.request_id.as_str()),
                ("Lambda-Runtime-Deadline-Ms", deadline.as_str()),
                ("Lambda-Runtime-Invoked-Function-Arn", arn.as_str()),
                (
                    "Lambda-Runtime-Trace-Id",
                    "Root=1-00000000-000000000000000000000000;Sampled=0",
                ),
            ];
            http1::write_response(&mut writer, 200, &headers, &pending.event).await?;
        } else if let Some(rest) = path.strip_prefix("/2018-06-01/runtime/invocation/") {
            let (request_id, kind) = rest.split_once('/').unwrap_or((rest, ""));
            let invocation = match kind {
                "response" => {
                    Invocation::Response(serde_json::from_slice(&body).unwrap_or_else(|_| {
                        Value::String(String::from_utf8_lossy(&body).into_owned())
                    }))
                }
                _ => {
                    let error: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    Invocation::Error {
                        error_type: error["errorType"].as_str().unwrap_or_default().to_owned(),
                        error_message: error["errorMessage"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                    }
                }
            };
            if let Some(done) = lock(&shared.waiting).remove(request_id) {
                let _ = done.send(invocation);
            }
            accepted(&mut writer).await?;
        } else if path.ends_with("/runtime/init/error") {
            *lock(&shared.init_error) = Some(String::from_utf8_lossy(&body).into_owned());
            accepted(&mut writer).await?;
        } else {
            http1::write_response(&mut writer, 404, &[], b"not a Runtime API path").await?;
        }
    }
    Ok(())
}

/// The Runtime API's answer to a posted response or error: 202 with an empty JSON object.
async fn accepted<W>(writer: &mut W) -> std::io::Result<()>
where
    W: tokio::io::AsyncWrite + Unpin,
{
    http1::write_response(writer, 202, &[("Content-Type", "application/json")], b"{}").await
}

/// A function binary running against its own [`RuntimeApi`]. Dropping it kills the process.
pub struct FunctionProcess {
    name: String,
    api: RuntimeApi,
    binary: PathBuf,
    env: Vec<(String, String)>,
    echo: LogEcho,
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
        let logs = Arc::new(Mutex::new(Vec::new()));
        let spawned_at = Instant::now();
        let child = spawn(binary, name, api.address(), &env, echo, &logs)?;
        Ok(Self {
            name: name.to_owned(),
            api,
            binary: binary.to_owned(),
            env,
            echo,
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

    /// Invokes the function once with `event`. Past its deadline, the process is killed
    /// and started again, as Lambda does, and the answer is a [`TIMED_OUT`] error.
    pub async fn invoke(&self, event: Value) -> anyhow::Result<Invocation> {
        let invocation = self.api.invoke(&event).await?;
        if matches!(&invocation, Invocation::Error { error_type, .. } if error_type == TIMED_OUT) {
            self.restart()?;
        }
        Ok(invocation)
    }

    /// Kills the process wherever it is (a crash, an out-of-memory kill) and starts it
    /// again; the invocation it was running ends as a `Runtime.ExitError`.
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
