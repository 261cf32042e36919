use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", call_timeout = 29)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
