//! A loopback Lambda Runtime API (`/2018-06-01/runtime/invocation/next`, `/response`,
//! `/error`, `/init/error`) on a free port, for one function: it queues invocations, hands
//! each to the function when it polls, with a deadline (`Lambda-Runtime-Deadline-Ms`) the
//! function's timeout after that ([`RuntimeApi::set_timeout`], default 60 s), and tells the
//! caller how the invocation ended. One that runs past its deadline ends as a
//! `Sandbox.Timedout` error; restarting the process is its supervisor's job
//! (`FunctionProcess` in the harness's `function_process`).
//!
//! Concurrent polls are served as Lambda Managed Instances serve them: a runtime that polls
//! `/next` from several connections at once (lambda_runtime's `run_concurrent` under
//! `AWS_LAMBDA_MAX_CONCURRENCY`) gets an invocation on each, every one with its own
//! deadline, and each ends by its own request id: an answer, or its deadline, which times
//! out that invocation alone.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::fixtures::http1::{self, Unframed};
use crate::sync::lock;
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
    /// The invocations the function took and has not answered, their deadline not passed.
    in_flight: Mutex<HashSet<String>>,
    /// The most invocations in flight at once so far.
    peak_in_flight: AtomicU64,
}

impl Shared {
    fn timeout(&self) -> Duration {
        match self.timeout_ms.load(Ordering::Relaxed) {
            0 => DEFAULT_TIMEOUT,
            ms => Duration::from_millis(ms),
        }
    }

    /// The function took `request_id`.
    fn take(&self, request_id: &str) {
        let mut in_flight = lock(&self.in_flight);
        in_flight.insert(request_id.to_owned());
        self.peak_in_flight
            .fetch_max(in_flight.len() as u64, Ordering::Relaxed);
    }

    /// Ends `request_id` with `invocation`, if it is still waiting for its end.
    fn end(&self, request_id: &str, invocation: Invocation) {
        lock(&self.in_flight).remove(request_id);
        if let Some(done) = lock(&self.waiting).remove(request_id) {
            let _ = done.send(invocation);
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
    /// answer is a [`TIMED_OUT`] error (the caller restarts the function, or, for one that
    /// runs invocations at once, lets it run on). Call it from several tasks at once for
    /// invocations at once.
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
        let forget = || {
            lock(&self.shared.waiting).remove(&request_id);
            lock(&self.shared.in_flight).remove(&request_id);
        };
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

    /// Ends every invocation the function is running, if any, with `error_type`: what
    /// Lambda answers when the runtime process dies mid-invocation.
    pub fn abort_in_flight(&self, error_type: &str, error_message: &str) {
        let running: Vec<String> = lock(&self.shared.in_flight).drain().collect();
        for request_id in running {
            self.shared.end(
                &request_id,
                Invocation::Error {
                    error_type: error_type.into(),
                    error_message: error_message.into(),
                },
            );
        }
    }

    /// How many invocations the function runs now: taken, neither answered nor past their
    /// deadline.
    pub fn in_flight(&self) -> usize {
        lock(&self.shared.in_flight).len()
    }

    /// The most invocations the function ran at once so far.
    pub fn peak_in_flight(&self) -> usize {
        usize::try_from(self.shared.peak_in_flight.load(Ordering::Relaxed)).unwrap_or(usize::MAX)
    }

    /// When the function first asked for an invocation: the end of its init.
    pub fn first_poll(&self) -> Option<Instant> {
        self.shared.first_poll.get().copied()
    }
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
            // A poll waits for the next invocation, or for its connection to close (a
            // process killed while several of its workers poll): a closed one takes none.
            let next = async { queue.lock().await.recv().await };
            tokio::pin!(next);
            let pending = tokio::select! {
                pending = &mut next => pending,
                read = reader.fill_buf() => match read {
                    // A request sent before this one's answer: served after it.
                    Ok(bytes) if !bytes.is_empty() => next.await,
                    _ => None,
                },
            };
            let Some(pending) = pending else {
                return Ok(());
            };
            let timeout = shared.timeout();
            // Its invoker still waits (it gives up after START_TIMEOUT): in flight from now.
            if pending.started.send(Instant::now() + timeout).is_ok() {
                shared.take(&pending.request_id);
            }
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
            shared.end(request_id, invocation);
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
