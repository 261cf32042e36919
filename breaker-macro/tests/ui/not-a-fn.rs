use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments")]
struct PaymentClient {
    endpoint: String,
}

fn main() {}
