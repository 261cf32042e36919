use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments")]
const fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
