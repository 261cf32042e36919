use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", failure_threshold = 3, call_timeout_ms = 28001)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
