//! A fleet of 16 real OS processes (`fleet-worker`, each its own execution environment)
//! shares one circuit through `DynamoDbStore` on dynalite. One test, in phases, on one
//! fleet: healthy traffic, trip, ≥ 20 recovery windows, recovery, SIGKILL of the prober,
//! a DynamoDB outage and the fleet converging after it.
//!
//! Worker 0 trips after 3 failures; the others never trip on their own (their threshold is
//! out of reach), so they can only learn that the circuit opened through the store. The
//! fleet-wide policy is out of every worker's reach too: `fleet-worker` runs with
//! `fleet_detection(false)` unless told otherwise, which this test never does (the fleet
//! opening together is `fleet_policy.rs`).
//! Figures measured along the way are printed (run with `--no-capture`).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use devstack::fixtures::dynalite::Dynalite;
use devstack::harness::fleet::{
    Downstream, Event, Mode, Report, Stats, Worker, WorkerConfig, wait_for,
};
use devstack::wall_clock::unix_millis;

pub(crate) const FLEET: usize = 16;
const CACHE_MS: u64 = 250;
const RECOVERY_MS: u64 = 1_000;
const LEASE_MS: u64 = 2_000;
const STORE_TIMEOUT_MS: u64 = 1_000;
const BACKOFF_MS: u64 = 1_000;
const HEALTHY_CALLS: u64 = 10_000;
const WINDOWS: usize = 20;

struct Harness {
    dynalite: Dynalite,
    downstream: Downstream,
    workers: Vec<Worker>,
    /// When each worker index was last (re)spawned, unix ms.
    spawned: Vec<u64>,
    reports: Arc<Mutex<Vec<Report>>>,
}

fn config(index: usize) -> WorkerConfig {
    let ms = Duration::from_millis;
    WorkerConfig {
        table: "fleet".into(),
        circuit: "downstream".into(),
        failure_threshold: if index == 0 { 3 } else { 1_000_000 },
        recovery: ms(RECOVERY_MS),
        cache_max_age: ms(CACHE_MS),
        probe_lease: ms(LEASE_MS),
        store_timeout: ms(STORE_TIMEOUT_MS),
        store_error_backoff: ms(BACKOFF_MS),
        interval: ms(2),
    }
}

impl Harness {
    async fn start() -> anyhow::Result<Self> {
        let dynalite = Dynalite::start().await?;
        dynalite.create_circuit_table("fleet").await?;
        let downstream = Downstream::start(Mode::Healthy).await?;
        let reports = Arc::new(Mutex::new(Vec::new()));
        let mut harness = Self {
            dynalite,
            downstream,
            workers: Vec::new(),
            spawned: Vec::new(),
            reports,
        };
        for index in 0..FLEET {
            harness.spawned.push(unix_millis());
            let worker = harness.spawn(index).await?;
            harness.workers.push(worker);
        }
        Ok(harness)
    }

    async fn spawn(&self, index: usize) -> anyhow::Result<Worker> {
        Worker::spawn(
            env!("CARGO_BIN_EXE_fleet-worker"),
            index,
            &config(index),
            &self.dynalite.env(),
            self.downstream.address(),
            Arc::clone(&self.reports),
        )
        .await
    }

