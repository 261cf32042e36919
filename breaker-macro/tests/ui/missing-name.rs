use breaker_runtime::circuit_breaker;

#[circuit_breaker(failure_threshold = 3)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
