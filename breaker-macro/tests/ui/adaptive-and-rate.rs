use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "quotes", adaptive = true, failure_rate = 50)]
fn quote() -> Result<(), anyhow::Error> {
    Ok(())
}

#[circuit_breaker(name = "search", window_calls = 20, failure_rate = 50, adaptive = true)]
fn search() -> Result<(), anyhow::Error> {
    Ok(())
}

#[circuit_breaker(name = "ledger", failure_threshold = 3, adaptive = true)]
fn ledger() -> Result<(), anyhow::Error> {
    Ok(())
}

// `adaptive = false` turns nothing on: it goes with any policy.
#[circuit_breaker(name = "rates", adaptive = false, failure_rate = 50)]
fn rates() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
