//! One execution environment of a test fleet (see `devstack::harness::fleet`): calls a
//! loopback downstream through a `CircuitBreaker` on the default store
//! (`CIRCUIT_BREAKER_TABLE`: a `DynamoDbStore` from the standard AWS environment), in a loop,
//! and reports on stdout. Commands on stdin: `stats`, `reset`. Exits when stdin closes.
//!
//! The fleet-wide failure policy is off unless `FLEET_DETECTION=1`: a fleet whose workers
//! must learn of a trip only through the store keeps it out of their reach.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, RecoveryBackoff};
use devstack::circuits::{BoxError as Error, is_rejection};
use devstack::doubles::{Behaviour, ScriptedStore};
use devstack::wall_clock::unix_millis;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpStream;

/// Counters since the last `reset`.
#[derive(Debug, Default)]
struct Counters {
    calls: AtomicU64,
    ok: AtomicU64,
    failed: AtomicU64,
    rejected: AtomicU64,
    max_overhead_us: AtomicU64,
}

fn var(name: &str) -> anyhow::Result<String> {
    std::env::var(name).with_context(|| format!("{name} is not set"))
}

fn millis(name: &str) -> anyhow::Result<Duration> {
    Ok(Duration::from_millis(var(name)?.parse()?))
}

/// One connection to the downstream; a call is one line out, one line back.
struct Downstream {
    index: usize,
    lines: tokio::io::Lines<BufReader<tokio::net::tcp::OwnedReadHalf>>,
    write: tokio::net::tcp::OwnedWriteHalf,
}

impl Downstream {
    async fn call(&mut self) -> Result<(), Error> {
        self.write
            .write_all(format!("call {}\n", self.index).as_bytes())
            .await?;
        match self.lines.next_line().await?.as_deref() {
            Some("ok") => Ok(()),
            other => Err(format!("downstream answered {other:?}").into()),
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let index: usize = var("FLEET_WORKER_INDEX")?.parse()?;
    // The process default store: CIRCUIT_BREAKER_TABLE selects a DynamoDbStore whose
    // client comes from the standard AWS environment (AWS_ENDPOINT_URL_DYNAMODB points at
    // dynalite), as in Lambda. Wrapped to count its reads and writes.
    let default_store = breaker_runtime::default_store();
    anyhow::ensure!(
        format!("{default_store:?}").starts_with("DynamoDbStore"),
        "CIRCUIT_BREAKER_TABLE did not select a DynamoDbStore"
    );
    // Fleet reports go to the table itself, uncounted with the circuit's own traffic.
    let store = Arc::new(
        ScriptedStore::wrapping(Arc::clone(&default_store), Behaviour::Healthy)
            .reporting_to(default_store),
    );
    let fleet_detection = std::env::var("FLEET_DETECTION").is_ok_and(|v| v == "1");
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(var("FLEET_FAILURE_THRESHOLD")?.parse()?)
        .success_threshold(1)
        .recovery_timeout(millis("FLEET_RECOVERY_MS")?)
        // The fleet test counts recovery windows of a fixed length.
        .recovery_backoff(RecoveryBackoff::none())
        .local_cache_max_age(millis("FLEET_CACHE_MS")?)
        .probe_lease(millis("FLEET_LEASE_MS")?)
        .store_timeout(millis("FLEET_STORE_TIMEOUT_MS")?)
        .store_error_backoff(millis("FLEET_BACKOFF_MS")?)
        .fleet_detection(fleet_detection)
        .build()?;
    let interval = millis("FLEET_INTERVAL_MS")?;
    let breaker = CircuitBreaker::new(var("FLEET_CIRCUIT")?, store.clone(), config)
        .with_on_transition(|t| {
            let opened_at = t.opened_at_unix_secs.unwrap_or(0);
            println!(
                "transition {} {} {opened_at} {}",
                t.from_state,
                t.to_state,
                unix_millis()
            );
        });
    let stream = TcpStream::connect(var("FLEET_DOWNSTREAM")?).await?;
    stream.set_nodelay(true)?;
    let (read, write) = stream.into_split();
    let mut downstream = Downstream {
        index,
        lines: BufReader::new(read).lines(),
        write,
    };

    let counters = Arc::new(Counters::default());
    let since = Arc::new(std::sync::Mutex::new(Instant::now()));
    let rejecting = AtomicBool::new(false);
    let (store_, counters_, since_) = (store.clone(), counters.clone(), since.clone());
    std::thread::spawn(move || commands(&store_, &counters_, &since_));
    println!("ready");

    loop {
        let started = Instant::now();
        let mut downstream_time = Duration::ZERO;
        let spent = &mut downstream_time;
        let calling = &mut downstream;
        let result: Result<(), Error> = breaker
            .call(move || async move {
                let t = Instant::now();
                let result = calling.call().await;
                *spent = t.elapsed();
                result
            })
            .await;
        let overhead = started.elapsed().saturating_sub(downstream_time);
        counters
            .max_overhead_us
            .fetch_max(overhead.as_micros() as u64, Ordering::Relaxed);
        counters.calls.fetch_add(1, Ordering::Relaxed);
        let rejected = is_rejection(&result);
        let counter = match (&result, rejected) {
            (_, true) => &counters.rejected,
            (Ok(()), _) => &counters.ok,
            (Err(_), _) => &counters.failed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if rejecting.swap(rejected, Ordering::Relaxed) != rejected {
            let what = if rejected { "reject" } else { "admit" };
            println!("{what} {}", unix_millis());
        }
        tokio::time::sleep(interval).await;
    }
}

/// Serves `stats` and `reset`; exits the process when stdin closes (the test is gone).
fn commands(store: &ScriptedStore, counters: &Counters, since: &std::sync::Mutex<Instant>) {
    for line in std::io::stdin().lines() {
        let Ok(line) = line else { break };
        let since_reset =
            |s: &std::sync::Mutex<Instant>| s.lock().map(|t| t.elapsed()).unwrap_or_default();
        match line.trim() {
            "reset" => {
                for counter in [
                    &counters.calls,
                    &counters.ok,
                    &counters.failed,
                    &counters.rejected,
                    &counters.max_overhead_us,
                ] {
                    counter.store(0, Ordering::Relaxed);
                }
                store.reset_counts();
                if let Ok(mut t) = since.lock() {
                    *t = Instant::now();
                }
            }
            "stats" => println!(
                "stats calls={} ok={} failed={} rejected={} reads={} writes={} elapsed_ms={} max_overhead_us={}",
                counters.calls.load(Ordering::Relaxed),
                counters.ok.load(Ordering::Relaxed),
                counters.failed.load(Ordering::Relaxed),
                counters.rejected.load(Ordering::Relaxed),
                store.reads(),
                store.writes(),
                since_reset(since).as_millis(),
                counters.max_overhead_us.load(Ordering::Relaxed),
            ),
            _ => {}
        }
    }
    std::process::exit(0);
}
