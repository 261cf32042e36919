use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", fleet_detection = false, fleet_failure_threshold = 20)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
