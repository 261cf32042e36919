use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", recovery_timeout = 10000000)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
