use breaker_runtime::{CircuitInfo, circuit_breaker};

#[circuit_breaker(name = "payments", on_circuit_open = buffer)]
async fn charge(order_id: u64, cents: u64) -> Result<(), anyhow::Error> {
    let _ = (order_id, cents);
    Ok(())
}

async fn buffer(order_id: u64, _circuit: CircuitInfo) -> Result<(), anyhow::Error> {
    let _ = order_id;
    Ok(())
}

fn main() {}
