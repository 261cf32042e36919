use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", fleet_failure_rate = 101)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
