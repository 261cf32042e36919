use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", failure_rate = 50, minimum_calls = 0)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
