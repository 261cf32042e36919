//! Probe admission never over-admits across processes: 16 real OS processes
//! (`probe-racer`, each its own environment with its own DynamoDB client) race on dynalite
//! for every probe of 50 half-open rounds, reading on every call, so each hand-over is
//! raced by all of them. In every round the probes never overlap, exactly
//! `success_threshold` of them close the circuit, and the fleet's count is what closed it.

use std::collections::BTreeMap;
use std::process::Stdio;

use breaker_runtime::CircuitState;
use breaker_runtime::store::{DynamoDbStore, RecordWrite, StateStore, WriteOutcome};
use devstack::fixtures::dynalite::Dynalite;
use devstack::wall_clock::unix_millis;
use tokio::process::Command;

const RACERS: usize = 16;
const ROUNDS: u64 = 50;
const ROUND_MS: u64 = 500;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_processes_racing_for_every_probe_never_run_two_at_once() {
    let dynalite = Dynalite::start().await.expect("dynalite starts");
    dynalite.create_circuit_table("race").await.expect("table");
    let store = DynamoDbStore::builder()
        .table_name("race")
        .client(dynalite.client())
        .build()
        .expect("valid store");
    // Every round's circuit opened a minute ago by an environment that is gone.
    let opened_at = unix_millis() / 1000 - 60;
    for round in 0..ROUNDS {
        let trip = RecordWrite::Trip {
            opened_by: None,
            failure_count: 5,
            opened_at,
            expiration: opened_at + 3630,
            open_until: None,
        };
        let tripped = store.apply(&format!("race-{round}"), &trip).await;
        assert_eq!(tripped, Ok(WriteOutcome::Won), "round {round}");
    }
    let start_ms = unix_millis() + 3_000;
    let racers: Vec<_> = (0..RACERS)
        .map(|index| {
            Command::new(env!("CARGO_BIN_EXE_probe-racer"))
                .envs(dynalite.env())
                .env("CIRCUIT_BREAKER_TABLE", "race")
                .env("RACER_INDEX", index.to_string())
                .env("RACER_ROUNDS", ROUNDS.to_string())
                .env("RACER_START_MS", start_ms.to_string())
                .env("RACER_ROUND_MS", ROUND_MS.to_string())
                .env("RUST_LOG", "off")
                .stdout(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .expect("probe-racer starts")
        })
        .collect();
    let mut probes: BTreeMap<u64, Vec<(u128, u128, String)>> = BTreeMap::new();
    for racer in racers {
        let output = racer.wait_with_output().await.expect("racer ends");
        assert!(output.status.success(), "a racer failed: {output:?}");
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [_, round, start, end, racer] = fields[..] else {
                panic!("unexpected line {line:?}");
            };
            let parse = |x: &str| x.parse::<u128>().expect("a number");
            probes.entry(parse(round) as u64).or_default().push((
                parse(start),
                parse(end),
                racer.to_owned(),
            ));
        }
    }
    let mut handed_over = 0;
    for round in 0..ROUNDS {
        let record = store
            .read_consistent(&format!("race-{round}"))
            .await
            .expect("read")
            .expect("an item");
        assert_eq!(record.state, CircuitState::Closed, "round {round} closed");
        let mut intervals = probes.remove(&round).unwrap_or_default();
        assert_eq!(
            intervals.len(),
            3,
            "round {round}: exactly the three probes that close: {intervals:?}"
        );
        intervals.sort_unstable();
        for pair in intervals.windows(2) {
            assert!(
                pair[0].1 <= pair[1].0,
                "round {round}: two probes in flight at once: {intervals:?}"
            );
        }
        let probers: std::collections::BTreeSet<_> = intervals.iter().map(|p| &p.2).collect();
        handed_over += usize::from(probers.len() > 1);
    }
    // The races were real: in most rounds the probe passed between processes.
    assert!(
        handed_over * 2 >= ROUNDS as usize,
        "only {handed_over} of {ROUNDS} rounds had probes from more than one process"
    );
}
