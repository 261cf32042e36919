use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", persistence_store = "dynamodb")]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
