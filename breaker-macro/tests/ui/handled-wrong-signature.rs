use breaker_runtime::circuit_breaker;

fn is_server_error(status: u16) -> bool {
    status >= 500
}

#[circuit_breaker(name = "payments", handled = is_server_error)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
