use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "audit")]
fn record(event: &str) {
    println!("{event}");
}

fn main() {}
