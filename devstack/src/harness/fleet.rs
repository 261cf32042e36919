//! A fleet of real OS processes sharing one circuit through DynamoDB, and the downstream
//! they protect.
//!
//! Each [`Worker`] is a `fleet-worker` process (its own execution environment id) that
//! calls the [`Downstream`] stub through a `CircuitBreaker` on a `DynamoDbStore`, in a
//! loop, and reports on stdout: the transitions it commits, when it starts and stops
//! rejecting, and on request its counters (calls, store reads and writes, the largest
//! overhead the breaker added to a call). The stub counts every call that reaches it: while
//! the circuit is open, those are the probes.
//!
//! Worker processes are killed when their [`Worker`] is dropped, and exit by themselves
//! when the test process goes away (their stdin closes).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context as _, bail};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpListener;
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, watch};

use crate::wall_clock::unix_millis;

/// How the downstream answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every call succeeds.
    Healthy,
    /// Every call fails.
    Failing,
    /// Calls get no answer until the mode changes (a probe stuck mid-call).
    Hanging,
}

/// One call that reached the downstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// The worker that made it.
    pub worker: usize,
    /// When it arrived (unix ms).
    pub at: u64,
}

/// A loopback TCP downstream: one line `call <worker>` per call, answered `ok` or `err`.
#[derive(Debug)]
pub struct Downstream {
    address: SocketAddr,
    mode: watch::Sender<Mode>,
    calls: Arc<Mutex<Vec<Call>>>,
    server: tokio::task::JoinHandle<()>,
}

impl Downstream {
    /// Listens on a free loopback port.
    pub async fn start(mode: Mode) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let (mode, mode_rx) = watch::channel(mode);
        let calls = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&calls);
        let server = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve(stream, mode_rx.clone(), Arc::clone(&log)));
            }
        });
        Ok(Self {
            address,
            mode,
            calls,
            server,
        })
    }

    /// Where workers connect.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Changes how every later (and every hanging) call is answered.
    pub fn set_mode(&self, mode: Mode) {
        self.mode.send_replace(mode);
    }

    /// Every call so far, in arrival order.
    pub fn calls(&self) -> Vec<Call> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for Downstream {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn serve(
    stream: tokio::net::TcpStream,
    mut mode: watch::Receiver<Mode>,
    calls: Arc<Mutex<Vec<Call>>>,
) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let worker = line
            .strip_prefix("call ")
            .and_then(|w| w.trim().parse().ok())
            .unwrap_or(usize::MAX);
        calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Call {
                worker,
                at: unix_millis(),
            });
        let answer = loop {
            match *mode.borrow_and_update() {
                Mode::Healthy => break "ok\n",
                Mode::Failing => break "err\n",
                Mode::Hanging => {}
            }
            if mode.changed().await.is_err() {
                return;
            }
        };
        if write.write_all(answer.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// The settings of one worker process (passed as environment variables).
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// DynamoDB table.
    pub table: String,
    /// Circuit name.
    pub circuit: String,
    /// Consecutive failures before this worker trips.
    pub failure_threshold: u32,
    /// Recovery timeout.
    pub recovery: Duration,
    /// `local_cache_max_age`.
    pub cache_max_age: Duration,
    /// Probe lease.
    pub probe_lease: Duration,
    /// Store timeout.
    pub store_timeout: Duration,
    /// Back-off after a store error.
    pub store_error_backoff: Duration,
    /// Pause between two calls.
    pub interval: Duration,
}

/// Counters a worker reports on request, since its last reset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Calls attempted.
    pub calls: u64,
    /// Calls that ran and succeeded.
    pub ok: u64,
    /// Calls that ran and failed.
    pub failed: u64,
    /// Calls rejected by the open circuit.
    pub rejected: u64,
    /// Store reads.
    pub reads: u64,
    /// Store writes.
    pub writes: u64,
    /// Milliseconds since the reset.
    pub elapsed_ms: u64,
    /// The largest time the breaker added to one call (total minus the downstream call).
    pub max_overhead_us: u64,
}

impl Stats {
    fn parse(line: &str) -> anyhow::Result<Self> {
        let fields: HashMap<&str, u64> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| Ok((k, v.parse()?)))
            .collect::<anyhow::Result<_>>()?;
        let get = |k: &str| fields.get(k).copied().context(format!("stats without {k}"));
        Ok(Self {
            calls: get("calls")?,
            ok: get("ok")?,
            failed: get("failed")?,
            rejected: get("rejected")?,
            reads: get("reads")?,
            writes: get("writes")?,
            elapsed_ms: get("elapsed_ms")?,
            max_overhead_us: get("max_overhead_us")?,
        })
    }
}

