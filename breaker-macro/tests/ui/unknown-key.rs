use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", failure_treshold = 3)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
