use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", recovery_backoff = "none", recovery_backoff_max_secs = 600)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
