use breaker_runtime::circuit_breaker;

fn log_transition(name: &str) {
    println!("{name}");
}

#[circuit_breaker(name = "payments", on_transition = log_transition)]
fn charge() -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
