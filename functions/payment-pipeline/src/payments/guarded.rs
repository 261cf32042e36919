//! The guarded payment call `overflow-replay` makes: the `payment-backend` circuit around
//! [`PaymentClient::charge_admitted`] ([`PaymentClient::charge_guarded`]), and
//! [`PaymentClient::charge_once`], which settles what an abandoned call left. `charge`
//! declares the same circuit with its own `on_circuit_open`, around the same body.

use breaker_runtime::{CircuitBreakerOpenError, circuit_breaker};

use super::abandoned::settle_abandoned;
use super::answer::Receipt;
use super::client::PaymentClient;
use super::outcome::{Charged, GuardedError, NotCharged};
use crate::ledger::{Ledger, Progress};
use crate::order::Order;

/// The name of the circuit around the payment API: the `id` of its item in the circuit
/// table, the `circuit` dimension of its metrics, the `circuit` attribute of a buffered
/// order. [`PaymentClient::charge_guarded`] and `charge` declare it (the attribute takes a
/// literal; tests check they agree).
pub const CIRCUIT: &str = "payment-backend";

impl PaymentClient {
    /// [`charge_admitted`](Self::charge_admitted) behind the [`CIRCUIT`] circuit, whose
    /// state every function calling it shares through the circuit table
    /// (`CIRCUIT_BREAKER_TABLE`). Tunables from `circuit-env`; each transition is logged as a
    /// CloudWatch metric. While the circuit is open this returns
    /// [`GuardedError::CircuitOpen`] without writing the ledger or calling the payment API;
    /// only an unwell payment API counts toward opening it
    /// ([`payment_api_unwell`](crate::payment_api_unwell)).
    #[circuit_breaker(
        name = "payment-backend",
        config = circuit_env::circuit_config(),
        handled = super::outcome::guarded_api_unwell,
        on_transition = breaker_runtime::emf::log_transition
    )]
    pub async fn charge_guarded(
        &self,
        ledger: &Ledger,
        order: &Order,
        progress: &Progress,
    ) -> Result<Receipt, GuardedError> {
        self.charge_admitted(ledger, order, progress)
            .await
            .map_err(GuardedError::Attempt)
    }

    /// Charges `order` at most once across every copy of it, through the ledger, behind
    /// the `payment-backend` circuit: the claim is written only once the circuit admitted
    /// the call. The error is the circuit's rejection (nothing sent, nothing written); a
    /// call abandoned at its deadline is settled here, so what it reached is the answer.
    ///
    /// ```no_run
    /// # async fn demo(payments: payment_pipeline::PaymentClient, ledger: payment_pipeline::Ledger) {
    /// use payment_pipeline::{Charged, Order};
    /// let order = Order::parse(r#"{"order_id": "o-1", "amount": 5, "currency": "EUR"}"#).unwrap();
    /// match payments.charge_once(&ledger, &order).await {
    ///     Ok(Charged::Now(receipt)) => println!("charged: {}", receipt.body),
    ///     Ok(Charged::Before) => println!("a duplicate: nothing sent"),
    ///     Ok(other) => println!("not charged now: {other:?}"),
    ///     Err(open) => println!("circuit open, retry after {:?}", open.retry_after_unix_secs()),
    /// }
    /// # }
    /// ```
    pub async fn charge_once(
        &self,
        ledger: &Ledger,
        order: &Order,
    ) -> Result<Charged, CircuitBreakerOpenError> {
        let progress = Progress::default();
        match self.charge_guarded(ledger, order, &progress).await {
            Ok(receipt) => Ok(Charged::Now(receipt)),
            Err(GuardedError::CircuitOpen(open)) => Err(open),
            Err(GuardedError::Abandoned(error)) => {
                Ok(settle_abandoned(ledger, order, &progress, &error).await)
            }
            Err(GuardedError::Attempt(NotCharged { charged, .. })) => Ok(charged),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use breaker_runtime::{CallAbandonedError, FailureKind};
    use devstack::fixtures::dynalite::Dynalite;

    use super::*;
    use crate::ledger::Phase;
    use crate::payments::PaymentError;
    use crate::payments::outcome::guarded_api_unwell;

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
        PaymentClient::new(&url, Duration::from_secs(5), None).unwrap()
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
        breaker_runtime::CircuitInfo::new(CIRCUIT, breaker_runtime::CircuitState::Closed, 1, None)
    }

    #[test]
    fn an_abandoned_charge_is_outcome_unknown_a_rejection_was_never_sent() {
        let rejected = CircuitBreakerOpenError::new(circuit());
        let rejected = GuardedError::from(rejected);
        assert!(matches!(rejected, GuardedError::CircuitOpen(_)));
        assert_eq!(
            guarded_api_unwell(&rejected),
            breaker_runtime::Outcome::Ignored,
            "a rejection is not the API's"
        );
        let throttled = |retry_after| {
            GuardedError::Attempt(NotCharged {
                charged: Charged::Failed(PaymentError::Unavailable {
                    status: 429,
                    code: None,
                    retry_after,
                }),
                api_unwell: true,
            })
        };
        assert_eq!(
            guarded_api_unwell(&throttled(Some(Duration::from_secs(20)))),
            breaker_runtime::Outcome::OpenFor(Duration::from_secs(20)),
            "a 429's Retry-After opens the circuit for that long"
        );
        assert_eq!(
            guarded_api_unwell(&throttled(None)),
            breaker_runtime::Outcome::Overloaded,
            "a 429 without Retry-After is a load shed"
        );
        for kind in [FailureKind::CallTimeout, FailureKind::InvocationDeadline] {
            let error = CallAbandonedError::new(circuit(), kind, Duration::from_secs(3));
            assert!(
                matches!(GuardedError::from(error), GuardedError::Abandoned(_)),
                "an abandoned charge may have reached the API ({kind:?})"
            );
        }
    }

    fn order(id: &str) -> Order {
        Order::parse(&format!(
            r#"{{"order_id": "{id}", "amount": 5, "currency": "EUR"}}"#
        ))
        .unwrap()
    }

    // One test: the circuit is per process, every call here shares it. It runs on the
    // in-memory store (no `CIRCUIT_BREAKER_TABLE`), with a failure threshold of at most 20,
    // and a real ledger (dynalite).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn declines_never_open_the_circuit_systemic_refusals_do_and_a_rejection_writes_nothing() {
        let mut dynalite = Dynalite::start().await.unwrap();
        dynalite
            .create_table("ledger", "order_id", None)
            .await
            .unwrap();
        let ledger = Ledger::new(
            dynalite.sdk_config(),
            "ledger".into(),
            Duration::from_secs(30),
            Duration::from_secs(86_400),
            Duration::from_secs(2),
        );
        let progress = Progress::default();

        let declining = stub_api(402).await;
        for n in 0..20 {
            let order = order(&format!("declined-{n}"));
            match declining.charge_guarded(&ledger, &order, &progress).await {
                Err(GuardedError::Attempt(NotCharged {
                    charged: Charged::Declined(PaymentError::Declined { status: 402, .. }),
                    api_unwell: false,
                })) => {}
                other => panic!("a decline must reach the caller, uncounted: {other:?}"),
            }
        }

        // Rotated credentials refuse every order alike: they count, and keep the order.
        let unauthorized = stub_api(401).await;
        let mut failures = 0;
        let open = loop {
            let order = order(&format!("unauthorized-{failures}"));
            match unauthorized
                .charge_guarded(&ledger, &order, &progress)
                .await
            {
                Err(GuardedError::Attempt(NotCharged {
                    charged: Charged::Failed(PaymentError::Unavailable { status: 401, .. }),
                    api_unwell: true,
                })) => {
                    failures += 1;
                    assert!(
                        failures <= 20,
                        "20 systemic refusals did not open the circuit"
                    );
                    let item = ledger.read(&order.order_id).await.unwrap();
                    assert!(
                        item.is_none(),
                        "the claim is released, never declined: {item:?}"
                    );
                }
                Err(GuardedError::CircuitOpen(open)) => break open,
                other => panic!("expected a failure or an open circuit: {other:?}"),
            }
        };
        assert!(failures >= 1);
        assert_eq!(&*open.circuit.name, CIRCUIT);

        // Open: the call is rejected before the ledger is asked. With the ledger gone, a
        // claim written first would answer "ledger unavailable" (and, had it been written,
        // could park the unsent order as unknown later).
        dynalite.stop();
        let progress = Progress::default();
        match declining
            .charge_guarded(&ledger, &order("after-open"), &progress)
            .await
        {
            Err(GuardedError::CircuitOpen(_)) => {}
            other => panic!("a rejected call must write nothing: {other:?}"),
        }
        assert_eq!(progress.phase(), Phase::Idle, "no attempt was made");
    }
}
