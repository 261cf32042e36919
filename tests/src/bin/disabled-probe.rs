//! Runs 20 failing calls through a circuit with failure_threshold 1 and prints what
//! happened, so tests can check `CIRCUIT_BREAKER_DISABLED` in a fresh process.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig};
use devstack::doubles::{Behaviour, ScriptedStore};

type Error = Box<dyn std::error::Error + Send + Sync>;

fn main() -> Result<(), Error> {
    let store = Arc::new(ScriptedStore::new(Behaviour::Healthy));
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(1)
        .build()?;
    let breaker = CircuitBreaker::new("bypassed", store.clone(), config);
    let ran = AtomicUsize::new(0);
    for _ in 0..20 {
        let _: Result<(), Error> = breaker.call_blocking(|| {
            ran.fetch_add(1, Ordering::SeqCst);
            Err("boom".into())
        });
    }
    println!(
        "ran={} store_calls={} state={}",
        ran.load(Ordering::SeqCst),
        store.calls(),
        breaker.state()
    );
    Ok(())
}
