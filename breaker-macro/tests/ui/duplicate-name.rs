use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", name = "billing")]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
