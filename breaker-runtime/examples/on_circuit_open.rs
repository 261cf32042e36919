//! Buffering while the circuit is open: `on_circuit_open` gets the call's arguments, so an
//! order the payment API cannot take now is kept (here in a queue; in Lambda, an SQS
//! queue) instead of lost, and replayed once the circuit has closed.
//!
//! `cargo run -p breaker-runtime --example on_circuit_open`

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{CircuitBreakerConfig, CircuitInfo, CircuitState, circuit_breaker};

/// A manual clock skips the recovery timeout instantly.
static CLOCK: std::sync::LazyLock<ManualClock> = std::sync::LazyLock::new(ManualClock::new);
/// Whether the payment API answers.
static API_UP: AtomicBool = AtomicBool::new(false);
/// The orders kept while the circuit was open.
static BUFFER: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn config() -> CircuitBreakerConfig {
    CircuitBreakerConfig::builder()
        .failure_threshold(2)
        .success_threshold(1)
        .recovery_timeout(Duration::from_secs(30))
        .clock(CLOCK.clone())
        .build()
        .expect("a valid config")
}

#[derive(Debug, PartialEq)]
enum Charged {
    Now(String),
    Buffered(String),
}

#[circuit_breaker(name = "payment-api", config = config(), on_circuit_open = buffer,
                  persistence_store = InMemoryStore::new())]
async fn charge(order_id: String) -> Result<Charged, anyhow::Error> {
    anyhow::ensure!(API_UP.load(Ordering::SeqCst), "payment api 503");
    Ok(Charged::Now(order_id))
}

/// Runs instead of `charge` while the circuit is open: the same arguments, plus what the
/// circuit knows.
async fn buffer(order_id: String, circuit: CircuitInfo) -> Result<Charged, anyhow::Error> {
    assert_eq!(circuit.state, CircuitState::Open);
    BUFFER.lock().unwrap().push(order_id.clone());
    Ok(Charged::Buffered(order_id))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    println!("the payment API is down: two failures open the circuit");
    for id in ["o-1", "o-2"] {
        let failed = charge(id.into()).await.expect_err("the API is down");
        println!("  {id}: failed: {failed}");
    }

    println!("while open, orders are buffered without calling the API");
    for id in ["o-3", "o-4"] {
        let buffered = charge(id.into()).await?;
        println!("  {id}: {buffered:?}");
        assert_eq!(buffered, Charged::Buffered(id.into()));
    }
    assert_eq!(*BUFFER.lock().unwrap(), ["o-3", "o-4"]);

    println!("30 s later the API is back: the probe closes the circuit, the buffer is replayed");
    API_UP.store(true, Ordering::SeqCst);
    CLOCK.advance(Duration::from_secs(30));
    let buffered = std::mem::take(&mut *BUFFER.lock().unwrap());
    for id in buffered {
        let charged = charge(id.clone()).await?;
        println!("  {id}: {charged:?}");
        assert_eq!(charged, Charged::Now(id));
    }
    assert!(
        BUFFER.lock().unwrap().is_empty(),
        "nothing buffered once closed"
    );
    Ok(())
}
