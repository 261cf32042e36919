use breaker_runtime::circuit_breaker;

#[circuit_breaker(name)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
