use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", failure_threshold = 5, failure_rate = 50)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
