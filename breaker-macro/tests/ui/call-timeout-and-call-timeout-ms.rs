use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", call_timeout = 2, call_timeout_ms = 500)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
