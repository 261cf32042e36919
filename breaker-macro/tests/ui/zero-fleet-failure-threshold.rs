use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", fleet_failure_threshold = 0)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
