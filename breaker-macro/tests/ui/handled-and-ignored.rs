use breaker_runtime::circuit_breaker;

fn is_server_error(_: &anyhow::Error) -> bool {
    true
}

#[circuit_breaker(name = "payments", handled = is_server_error, ignored = is_server_error)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
