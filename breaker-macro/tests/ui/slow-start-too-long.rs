use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", slow_start = 7200)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
