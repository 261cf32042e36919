//! One guarded call per line read from stdin, on the system clock, printing how many times
//! the store was read so far (reads): the freeze test stops and continues this process between
//! calls. With the argument `scoped` each call runs in an invocation's deadline scope, as a
//! Lambda handler's does.

use std::io::BufRead;
use std::sync::Arc;
use std::time::Duration;

use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, deadline};
use devstack::doubles::{Behaviour, ScriptedStore};

type Error = Box<dyn std::error::Error + Send + Sync>;

fn main() -> Result<(), Error> {
    let scoped = std::env::args().any(|arg| arg == "scoped");
    let store = Arc::new(ScriptedStore::new(Behaviour::Healthy));
    let config = CircuitBreakerConfig::builder()
        .local_cache_max_age(Duration::from_secs(1))
        .build()?;
    let breaker = CircuitBreaker::new("frozen", store.clone(), config);
    for line in std::io::stdin().lock().lines() {
        line?;
        let call = || breaker.call_blocking(|| Ok::<(), Error>(()));
        let result = match scoped {
            true => {
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
                deadline::scope_blocking(now.as_millis() as u64 + 60_000, call)
            }
            false => call(),
        };
        result?;
        println!("store_calls={}", store.reads());
    }
    Ok(())
}
