//! `handled` (allowlist) and `ignored` (denylist) predicates: only the errors they select
//! count towards opening the circuit.

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::{CallAbandonedError, CircuitBreakerOpenError, circuit_breaker};

#[derive(Debug)]
enum ApiError {
    Status(u16),
    Open(CircuitBreakerOpenError),
    /// Abandoned at its deadline (none of these tests sets one).
    Abandoned,
}

impl From<CircuitBreakerOpenError> for ApiError {
    fn from(error: CircuitBreakerOpenError) -> Self {
        Self::Open(error)
    }
}

impl From<CallAbandonedError> for ApiError {
    fn from(_: CallAbandonedError) -> Self {
        Self::Abandoned
    }
}

fn is_server_error(error: &ApiError) -> bool {
    matches!(error, ApiError::Status(500..=599))
}

fn is_client_error(error: &ApiError) -> bool {
    matches!(error, ApiError::Status(400..=499))
}

#[circuit_breaker(name = "handled", failure_threshold = 2, handled = is_server_error, persistence_store = InMemoryStore::new())]
async fn call_handled(status: u16) -> Result<(), ApiError> {
    Err(ApiError::Status(status))
}

#[tokio::test]
async fn handled_counts_only_the_errors_it_matches() {
    for _ in 0..10 {
        assert!(matches!(
            call_handled(404).await,
            Err(ApiError::Status(404))
        ));
    }
    assert!(matches!(
        call_handled(503).await,
        Err(ApiError::Status(503))
    ));
    // A non-matching error neither counts nor resets the count.
    assert!(matches!(
        call_handled(404).await,
        Err(ApiError::Status(404))
    ));
    assert!(matches!(
        call_handled(500).await,
        Err(ApiError::Status(500))
    ));
    assert!(
        matches!(call_handled(404).await, Err(ApiError::Open(e)) if e.circuit.failure_count == 2)
    );
}

#[circuit_breaker(name = "ignored", failure_threshold = 2, ignored = is_client_error, persistence_store = InMemoryStore::new())]
fn call_ignored(status: u16) -> Result<(), ApiError> {
    Err(ApiError::Status(status))
}

#[test]
fn ignored_counts_every_error_but_the_ones_it_matches() {
    for _ in 0..10 {
        assert!(matches!(call_ignored(429), Err(ApiError::Status(429))));
    }
    assert!(matches!(call_ignored(502), Err(ApiError::Status(502))));
    assert!(matches!(call_ignored(400), Err(ApiError::Status(400))));
    assert!(matches!(call_ignored(504), Err(ApiError::Status(504))));
    assert!(matches!(call_ignored(200), Err(ApiError::Open(_))));
}

fn is_timeout(error: &anyhow::Error) -> bool {
    error.to_string().contains("timeout")
}

#[circuit_breaker(name = "handled-anyhow", failure_threshold = 1, handled = is_timeout, persistence_store = InMemoryStore::new())]
async fn call_anyhow(message: &'static str) -> anyhow::Result<u8> {
    anyhow::bail!(message)
}

#[tokio::test]
async fn predicates_take_the_error_type_of_the_fn() {
    assert_eq!(
        call_anyhow("bad request").await.unwrap_err().to_string(),
        "bad request"
    );
    assert_eq!(
        call_anyhow("timeout").await.unwrap_err().to_string(),
        "timeout"
    );
    let rejected = call_anyhow("bad request").await.unwrap_err();
    assert!(rejected.downcast_ref::<CircuitBreakerOpenError>().is_some());
}
