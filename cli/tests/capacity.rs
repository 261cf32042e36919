//! `breaker capacity` against the fleet simulator (`breaker-sim`, real breakers on a
//! virtual clock, DynamoDB's units): the reads it predicts for a healthy fleet and the
//! reads and writes while the circuit stays open are the ones the simulated fleet makes,
//! within a stated tolerance, on a reduced fleet so the runs take seconds.

use breaker_runtime::RecoveryBackoff;
use breaker_sim::downstream::{Health, HealthSchedule};
use breaker_sim::fleet;
use breaker_sim::scenario::Scenario;
use breaker_sim::traffic::Rate;

/// Simulated environments.
const ENVS: u32 = 100;
/// `outage`'s calls a second per environment.
const BUSY: f64 = 10.0;

/// `breaker capacity --json` for `ENVS` at `calls_per_env` each, with the breaker's
/// defaults.
fn capacity(calls_per_env: f64) -> serde_json::Value {
    let fleet_rate = (f64::from(ENVS) * calls_per_env).to_string();
    let envs = ENVS.to_string();
    let (code, stdout, stderr) =
        breaker_capacity(&["--envs", &envs, "--calls-per-second", &fleet_rate, "--json"]);
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&stdout).expect("one JSON object")
}

/// Runs `breaker capacity ARGS`: (exit code, stdout, stderr).
fn breaker_capacity(args: &[&str]) -> (i32, String, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_breaker"))
        .arg("capacity")
        .args(args)
        .env_remove("CIRCUIT_BREAKER_TABLE")
        .output()
        .expect("breaker runs");
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).expect("utf-8");
    (
        output.status.code().expect("exited"),
        text(output.stdout),
        text(output.stderr),
    )
}

fn number(json: &serde_json::Value, path: &[&str]) -> f64 {
    let value = path.iter().fold(json, |value, key| &value[*key]);
    value
        .as_f64()
        .unwrap_or_else(|| panic!("{path:?} in {json}"))
}

/// What the simulated item took, on average over virtual seconds `from..to`, with
/// `calls_per_env` and the downstream `health`.
struct Simulated {
    read_units_per_s: f64,
    write_units_per_s: f64,
    /// The mean recovery window that started and ended in the span, seconds.
    recovery_window_s: Option<f64>,
}

/// The figures of the reduced fleet from second `from` to `to`; every window waits the
/// recovery timeout (the arithmetic's case) unless `backoff` says otherwise.
fn simulated(calls_per_env: f64, health: HealthSchedule, from: usize, to: usize) -> Simulated {
    simulated_with(calls_per_env, health, from, to, RecoveryBackoff::none())
}

fn simulated_with(
    calls_per_env: f64,
    health: HealthSchedule,
    from: usize,
    to: usize,
    backoff: RecoveryBackoff,
) -> Simulated {
    let mut scenario = Scenario::named("outage")
        .expect("a scenario")
        .scaled_to(ENVS);
    scenario.breaker.recovery_backoff = backoff;
    scenario.rate = Rate::PerEnv(calls_per_env);
    scenario.health = health;
    scenario.duration_ms = to as u64 * 1000;
    let run = fleet::run(&scenario).expect("valid config");
    let seconds = &run.metrics.seconds()[from..to];
    let span = seconds.len() as f64;
    let read_units: f64 = seconds
        .iter()
        .map(|s| f64::from(s.read_half_units) / 2.0)
        .sum();
    let write_units: f64 = seconds.iter().map(|s| f64::from(s.write_units)).sum();
    let windows: Vec<f64> = run
        .metrics
        .windows()
        .iter()
        .filter(|w| w.start_ms >= from as u64 * 1000)
        .filter_map(|w| w.end_ms.map(|end| (end - w.start_ms) as f64 / 1000.0))
        .collect();
    Simulated {
        read_units_per_s: read_units / span,
        write_units_per_s: write_units / span,
        recovery_window_s: (!windows.is_empty())
            .then(|| windows.iter().sum::<f64>() / windows.len() as f64),
    }
}

