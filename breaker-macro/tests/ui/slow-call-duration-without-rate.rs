use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", slow_call_duration_ms = 800)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
