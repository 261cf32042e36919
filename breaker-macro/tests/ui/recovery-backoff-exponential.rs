use breaker_runtime::circuit_breaker;

// One name for one backoff: `RecoveryBackoff::doubling()`, `CIRCUIT_RECOVERY_BACKOFF=doubling`.
#[circuit_breaker(name = "payments", recovery_backoff = "exponential")]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
