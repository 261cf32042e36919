use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments")]
async fn balance() -> u64 {
    0
}

fn main() {}
