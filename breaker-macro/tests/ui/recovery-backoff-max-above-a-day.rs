use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", recovery_backoff_max_secs = 86401)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
