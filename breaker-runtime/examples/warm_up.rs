//! Warm-up at init: the records of a function's circuits read in one batched request
//! before the first invocation, so the first call of a new execution environment is a
//! cache hit. Here the circuit was opened by another environment of the fleet: after the
//! warm-up, this environment's first call is rejected at once, without a store read.
//!
//! `cargo run -p breaker-runtime --example warm_up`

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use breaker_runtime::store::{
    CircuitRecord, InMemoryStore, RecordWrite, StateStore, StoreFuture, WriteOutcome,
};
use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError, WarmUp};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The fleet's store, counting this environment's reads.
#[derive(Debug, Default)]
struct CountingStore {
    inner: InMemoryStore,
    reads: AtomicUsize,
}

impl StateStore for CountingStore {
    fn read<'a>(&'a self, circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.read(circuit)
    }
    fn apply<'a>(
        &'a self,
        circuit: &'a str,
        write: &'a RecordWrite,
    ) -> StoreFuture<'a, WriteOutcome> {
        self.inner.apply(circuit, write)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let store = Arc::new(CountingStore::default());
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    // Another environment tripped the circuit a moment ago.
    let trip = RecordWrite::Trip {
        opened_by: None,
        failure_count: 5,
        opened_at: now,
        expiration: now + 3_630,
        open_until: None,
    };
    assert_eq!(
        store.apply("payment-backend", &trip).await?,
        WriteOutcome::Won
    );

    // Init: build the circuits, then warm them up (one read per store).
    let breaker = CircuitBreaker::new(
        "payment-backend",
        store.clone(),
        CircuitBreakerConfig::default(),
    );
    // A misconfigured store (no such table, access denied) stops init; an outage fails
    // open, and the circuits read on their first call.
    let warmed = match WarmUp::new().breaker(&breaker).run().await {
        Ok(warmed) => warmed,
        Err(error) if error.is_misconfiguration() => return Err(error.into()),
        Err(_) => 0,
    };
    println!(
        "warm-up read {warmed} record(s) in {} store read(s)",
        store.reads.load(Ordering::SeqCst)
    );
    assert_eq!(warmed, 1);
    let reads_at_init = store.reads.load(Ordering::SeqCst);

    // The first invocation: rejected from the cache, no store round trip.
    let result: Result<(), Error> = breaker.call(|| async { Ok(()) }).await;
    let error = result.unwrap_err();
    println!("first call: {error}");
    assert!(error.downcast_ref::<CircuitBreakerOpenError>().is_some());
    assert_eq!(
        store.reads.load(Ordering::SeqCst),
        reads_at_init,
        "no read on the first call"
    );
    Ok(())
}
