use breaker_runtime::circuit_breaker;

const NAME: &str = "payments";

#[circuit_breaker(name = NAME)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
