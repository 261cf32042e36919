//! `CIRCUIT_BREAKER_DISABLED` bypasses every guarded fn. The variable is read when a circuit
//! is created, so the test runs itself again in a child process with it set (setting it
//! in-process would need `unsafe`).

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::{CircuitInfo, circuit_breaker};

static ENTRIES: AtomicU32 = AtomicU32::new(0);

#[circuit_breaker(name = "disabled-sync", failure_threshold = 1, persistence_store = InMemoryStore::new())]
fn sync_down() -> Result<(), anyhow::Error> {
    ENTRIES.fetch_add(1, Ordering::SeqCst);
    anyhow::bail!("down")
}

#[circuit_breaker(name = "disabled-async", failure_threshold = 1, on_circuit_open = never, persistence_store = InMemoryStore::new())]
async fn async_down() -> Result<(), anyhow::Error> {
    ENTRIES.fetch_add(1, Ordering::SeqCst);
    anyhow::bail!("down")
}

fn never(circuit: CircuitInfo) -> Result<(), anyhow::Error> {
    panic!("the callback ran while breakers are disabled: {circuit:?}")
}

fn calls_all_reach_the_body() {
    for _ in 0..10 {
        assert_eq!(sync_down().unwrap_err().to_string(), "down");
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for _ in 0..10 {
        assert_eq!(
            runtime.block_on(async_down()).unwrap_err().to_string(),
            "down"
        );
    }
    assert_eq!(ENTRIES.load(Ordering::SeqCst), 20);
}

#[test]
fn disabled_breakers_never_open() {
    if std::env::var_os("CIRCUIT_BREAKER_DISABLED").is_some() {
        return calls_all_reach_the_body();
    }
    // Enabled here: the circuit opens after one failure.
    assert!(sync_down().is_err());
    assert!(sync_down().is_err());
    assert_eq!(ENTRIES.load(Ordering::SeqCst), 1);

    // The harness names a test by its module path without the crate name.
    let module = module_path!().split_once("::").map_or("", |(_, rest)| rest);
    let test_name = format!("{module}::disabled_breakers_never_open");
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &test_name, "--nocapture"])
        .env("CIRCUIT_BREAKER_DISABLED", "true")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&child.stdout);
    assert!(
        child.status.success(),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&child.stderr)
    );
    assert!(
        stdout.contains("1 passed"),
        "the child ran the test: {stdout}"
    );
}
