use breaker_runtime::{CircuitInfo, circuit_breaker};

#[circuit_breaker(name = "payments", on_circuit_open = buffer)]
fn charge(order_id: u64) -> Result<(), anyhow::Error> {
    let _ = order_id;
    Ok(())
}

fn buffer(_order_id: u64, _circuit: CircuitInfo) -> Option<()> {
    None
}

fn main() {}
