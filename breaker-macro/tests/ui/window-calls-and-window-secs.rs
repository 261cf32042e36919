use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments", failure_rate = 50, window_calls = 100, window_secs = 60)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
