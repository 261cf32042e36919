use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", config = breaker_runtime::CircuitBreakerConfig::default(), call_timeout = 2)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
