use breaker_runtime::circuit_breaker;

#[circuit_breaker(name = "payments")]
extern "C" fn charge() -> u32 {
    0
}

fn main() {}
