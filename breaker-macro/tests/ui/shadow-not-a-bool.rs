use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", shadow = "yes")]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
