//! 16 real OS processes (`fleet-worker`, with the fleet-wide policy on) open one circuit
//! together that none of them would open alone: each fails fewer times than its own
//! failure threshold, and their reports, added up in the fleet window's counter item on
//! dynalite, raise a suspicion, and their reports under it, in the suspicion's counter
//! item, meet the fleet policy.
//!
//! The downstream hangs until every worker has a call in it, then fails them all at once:
//! each worker sees its first failure at the same moment, as a quiet Lambda fleet does
//! when its downstream goes down.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use breaker_runtime::store::DynamoDbStore;
use breaker_runtime::unstable::OperatorReads as _;
use breaker_runtime::{CircuitState, FleetPolicy};
use devstack::fixtures::dynalite::Dynalite;
use devstack::harness::fleet::{Downstream, Mode, Report, Worker, WorkerConfig};
use devstack::wall_clock::unix_millis;

use crate::fleet::{FLEET, every_worker_rejecting_since, transitions};

const TABLE: &str = "fleet";
const CIRCUIT: &str = "downstream";
/// Each worker's own consecutive-failure threshold: the fleet needs a window's 10 failures
/// to suspect and 20 more under the suspicion, which 16 workers calling twice a second
/// (reporting at most once a second) make in their first three or four failures.
const LOCAL_THRESHOLD: u32 = 8;
/// A worker calls twice a second: sparse, so its own count grows slowly.
const INTERVAL_MS: u64 = 500;

fn config() -> WorkerConfig {
    let ms = Duration::from_millis;
    WorkerConfig {
        table: TABLE.into(),
        circuit: CIRCUIT.into(),
        failure_threshold: LOCAL_THRESHOLD,
        // No probe within the test: the circuit stays open once it opens.
        recovery: Duration::from_secs(60),
        cache_max_age: ms(250),
        probe_lease: ms(2_000),
        store_timeout: ms(1_000),
        store_error_backoff: ms(1_000),
        interval: ms(INTERVAL_MS),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_processes_none_of_which_would_trip_alone_open_the_circuit_together() {
    let dynalite = Dynalite::start().await.expect("dynalite starts");
    dynalite.create_circuit_table(TABLE).await.expect("table");
    let downstream = Downstream::start(Mode::Hanging).await.expect("downstream");
    let reports: Arc<Mutex<Vec<Report>>> = Arc::default();
    let mut env = dynalite.env();
    env.push(("FLEET_DETECTION", "1".into()));
    let mut workers = Vec::new();
    for index in 0..FLEET {
        let worker = Worker::spawn(
            env!("CARGO_BIN_EXE_fleet-worker"),
            index,
            &config(),
            &env,
            downstream.address(),
            Arc::clone(&reports),
        )
        .await
        .expect("worker starts");
        workers.push(worker);
    }
    // Every worker's first call is in the hanging downstream.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while (0..FLEET).any(|w| !downstream.calls().iter().any(|c| c.worker == w)) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "workers did not all call: {:?}",
            downstream.calls()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for worker in &mut workers {
        worker.reset().await.expect("reset");
    }

    let since = unix_millis();
    downstream.set_mode(Mode::Failing);
    every_worker_rejecting_since(&reports, since)
        .await
        .expect("the fleet opens the circuit");
    let opened_in = {
        let r = reports.lock().unwrap_or_else(PoisonError::into_inner);
        let (trip, _) = transitions(&r, "CLOSED", "OPEN")
            .find(|(t, _)| t.at >= since)
            .expect("a worker tripped the circuit");
        trip.at.saturating_sub(since)
    };

    let mut failed = Vec::new();
    for (w, worker) in workers.iter_mut().enumerate() {
        let stats = worker.stats().await.expect("stats");
        assert!(
            stats.failed < u64::from(LOCAL_THRESHOLD),
            "worker {w} failed {} times: its own policy could have tripped ({stats:?})",
            stats.failed
        );
        failed.push(stats.failed);
    }
    let total: u64 = failed.iter().sum();
    let fleet_threshold = FleetPolicy::default().failure_threshold();
    assert!(
        total >= u64::from(fleet_threshold),
        "{total} failures cannot meet the fleet threshold {fleet_threshold}: {failed:?}"
    );

    let store = DynamoDbStore::builder()
        .table_name(TABLE)
        .client(dynalite.client())
        .build()
        .expect("valid store");
    let circuit = store
        .inspect(CIRCUIT)
        .await
        .expect("inspect")
        .expect("the circuit's item");
    let record = circuit.record.expect("a well-formed item");
    assert_eq!(record.state, CircuitState::Open);
    let listed = crate::listed_names(&store).await;
    assert_eq!(listed, [CIRCUIT], "the counters are no circuit");

    // The counters are items of their own; the circuit's item has none of them.
    let items = dynalite
        .client()
        .scan()
        .table_name(TABLE)
        .consistent_read(true)
        .send()
        .await
        .expect("Scan")
        .items
        .unwrap_or_default();
    let number = |item: &crate::item_layout::Item, name: &str| -> u64 {
        item.get(name)
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{name} in {item:?}"))
    };
    let (circuit_items, counters): (Vec<_>, Vec<_>) = items
        .iter()
        .partition(|item| item["id"].as_s().is_ok_and(|id| id == CIRCUIT));
    assert_eq!(circuit_items.len(), 1, "{items:?}");
    assert!(
        circuit_items[0].keys().all(|k| !k.starts_with("fleet_")),
        "{:?}",
        circuit_items[0]
    );
    let (windows, epochs): (Vec<&&crate::item_layout::Item>, Vec<_>) = counters
        .iter()
        .partition(|item| item.contains_key("fleet_failures"));
    assert!(!windows.is_empty(), "no window's counter item: {items:?}");
    assert!(!epochs.is_empty(), "no suspicion's counter item: {items:?}");
    for item in &windows {
        let id = item["id"].as_s().expect("a string key");
        let window = number(item, "fleet_window");
        assert_eq!(id, &format!("{CIRCUIT}#fleet@{window}"));
    }
    let mut under_suspicion = 0;
    for item in &epochs {
        let id = item["id"].as_s().expect("a string key");
        let epoch = number(item, "fleet_window");
        assert_eq!(id, &format!("{CIRCUIT}#fleet@s{epoch}"));
        under_suspicion += (0..20)
            .filter(|slice| item.contains_key(&format!("f{slice}")))
            .map(|slice| number(item, &format!("f{slice}")))
            .sum::<u64>();
    }
    let reported: u64 = windows.iter().map(|i| number(i, "fleet_failures")).sum();
    let reporters = windows
        .iter()
        .map(|i| number(i, "fleet_reporters"))
        .max()
        .unwrap_or(0);
    assert!(
        reported >= u64::from(fleet_threshold) && reporters >= 2,
        "{counters:?}"
    );
    assert!(
        under_suspicion >= 2 * u64::from(fleet_threshold),
        "{under_suspicion} failures under the suspicion: {epochs:?}"
    );
    eprintln!(
        "figure: fleet-wide trip {opened_in} ms after the downstream failed; \
         {total} failures in 16 workers (at most {} each, own threshold {LOCAL_THRESHOLD}); \
         {reported} reported by up to {reporters} workers in {} window item(s), \
         {under_suspicion} under the suspicion",
        failed.iter().max().unwrap_or(&0),
        windows.len()
    );
}
