use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", on_circuit_open = "buffer")]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
