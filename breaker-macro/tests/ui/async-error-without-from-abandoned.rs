use breaker_runtime::{CircuitBreakerOpenError, circuit_breaker};

/// Carries a rejection, but not a call abandoned at its deadline, which only async calls meet.
#[derive(Debug)]
pub enum LookupError {
    Open(CircuitBreakerOpenError),
}

impl From<CircuitBreakerOpenError> for LookupError {
    fn from(error: CircuitBreakerOpenError) -> Self {
        Self::Open(error)
    }
}

#[circuit_breaker(name = "lookup")]
async fn lookup() -> Result<u32, LookupError> {
    Ok(1)
}

fn main() {}