fn within(measured: f64, predicted: f64, tolerance: f64) -> bool {
    (measured - predicted).abs() <= predicted * tolerance
}

#[test]
fn a_healthy_fleet_reads_what_capacity_predicts_and_writes_nothing() {
    // Busy, and quiet enough that the wait for the next call after the cache age (2 s at
    // 0.5 calls/s) is a third of each read's gap: ENVS / cache age would be 40 % off.
    for calls_per_env in [BUSY, 0.5] {
        let predicted = capacity(calls_per_env);
        let predicted_rcu = number(&predicted, &["healthy", "read_units_per_s"]);
        assert_eq!(number(&predicted, &["healthy", "write_units_per_s"]), 0.0);
        // After the first calls, spread over the first cache age.
        let run = simulated(calls_per_env, HealthSchedule::always_up(), 20, 200);
        let (rcu, wcu) = (run.read_units_per_s, run.write_units_per_s);
        eprintln!(
            "healthy at {calls_per_env} calls/s each: predicted {predicted_rcu:.2} RCU/s, \
             simulated {rcu:.2}"
        );
        assert!(
            within(rcu, predicted_rcu, 0.05),
            "{rcu} against {predicted_rcu}"
        );
        assert_eq!(wcu, 0.0, "a healthy circuit is never written");
    }
}

#[test]
fn an_open_circuit_takes_what_capacity_predicts() {
    let predicted = capacity(BUSY);
    let predicted_rcu = number(&predicted, &["open", "read_units_per_s"]);
    let predicted_wcu = number(&predicted, &["open", "write_units_per_s"]);
    // Down from 10 s for good; measured from 60 s, long after the trip burst, over
    // twenty recovery windows.
    let down = HealthSchedule::new(vec![(10_000, Health::Down)]);
    let run = simulated(BUSY, down, 60, 660);
    let (rcu, wcu) = (run.read_units_per_s, run.write_units_per_s);
    let predicted_window = number(&predicted, &["recovery_window_s"]);
    let window = run.recovery_window_s.expect("windows while open");
    eprintln!(
        "open: predicted {predicted_rcu:.2} RCU/s, {predicted_wcu:.4} WCU/s, windows of \
         {predicted_window:.2} s; simulated {rcu:.2}, {wcu:.4}, {window:.2} s"
    );
    assert!(
        within(rcu, predicted_rcu, 0.05),
        "{rcu} against {predicted_rcu}"
    );
    // One window more or less in twenty is 5 %.
    assert!(
        within(wcu, predicted_wcu, 0.10),
        "{wcu} against {predicted_wcu}"
    );
    assert!(
        within(window, predicted_window, 0.01),
        "{window} against {predicted_window}"
    );
}

#[test]
fn with_the_doubling_backoff_an_open_circuit_writes_less_than_predicted() {
    let predicted = capacity(BUSY);
    let predicted_wcu = number(&predicted, &["open", "write_units_per_s"]);
    let down = HealthSchedule::new(vec![(10_000, Health::Down)]);
    let run = simulated_with(BUSY, down, 60, 660, RecoveryBackoff::doubling());
    assert!(
        run.write_units_per_s > 0.0 && run.write_units_per_s <= predicted_wcu,
        "{} against at most {predicted_wcu}",
        run.write_units_per_s
    );
}

