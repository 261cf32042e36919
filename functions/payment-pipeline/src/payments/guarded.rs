//! The one guarded payment call: `charge` and `overflow-replay` both charge through it, so
//! the `payment-backend` circuit is declared once, with one meaning of "failure".

use breaker_runtime::{CircuitBreakerOpenError, circuit_breaker};

use super::client::{PaymentClient, PaymentError, Receipt};
use crate::order::Order;

/// The name of the circuit around the payment API: the `id` of its item in the circuit
/// table, the `circuit` dimension of its metrics, the `circuit` attribute of a buffered
/// order. [`PaymentClient::charge_guarded`] declares it (the attribute takes a literal; a
/// test checks the two agree).
pub const CIRCUIT: &str = "payment-backend";

/// Why a guarded charge did not go through.
#[derive(Debug, thiserror::Error)]
pub enum GuardedPaymentError {
    /// The circuit is open: the payment API was not called. Each caller decides what to
    /// do with the order meanwhile (`charge` buffers it, `overflow-replay` defers it).
    #[error(transparent)]
    CircuitOpen(CircuitBreakerOpenError),
    /// The charge was sent, then abandoned at its deadline (the call timeout or the
    /// invocation's deadline): the request may have reached the API, so its outcome is
    /// unknown. Never buffered or repeated as if the API had not been called.
    #[error("charge outcome unknown: {0}")]
    Abandoned(CircuitBreakerOpenError),
    /// The payment API was called and the charge failed or was refused; only
    /// [downstream failures](PaymentError::is_downstream_failure) counted toward opening.
    #[error(transparent)]
    Payment(#[from] PaymentError),
}

/// The breaker's error sorted by what it says about the payment API: a rejection never
/// called it, an abandoned call may have charged.
impl From<CircuitBreakerOpenError> for GuardedPaymentError {
    fn from(error: CircuitBreakerOpenError) -> Self {
        match error.abandoned {
            Some(_) => Self::Abandoned(error),
            None => Self::CircuitOpen(error),
        }
    }
}

/// The circuit's classifier: only an unwell payment API (5xx, 429, timeout, unreachable)
/// counts toward opening; a refused order (another 4xx) says nothing about its health.
fn payment_api_unwell(error: &GuardedPaymentError) -> bool {
    matches!(error, GuardedPaymentError::Payment(e) if e.is_downstream_failure())
}

impl PaymentClient {
    /// [`charge`](Self::charge) behind the [`CIRCUIT`] circuit, whose state every function
    /// calling this shares through the circuit table (`CIRCUIT_BREAKER_TABLE`). Tunables
    /// from `circuit-env`; each transition is logged as a CloudWatch metric. While the
    /// circuit is open this returns [`GuardedPaymentError::CircuitOpen`] without calling
    /// the payment API.
    #[circuit_breaker(
        name = "payment-backend",
        config = circuit_env::circuit_config(),
        handled = payment_api_unwell,
        on_transition = breaker_runtime::emf::log_transition
    )]
    pub async fn charge_guarded(&self, order: &Order) -> Result<Receipt, GuardedPaymentError> {
        Ok(self.charge(order).await?)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use breaker_runtime::{Abandoned, FailureKind};

    use super::*;

    /// A payment API that answers every request with `status`.
    async fn stub_api(status: u16) -> PaymentClient {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/charges", listener.local_addr().unwrap());
        tokio::spawn(async move {
            loop {
                let (mut stream, _) = listener.accept().await.unwrap();
                tokio::spawn(async move {
                    // Read the whole request before answering, so the client sees the status.
                    let mut request = Vec::new();
                    let mut chunk = [0; 1024];
                    while !request_complete(&request) {
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => request.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let response = format!(
                        "HTTP/1.1 {status} Stub\r\ncontent-length: 4\r\nconnection: close\r\n\r\nstub"
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                });
            }
        });
        PaymentClient::new(&url, Duration::from_secs(5)).unwrap()
    }

    /// Headers and a `content-length` body received.
    fn request_complete(request: &[u8]) -> bool {
        let text = String::from_utf8_lossy(request);
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            return false;
        };
        let length = head
            .lines()
            .filter_map(|line| line.split_once(':'))
            .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, value)| value.trim().parse::<usize>().ok())
            .unwrap_or(0);
        body.len() >= length
    }

    fn circuit() -> breaker_runtime::CircuitInfo {
        breaker_runtime::CircuitInfo {
            name: CIRCUIT.into(),
            state: breaker_runtime::CircuitState::Closed,
            failure_count: 1,
            opened_at: None,
        }
    }

    #[test]
    fn an_abandoned_charge_is_outcome_unknown_a_rejection_was_never_sent() {
        let rejected = CircuitBreakerOpenError::rejected(circuit());
        assert!(matches!(
            GuardedPaymentError::from(rejected),
            GuardedPaymentError::CircuitOpen(_)
        ));
        for kind in [FailureKind::CallTimeout, FailureKind::InvocationDeadline] {
            let abandoned = Abandoned {
                kind,
                after: Duration::from_secs(3),
            };
            let error = CircuitBreakerOpenError::abandoned(circuit(), abandoned);
            assert!(
                matches!(
                    GuardedPaymentError::from(error),
                    GuardedPaymentError::Abandoned(_)
                ),
                "an abandoned charge may have reached the API ({kind:?})"
            );
        }
    }

    // One test: the circuit is per process, every call here shares it. It runs on the
    // in-memory store (no `CIRCUIT_BREAKER_TABLE`), with a failure threshold of at most 20.
    #[tokio::test]
    async fn refusals_never_open_the_circuit_an_unwell_api_does() {
        let order = Order::from_payload(json!({"order_id": "o-1", "amount": 5, "currency": "EUR"}))
            .unwrap();

        let refusing = stub_api(402).await;
        for _ in 0..20 {
            match refusing.charge_guarded(&order).await {
                Err(GuardedPaymentError::Payment(PaymentError::Refused {
                    status: 402, ..
                })) => {}
                other => panic!("a refusal must reach the caller, uncounted: {other:?}"),
            }
        }

        let unwell = stub_api(503).await;
        let mut failures = 0;
        let open = loop {
            match unwell.charge_guarded(&order).await {
                Err(GuardedPaymentError::Payment(PaymentError::Unavailable {
                    status: 503,
                    ..
                })) => {
                    failures += 1;
                    assert!(failures <= 20, "20 outages did not open the circuit");
                }
                Err(GuardedPaymentError::CircuitOpen(open)) => break open,
                other => panic!("expected an outage or an open circuit: {other:?}"),
            }
        };
        assert!(failures >= 1);
        assert_eq!(&*open.circuit.name, CIRCUIT);
        // Open: the refusing API is not called either, whatever it would answer.
        assert!(matches!(
            refusing.charge_guarded(&order).await,
            Err(GuardedPaymentError::CircuitOpen(_))
        ));
    }
}
