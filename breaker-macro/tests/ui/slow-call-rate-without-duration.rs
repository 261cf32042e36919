use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", slow_call_rate = 50)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