#[test]
fn a_fleet_too_large_for_the_item_is_told_the_cache_age_it_needs() {
    let (code, stdout, stderr) =
        breaker_capacity(&["--envs", "100000", "--calls-per-second", "100000"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("above the item's limit")
            && stdout.contains("set local_cache_max_age to at least 32.4 s"),
        "{stdout}"
    );
    let (code, stdout, _) = breaker_capacity(&[
        "--envs",
        "100000",
        "--calls-per-second",
        "100000",
        "--local-cache-max-age",
        "40s",
    ]);
    assert_eq!(code, 0);
    assert!(stdout.contains("within half of it"), "{stdout}");
}

#[test]
fn bad_input_names_the_flag() {
    for (args, flag) in [
        (["--envs", "0", "--calls-per-second", "10"], "--envs"),
        (
            ["--envs", "5", "--calls-per-second", "0"],
            "--calls-per-second",
        ),
        (
            ["--envs", "5", "--calls-per-second", "NaN"],
            "--calls-per-second",
        ),
    ] {
        let (code, stdout, stderr) = breaker_capacity(&args);
        assert_eq!((code, stdout.as_str()), (1, ""), "{args:?}: {stderr}");
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
    }
    let (code, _, stderr) = breaker_capacity(&[
        "--envs",
        "5",
        "--calls-per-second",
        "10",
        "--recovery-timeout",
        "0s",
    ]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("--recovery-timeout must be at least 1s"),
        "{stderr}"
    );
    let (code, _, stderr) = breaker_capacity(&["--envs", "5", "--calls-per-second", "ten"]);
    assert_eq!(code, 2, "clap's usage error");
    assert!(stderr.contains("--calls-per-second"), "{stderr}");
}

#[test]
fn a_keyed_circuit_reads_its_index_like_one_circuit_and_named_keys_only() {
    let fleet = ["--envs", "1000", "--calls-per-second", "10000"];
    let keyed = |extra: &[&str]| {
        let (code, stdout, stderr) = breaker_capacity(&[&fleet[..], extra, &["--json"]].concat());
        assert_eq!(code, 0, "{stderr}");
        serde_json::from_str::<serde_json::Value>(&stdout).expect("one JSON object")
    };
    let healthy = keyed(&["--keys", "5000", "--open-keys", "0"]);
    let index_reads = number(&healthy, &["keyed", "index_reads_per_s"]);
    assert_eq!(index_reads, number(&healthy, &["healthy", "reads_per_s"]));
    assert_eq!(
        number(&healthy, &["keyed", "key_item_reads_per_s_healthy"]),
        0.0
    );
    assert!(number(&healthy, &["keyed", "without_index_reads_per_s"]) > 40.0 * index_reads);

    let ten = keyed(&["--keys", "5000", "--open-keys", "10"]);
    assert_eq!(number(&ten, &["keyed", "index_reads_per_s"]), index_reads);
    let named_reads = number(&ten, &["keyed", "key_item_reads_per_s_open"]);
    // 2 calls/s per key over the fleet, each environment's rare call to it a read.
    assert!((19.0..20.0).contains(&named_reads), "{named_reads}");

    let past_cap = [
        "--keys",
        "5000",
        "--open-keys",
        "4500",
        "--max-open-keys",
        "100",
    ];
    assert_eq!(number(&keyed(&past_cap), &["keyed", "named_keys"]), 100.0);

    // The same fleet and keys, as text.
    let (code, stdout, _) = breaker_capacity(&[&fleet[..], &past_cap].concat());
    assert_eq!(code, 0);
    for expected in [
        "healthy keys cost no reads",
        "4400 of the 4500 keys down are refused by the cap and keep running",
        "without an index: all 5000 keys' items",
    ] {
        assert!(
            stdout.contains(expected),
            "{expected:?} missing from\n{stdout}"
        );
    }
}

#[test]
fn keyed_flags_out_of_range_name_the_flag() {
    let base = ["--envs", "5", "--calls-per-second", "10"];
    for (extra, words) in [
        (&["--keys", "0"][..], "--keys must be at least 1"),
        (
            &["--keys", "5", "--open-keys", "6"],
            "--open-keys must be at most --keys (5)",
        ),
        (
            &["--keys", "5", "--key-bytes", "65"],
            "--key-bytes must be at most 64",
        ),
        (
            &["--keys", "5", "--max-open-keys", "0"],
            "--max-open-keys must be at least 1",
        ),
    ] {
        let (code, stdout, stderr) = breaker_capacity(&[&base[..], extra].concat());
        assert_eq!((code, stdout.as_str()), (1, ""), "{extra:?}: {stderr}");
        assert!(stderr.contains(words), "{extra:?}: {stderr}");
    }
    let (code, _, stderr) = breaker_capacity(&[&base[..], &["--open-keys", "3"]].concat());
    assert_eq!(code, 2, "--open-keys needs --keys: {stderr}");
}
