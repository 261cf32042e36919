//! The payment API client: one POST per charge, with a timeout, and errors sorted into
//! "the downstream is unwell" (they trip the circuit) and "this order was refused" (they don't).

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode, Uri};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use crate::Order;

/// The header that carries the order id, so a retried or replayed charge is charged once.
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";

/// Default for `PAYMENT_TIMEOUT_MS`: the whole request, connect to last body byte.
const DEFAULT_TIMEOUT: Duration = Duration::from_millis(3000);

/// Calls the payment API. Cheap to clone; build it once in `main`.
#[derive(Debug, Clone)]
pub struct PaymentClient {
    url: Uri,
    timeout: Duration,
    http: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

/// What the payment API answered to an accepted charge.
#[derive(Debug, Clone, PartialEq)]
pub struct Receipt {
    /// The HTTP status (2xx).
    pub status: u16,
    /// The response body: JSON, or a string if it was not JSON.
    pub body: Value,
}

/// Why a charge did not go through.
#[derive(Debug, thiserror::Error)]
pub enum PaymentError {
    /// No answer within the timeout.
    #[error("payment API timed out after {0:?}")]
    Timeout(Duration),
    /// Connection refused, reset, or TLS failure.
    #[error("payment API unreachable: {0}")]
    Unreachable(String),
    /// 5xx or 429: the API is unwell or shedding load.
    #[error("payment API unavailable: HTTP {status}: {body}")]
    Unavailable {
        /// The HTTP status.
        status: u16,
        /// The response body, for the logs.
        body: String,
    },
    /// Another 4xx: the API refused this order (declined, invalid, ...).
    #[error("payment API refused the order: HTTP {status}: {body}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// The response body.
        body: String,
    },
}

impl PaymentError {
    /// True for the errors that say the downstream is unwell: they count toward opening the
    /// circuit. A refused order says nothing about the API's health.
    pub fn is_downstream_failure(&self) -> bool {
        !matches!(self, Self::Refused { .. })
    }
}

/// A missing or invalid `PAYMENT_API_URL` / `PAYMENT_TIMEOUT_MS`.
#[derive(Debug, thiserror::Error)]
#[error("payment client configuration: {0}")]
pub struct PaymentConfigError(String);

impl PaymentClient {
    /// A client for `PAYMENT_API_URL` (the URL charges are POSTed to) with the timeout
    /// `PAYMENT_TIMEOUT_MS` (default 3000).
    pub fn from_env() -> Result<Self, PaymentConfigError> {
        let url = std::env::var("PAYMENT_API_URL")
            .map_err(|_| PaymentConfigError("PAYMENT_API_URL is not set".into()))?;
        let timeout = match std::env::var("PAYMENT_TIMEOUT_MS") {
            Ok(ms) => Duration::from_millis(ms.parse().map_err(|_| {
                PaymentConfigError(format!(
                    "PAYMENT_TIMEOUT_MS must be milliseconds, got {ms:?}"
                ))
            })?),
            Err(_) => DEFAULT_TIMEOUT,
        };
        Self::new(&url, timeout)
    }

    /// A client that POSTs charges to `url` (http or https).
    pub fn new(url: &str, timeout: Duration) -> Result<Self, PaymentConfigError> {
        let url: Uri = url
            .parse()
            .map_err(|e| PaymentConfigError(format!("PAYMENT_API_URL {url:?}: {e}")))?;
        if !matches!(url.scheme_str(), Some("http" | "https")) {
            return Err(PaymentConfigError(format!(
                "PAYMENT_API_URL must be an http(s) URL, got {url}"
            )));
        }
        // aws-lc-rs: the provider the AWS SDK already links, so TLS is compiled in once.
        let connector = HttpsConnectorBuilder::new()
            .with_provider_and_native_roots(rustls::crypto::aws_lc_rs::default_provider())
            .map_err(|e| PaymentConfigError(format!("no TLS root certificates: {e}")))?
            .https_or_http()
            .enable_http1()
            .build();
        let http = Client::builder(TokioExecutor::new()).build(connector);
        Ok(Self { url, timeout, http })
    }

    /// POSTs `order.payload` with the order id as idempotency key. Not guarded: the
    /// functions call [`charge_guarded`](Self::charge_guarded), behind the circuit.
    pub async fn charge(&self, order: &Order) -> Result<Receipt, PaymentError> {
        match tokio::time::timeout(self.timeout, self.post(order)).await {
            Ok(result) => result,
            Err(_) => Err(PaymentError::Timeout(self.timeout)),
        }
    }

    async fn post(&self, order: &Order) -> Result<Receipt, PaymentError> {
        let request = Request::builder()
            .method(Method::POST)
            .uri(self.url.clone())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(IDEMPOTENCY_KEY_HEADER, order.order_id.as_str())
            .body(Full::new(Bytes::from(order.payload.to_string())))
            .map_err(|e| PaymentError::Unreachable(format!("invalid request: {e}")))?;
        let response = self
            .http
            .request(request)
            .await
            .map_err(|e| PaymentError::Unreachable(error_chain(&e)))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| PaymentError::Unreachable(error_chain(&e)))?
            .to_bytes();
        classify(status, &body)
    }
}

fn classify(status: StatusCode, body: &[u8]) -> Result<Receipt, PaymentError> {
    let text = || String::from_utf8_lossy(body).into_owned();
    if status.is_success() {
        let body = serde_json::from_slice(body).unwrap_or_else(|_| Value::String(text()));
        Ok(Receipt {
            status: status.as_u16(),
            body,
        })
    } else if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
        Err(PaymentError::Unavailable {
            status: status.as_u16(),
            body: text(),
        })
    } else {
        Err(PaymentError::Refused {
            status: status.as_u16(),
            body: text(),
        })
    }
}

/// The error and its sources: hyper's top-level message alone ("client error (Connect)")
/// hides the cause.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_sort_into_receipts_outages_and_refusals() {
        let ok = classify(StatusCode::CREATED, br#"{"id":"ch_1"}"#).unwrap();
        assert_eq!(ok.body["id"], "ch_1");
        for status in [
            StatusCode::SERVICE_UNAVAILABLE,
            StatusCode::TOO_MANY_REQUESTS,
        ] {
            let err = classify(status, b"busy").unwrap_err();
            assert!(err.is_downstream_failure(), "{err}");
        }
        let refused = classify(StatusCode::PAYMENT_REQUIRED, b"declined").unwrap_err();
        assert!(!refused.is_downstream_failure());
        assert!(refused.to_string().contains("declined"));
    }

    #[test]
    fn only_http_urls_are_accepted() {
        let err = PaymentClient::new("ftp://pay", DEFAULT_TIMEOUT).unwrap_err();
        assert!(err.to_string().contains("http(s)"), "{err}");
        assert!(PaymentClient::new("http://127.0.0.1:9/charges", DEFAULT_TIMEOUT).is_ok());
    }
}