/// What a worker reported, with the worker's own timestamp (unix ms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// It committed a transition (`from`, `to`, the record's `opened_at`).
    Transition {
        /// State before.
        from: String,
        /// State after.
        to: String,
        /// `opened_at` after the transition (0 when none).
        opened_at: u64,
    },
    /// A call was rejected after calls had been running.
    Rejecting,
    /// A call ran after calls had been rejected.
    Admitting,
}

/// One reported event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Which worker.
    pub worker: usize,
    /// When (unix ms, the worker's clock).
    pub at: u64,
    /// What.
    pub event: Event,
}

/// A running `fleet-worker` process.
#[derive(Debug)]
pub struct Worker {
    index: usize,
    child: Child,
    stdin: ChildStdin,
    stats: mpsc::UnboundedReceiver<Stats>,
}

impl Worker {
    /// Starts worker `index` of `config`, talking to `downstream` and to the DynamoDB at
    /// the end of `env` (see `Dynalite::env`).
    pub async fn spawn(
        binary: &str,
        index: usize,
        config: &WorkerConfig,
        env: &[(&'static str, String)],
        downstream: SocketAddr,
        reports: Arc<Mutex<Vec<Report>>>,
    ) -> anyhow::Result<Self> {
        let millis = |d: Duration| d.as_millis().to_string();
        let mut child = Command::new(binary)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .env("FLEET_WORKER_INDEX", index.to_string())
            .env("CIRCUIT_BREAKER_TABLE", &config.table)
            .env("FLEET_CIRCUIT", &config.circuit)
            .env("FLEET_DOWNSTREAM", downstream.to_string())
            .env(
                "FLEET_FAILURE_THRESHOLD",
                config.failure_threshold.to_string(),
            )
            .env("FLEET_RECOVERY_MS", millis(config.recovery))
            .env("FLEET_CACHE_MS", millis(config.cache_max_age))
            .env("FLEET_LEASE_MS", millis(config.probe_lease))
            .env("FLEET_STORE_TIMEOUT_MS", millis(config.store_timeout))
            .env("FLEET_BACKOFF_MS", millis(config.store_error_backoff))
            .env("FLEET_INTERVAL_MS", millis(config.interval))
            .env("RUST_LOG", "off")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("spawning fleet-worker")?;
        let stdin = child.stdin.take().context("worker stdin")?;
        let stdout = child.stdout.take().context("worker stdout")?;
        let (stats_tx, stats) = mpsc::unbounded_channel();
        let (ready_tx, ready) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let mut ready_tx = Some(ready_tx);
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if line == "ready" {
                    if let Some(tx) = ready_tx.take() {
                        let _ = tx.send(());
                    }
                } else if line.starts_with("stats ") {
                    if let Ok(stats) = Stats::parse(&line) {
                        let _ = stats_tx.send(stats);
                    }
                } else if let Some(report) = parse_report(index, &line) {
                    reports
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(report);
                }
            }
        });
        tokio::time::timeout(Duration::from_secs(30), ready)
            .await
            .context("worker not ready within 30 s")?
            .context("worker exited before it was ready")?;
        Ok(Self {
            index,
            child,
            stdin,
            stats,
        })
    }

    /// The worker's index.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Sends one command line (`stats`, `reset`).
    async fn command(&mut self, command: &str) -> anyhow::Result<()> {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .await?;
        Ok(self.stdin.flush().await?)
    }

    /// Zeroes the counters.
    pub async fn reset(&mut self) -> anyhow::Result<()> {
        self.command("reset").await
    }

    /// The counters since the last reset.
    pub async fn stats(&mut self) -> anyhow::Result<Stats> {
        self.command("stats").await?;
        tokio::time::timeout(Duration::from_secs(10), self.stats.recv())
            .await
            .context("no stats within 10 s")?
            .context("worker gone")
    }

    /// SIGKILL, as when Lambda freezes or kills an environment mid-call.
    pub async fn kill(&mut self) -> anyhow::Result<()> {
        self.child.kill().await?;
        Ok(())
    }
}

fn parse_report(worker: usize, line: &str) -> Option<Report> {
    let parts: Vec<&str> = line.split_whitespace().collect();
    let (event, at) = match parts.as_slice() {
        ["transition", from, to, opened_at, at] => (
            Event::Transition {
                from: (*from).to_owned(),
                to: (*to).to_owned(),
                opened_at: opened_at.parse().ok()?,
            },
            at,
        ),
        ["reject", at] => (Event::Rejecting, at),
        ["admit", at] => (Event::Admitting, at),
        _ => return None,
    };
    Some(Report {
        worker,
        at: at.parse().ok()?,
        event,
    })
}

/// Waits until `done` holds on the reports, polling; fails after `limit`.
pub async fn wait_for(
    reports: &Mutex<Vec<Report>>,
    limit: Duration,
    what: &str,
    mut done: impl FnMut(&[Report]) -> bool,
) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if done(&reports.lock().unwrap_or_else(PoisonError::into_inner)) {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("timed out after {limit:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
