use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", fleet_detection = 1)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
