use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "webhooks", max_open_keys = 50)]
fn deliver(_merchant: &str) -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
