use breaker_runtime::{CircuitInfo, circuit_breaker};

#[circuit_breaker(name = "payments", on_circuit_open = buffer)]
fn charge(_: u64) -> Result<(), anyhow::Error> {
    Ok(())
}

fn buffer(_: u64, _: CircuitInfo) -> Result<(), anyhow::Error> {
    Ok(())
}

fn main() {}
