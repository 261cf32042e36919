use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", window_secs = 60)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
