use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", recovery_backoff = "linear")]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
