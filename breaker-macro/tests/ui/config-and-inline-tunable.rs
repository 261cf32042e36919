use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", config = breaker_runtime::CircuitBreakerConfig::default(), failure_threshold = 3)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