    fn reports(&self) -> Vec<Report> {
        self.reports
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    async fn stats(&mut self) -> Vec<Stats> {
        let mut all = Vec::new();
        for worker in &mut self.workers {
            all.push(worker.stats().await.expect("stats"));
        }
        all
    }

    async fn reset(&mut self) {
        for worker in &mut self.workers {
            worker.reset().await.expect("reset");
        }
    }
}

pub(crate) fn transitions<'a>(
    reports: &'a [Report],
    from: &'a str,
    to: &'a str,
) -> impl Iterator<Item = (&'a Report, u64)> + 'a {
    reports.iter().filter_map(move |r| match &r.event {
        Event::Transition {
            from: f,
            to: t,
            opened_at,
        } if f == from && t == to => Some((r, *opened_at)),
        _ => None,
    })
}

/// The first time each worker reported `event` after `since`, if it did.
/// Waits (20 s at most) until every worker has reported rejecting a call since `since`.
pub(crate) async fn every_worker_rejecting_since(
    reports: &Mutex<Vec<Report>>,
    since: u64,
) -> anyhow::Result<()> {
    wait_for(
        reports,
        Duration::from_secs(20),
        "every worker rejecting",
        |r| {
            first_after(r, &Event::Rejecting, since)
                .iter()
                .all(Option::is_some)
        },
    )
    .await
}

pub(crate) fn first_after(reports: &[Report], event: &Event, since: u64) -> Vec<Option<u64>> {
    (0..FLEET)
        .map(|w| {
            reports
                .iter()
                .find(|r| r.worker == w && r.at >= since && &r.event == event)
                .map(|r| r.at)
        })
        .collect()
}

/// Each worker's latest report, for failure messages.
fn latest(reports: &[Report]) -> String {
    (0..FLEET)
        .map(|w| {
            format!(
                "\n  {w}: {:?}",
                reports.iter().rev().find(|r| r.worker == w)
            )
        })
        .collect()
}

/// Whether every worker admits calls: its latest reject/admit report since it was spawned
/// (`spawned[w]`) is an admit, or it has none (a process starts admitting).
fn all_admitting(reports: &[Report], spawned: &[u64]) -> bool {
    (0..FLEET).all(|w| {
        reports
            .iter()
            .rev()
            .find(|r| {
                r.worker == w
                    && r.at >= spawned[w]
                    && matches!(r.event, Event::Rejecting | Event::Admitting)
            })
            .is_none_or(|r| r.event == Event::Admitting)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_of_16_processes_shares_one_circuit() {
    let mut h = Harness::start().await.expect("fleet starts");

    healthy_calls_write_nothing_and_read_once_per_cache_age(&mut h).await;
    let trip_at = one_trip_reaches_every_process(&mut h, "first trip").await;
    exactly_one_probe_per_recovery_window(&mut h, trip_at).await;
    a_successful_probe_closes_the_circuit_everywhere(&mut h).await;
    a_killed_prober_is_taken_over_after_its_lease(&mut h).await;
    calls_keep_running_through_a_store_outage(&mut h).await;
    the_fleet_converges_after_the_store_returns(&mut h).await;
}

async fn healthy_calls_write_nothing_and_read_once_per_cache_age(h: &mut Harness) {
    h.reset().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let stats = loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let stats = h.stats().await;
        let calls: u64 = stats.iter().map(|s| s.calls).sum();
        if calls >= HEALTHY_CALLS || tokio::time::Instant::now() > deadline {
            break stats;
        }
    };
    let calls: u64 = stats.iter().map(|s| s.calls).sum();
    assert!(calls >= HEALTHY_CALLS, "only {calls} healthy calls in 60 s");
    for (w, s) in stats.iter().enumerate() {
        assert_eq!(s.writes, 0, "worker {w} wrote while healthy: {s:?}");
        assert_eq!(s.ok, s.calls, "worker {w}: {s:?}");
        let allowed = s.elapsed_ms / CACHE_MS + 1;
        assert!(
            s.reads <= allowed,
            "worker {w}: {} reads in {} ms (max {allowed})",
            s.reads,
            s.elapsed_ms
        );
    }
    let reads: u64 = stats.iter().map(|s| s.reads).sum();
    eprintln!(
        "figure: healthy fleet: {calls} calls, 0 writes, {reads} reads ({:.2} store requests per 1,000 calls)",
        reads as f64 * 1000.0 / calls as f64
    );
}

/// Worker 0 trips; returns when (unix ms). Every worker must reject within
/// `local_cache_max_age + 1 s` of it.
async fn one_trip_reaches_every_process(h: &mut Harness, phase: &str) -> u64 {
    let since = unix_millis();
    h.downstream.set_mode(Mode::Failing);
    every_worker_rejecting_since(&h.reports, since)
        .await
        .expect(phase);
    let reports = h.reports();
    let (trip, _) = transitions(&reports, "CLOSED", "OPEN")
        .find(|(r, _)| r.at >= since && r.worker == 0)
        .expect("worker 0 tripped");
    let rejecting = first_after(&reports, &Event::Rejecting, since);
    let slowest = rejecting
        .iter()
        .map(|t| t.expect("rejecting"))
        .max()
        .expect("workers");
    let lag = slowest.saturating_sub(trip.at);
    eprintln!(
        "figure: {phase}: trip to fleet-wide rejection in {lag} ms (bound {} ms)",
        CACHE_MS + 1000
    );
    assert!(
        lag <= CACHE_MS + 1000,
        "{phase}: {rejecting:?} after trip at {}",
        trip.at
    );
    trip.at
}

async fn exactly_one_probe_per_recovery_window(h: &mut Harness, trip_at: u64) {
    h.reset().await;
    let start = unix_millis().max(trip_at);
    // Elections after every process rejects: one window each.
    let windows_after = |r: &[Report]| {
        transitions(r, "OPEN", "HALF_OPEN")
            .filter(|(e, _)| e.at > start)
            .count()
    };
    wait_for(
        &h.reports,
        Duration::from_secs(60),
        "recovery windows",
        |r| windows_after(r) > WINDOWS,
    )
    .await
    .expect("windows keep coming");
    let reports = h.reports();
    let calls = h.downstream.calls();

    let mut elections: Vec<(&Report, u64)> = transitions(&reports, "OPEN", "HALF_OPEN").collect();
    elections.sort_by_key(|(e, _)| e.at);
    let mut opened: Vec<u64> = elections.iter().map(|(_, o)| *o).collect();
    opened.sort_unstable();
    let before = opened.len();
    opened.dedup();
    assert_eq!(
        opened.len(),
        before,
        "two elections won for one opening: {elections:?}"
    );

    let windows: Vec<_> = elections.iter().filter(|(e, _)| e.at > start).collect();
    for pair in windows.windows(2) {
        let ((this, opened_at), (next, _)) = (pair[0], pair[1]);
        let probes: Vec<_> = calls
            .iter()
            .filter(|c| c.at >= this.at && c.at < next.at)
            .collect();
        assert_eq!(
            probes.len(),
            1,
            "window opened at {opened_at}: downstream calls {probes:?}"
        );
        assert_eq!(
            probes[0].worker, this.worker,
            "the probe comes from the elected worker"
        );
        // The failed probe reopened the circuit, so the next window starts later.
        let reopened = transitions(&reports, "HALF_OPEN", "OPEN")
            .any(|(r, _)| r.worker == this.worker && r.at >= this.at && r.at <= next.at);
        assert!(
            reopened,
            "window opened at {opened_at} was not reopened by its prober"
        );
    }
    let stats = h.stats().await;
    for (w, s) in stats.iter().enumerate() {
        let allowed = s.elapsed_ms / CACHE_MS + 1;
        assert!(
            s.reads <= allowed,
            "worker {w}: {} reads in {} ms while open (max {allowed})",
            s.reads,
            s.elapsed_ms
        );
    }
    let (calls, reads, writes) = stats.iter().fold((0, 0, 0), |(c, r, w), s| {
        (c + s.calls, r + s.reads, w + s.writes)
    });
    eprintln!(
        "figure: tripped fleet: {calls} calls, {reads} reads, {writes} writes ({:.2} store requests per 1,000 calls)",
        (reads + writes) as f64 * 1000.0 / calls as f64
    );
    let probers: std::collections::BTreeSet<usize> =
        windows.iter().map(|(e, _)| e.worker).collect();
    eprintln!(
        "figure: {} recovery windows, one probe each, probed by {} different processes",
        windows.len() - 1,
        probers.len()
    );
    assert!(windows.len() > WINDOWS);
}

async fn a_successful_probe_closes_the_circuit_everywhere(h: &mut Harness) {
    let since = unix_millis();
    let spawned = h.spawned.clone();
    h.downstream.set_mode(Mode::Healthy);
    wait_for(
        &h.reports,
        Duration::from_secs(20),
        "every worker admitting",
        |r| {
            transitions(r, "HALF_OPEN", "CLOSED").any(|(c, _)| c.at >= since)
                && all_admitting(r, &spawned)
        },
    )
    .await
    .expect("the circuit closes");
    let reports = h.reports();
    let (closed, _) = transitions(&reports, "HALF_OPEN", "CLOSED")
        .find(|(c, _)| c.at >= since)
        .expect("closed");
    let admitting = first_after(&reports, &Event::Admitting, closed.at);
    let slowest = admitting
        .iter()
        .flatten()
        .max()
        .copied()
        .unwrap_or(closed.at);
    let lag = slowest - closed.at;
    eprintln!("figure: close to fleet-wide admission in {lag} ms");
    assert!(
        lag <= CACHE_MS + 1000,
        "{admitting:?} after close at {}",
        closed.at
    );
}

async fn a_killed_prober_is_taken_over_after_its_lease(h: &mut Harness) {
    one_trip_reaches_every_process(h, "trip before the kill").await;
    let since = unix_millis();
    h.downstream.set_mode(Mode::Hanging);
    // The next prober's call hangs at the downstream.
    wait_for(&h.reports, Duration::from_secs(10), "a probe", |r| {
        transitions(r, "OPEN", "HALF_OPEN").any(|(e, _)| e.at >= since)
    })
    .await
    .expect("an election");
    let reports = h.reports();
    let (election, _) = transitions(&reports, "OPEN", "HALF_OPEN")
        .find(|(e, _)| e.at >= since)
        .expect("election");
    let prober = election.worker;
    let hanging = loop {
        if let Some(call) = h
            .downstream
            .calls()
            .into_iter()
            .find(|c| c.worker == prober && c.at >= election.at)
        {
            break call;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    h.workers[prober].kill().await.expect("SIGKILL");
    h.downstream.set_mode(Mode::Healthy);

    wait_for(
        &h.reports,
        Duration::from_secs(20),
        "a takeover that closes",
        |r| {
            transitions(r, "HALF_OPEN", "CLOSED")
                .any(|(c, _)| c.at > hanging.at && c.worker != prober)
        },
    )
    .await
    .expect("another process takes over and closes");
    let calls = h.downstream.calls();
    let takeover = calls
        .iter()
        .find(|c| c.at > hanging.at && c.worker != prober)
        .expect("the takeover probe");
    let waited = takeover.at - election.at;
    eprintln!(
        "figure: prober {prober} killed mid-probe; worker {} took over {waited} ms after the election (lease {LEASE_MS} ms)",
        takeover.worker
    );
    assert!(
        waited > LEASE_MS,
        "took over before the lease expired: {waited} ms"
    );

    // A new environment replaces the killed one, so the fleet stays at 16.
    h.spawned[prober] = unix_millis();
    h.workers[prober] = h.spawn(prober).await.expect("replacement worker");
    let spawned = h.spawned.clone();
    wait_for(
        &h.reports,
        Duration::from_secs(20),
        "every worker admitting",
        |r| all_admitting(r, &spawned),
    )
    .await
    .unwrap_or_else(|e| panic!("the fleet admits again: {e}: {}", latest(&h.reports())));
}

async fn calls_keep_running_through_a_store_outage(h: &mut Harness) {
    // Let the replacement read the closed record first.
    tokio::time::sleep(Duration::from_millis(CACHE_MS * 2)).await;
    h.reset().await;
    h.dynalite.stop();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let stats = h.stats().await;
    let worst = stats.iter().map(|s| s.max_overhead_us).max().unwrap_or(0);
    for (w, s) in stats.iter().enumerate() {
        assert!(s.calls >= 50, "worker {w} stalled during the outage: {s:?}");
        assert_eq!(
            s.ok, s.calls,
            "worker {w}: every call ran and succeeded: {s:?}"
        );
        assert!(
            s.max_overhead_us <= STORE_TIMEOUT_MS * 1000,
            "worker {w} added {} µs to a call (store timeout {STORE_TIMEOUT_MS} ms)",
            s.max_overhead_us
        );
    }
    eprintln!(
        "figure: DynamoDB down for 3 s: worst added latency per call {} ms (store timeout {STORE_TIMEOUT_MS} ms)",
        worst / 1000
    );
}

async fn the_fleet_converges_after_the_store_returns(h: &mut Harness) {
    h.dynalite.restart().await.expect("dynalite restarts");
    // Every worker's back-off ends and its cache expires; then it reads the store again.
    tokio::time::sleep(Duration::from_millis(BACKOFF_MS + CACHE_MS + 500)).await;
    one_trip_reaches_every_process(h, "trip after the outage").await;
    a_successful_probe_closes_the_circuit_everywhere(h).await;
}
