use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", recovery_timeout = 60, recovery_backoff_max_secs = 45)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
