use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", slow_call_duration_ms = 800, slow_call_rate = 50, failure_threshold = 5)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
