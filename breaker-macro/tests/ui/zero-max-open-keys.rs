use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "webhooks", keyed_by = _merchant, max_open_keys = 0)]
fn deliver(_merchant: &str) -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
