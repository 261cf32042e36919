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

use crate::order::Order;
use crate::text::truncate;

/// The header that carries the order id, so a retried or replayed charge is charged once.
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";

/// Default for `PAYMENT_TIMEOUT_MS`: the whole request, connect to last body byte.
const DEFAULT_TIMEOUT_MS: u64 = 3000;

/// Most of a response body read: a receipt is small; a larger body is cut, never buffered whole.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// Most of a response body quoted in an error or a log line.
pub const MAX_QUOTED_BYTES: usize = 256;

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
    /// The response body: JSON, or a string (cut at [`MAX_QUOTED_BYTES`]) if it was not JSON.
    pub body: Value,
}

/// Why a charge did not go through.
#[derive(Debug, thiserror::Error)]
pub enum PaymentError {
    /// No answer within the timeout: the request may have been charged.
    #[error("payment API timed out after {0:?}")]
    Timeout(Duration),
    /// No connection (refused, TLS failure): the request never left.
    #[error("payment API unreachable: {0}")]
    Unreachable(String),
    /// The request was sent but the answer was lost (reset, truncated): it may have been charged.
    #[error("payment API connection lost after the request was sent: {0}")]
    Interrupted(String),
    /// 5xx or 429: the API is unwell or shedding load, and did not charge.
    #[error("payment API unavailable: HTTP {status}: {body}")]
    Unavailable {
        /// The HTTP status.
        status: u16,
        /// The start of the response body, for the logs.
        body: String,
    },
    /// Another 4xx: the API refused this order (declined, invalid, ...). Final.
    #[error("payment API refused the order: HTTP {status}: {body}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// The start of the response body.
        body: String,
    },
}

impl PaymentError {
    /// True for the errors that say the downstream is unwell: they count toward opening the
    /// circuit. A refused order says nothing about the API's health.
    pub fn is_downstream_failure(&self) -> bool {
        !matches!(self, Self::Refused { .. })
    }

    /// False when the request may have been charged although no answer says so (a
    /// timeout, a connection lost after sending): such an attempt is never repeated blindly.
    pub fn outcome_known(&self) -> bool {
        !matches!(self, Self::Timeout(_) | Self::Interrupted(_))
    }
}

/// A missing or invalid `PAYMENT_API_URL` / `PAYMENT_TIMEOUT_MS`.
#[derive(Debug, thiserror::Error)]
#[error("payment client configuration: {0}")]
pub struct PaymentConfigError(String);

impl From<circuit_env::SettingError> for PaymentConfigError {
    fn from(error: circuit_env::SettingError) -> Self {
        Self(error.to_string())
    }
}

impl PaymentClient {
    /// A client for `PAYMENT_API_URL` (the URL charges are POSTed to) with the timeout
    /// `PAYMENT_TIMEOUT_MS` (default 3000, 1 to 60000).
    pub fn from_env() -> Result<Self, PaymentConfigError> {
        let url = circuit_env::setting::required("PAYMENT_API_URL")?;
        let timeout =
            circuit_env::setting::millis("PAYMENT_TIMEOUT_MS", DEFAULT_TIMEOUT_MS, 1..=60_000)?;
        Self::new(&url, timeout)
    }

    /// The whole-request timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
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

    /// POSTs the order's validated fields with the order id as idempotency key. Not guarded: the
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
            .body(Full::new(Bytes::from(order.to_json().to_string())))
            .map_err(|e| PaymentError::Unreachable(format!("invalid request: {e}")))?;
        let response = self.http.request(request).await.map_err(|e| {
            if e.is_connect() {
                PaymentError::Unreachable(error_chain(&e))
            } else {
                PaymentError::Interrupted(error_chain(&e))
            }
        })?;
        let status = response.status();
        let body = read_bounded(response.into_body()).await?;
        classify(status, &body)
    }
}

/// At most [`MAX_RESPONSE_BYTES`] of `body`; the rest is not read.
async fn read_bounded(mut body: hyper::body::Incoming) -> Result<Vec<u8>, PaymentError> {
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| PaymentError::Interrupted(error_chain(&e)))?;
        if let Ok(data) = frame.into_data() {
            let room = MAX_RESPONSE_BYTES - bytes.len();
            bytes.extend_from_slice(&data[..data.len().min(room)]);
            if bytes.len() == MAX_RESPONSE_BYTES {
                break;
            }
        }
    }
    Ok(bytes)
}

/// The start of `body` as text, cut at a character boundary within [`MAX_QUOTED_BYTES`].
fn quoted(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    if text.len() <= MAX_QUOTED_BYTES {
        return text.into_owned();
    }
    format!(
        "{} ({} bytes)",
        truncate(&text, MAX_QUOTED_BYTES),
        body.len()
    )
}

fn classify(status: StatusCode, body: &[u8]) -> Result<Receipt, PaymentError> {
    let text = || quoted(body);
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
        let timeout = Duration::from_millis(DEFAULT_TIMEOUT_MS);
        let err = PaymentClient::new("ftp://pay", timeout).unwrap_err();
        assert!(err.to_string().contains("http(s)"), "{err}");
        assert!(PaymentClient::new("http://127.0.0.1:9/charges", timeout).is_ok());
    }

    #[test]
    fn long_bodies_are_quoted_cut() {
        let body = "é".repeat(1000);
        let refused = classify(StatusCode::PAYMENT_REQUIRED, body.as_bytes()).unwrap_err();
        let message = refused.to_string();
        assert!(message.len() < MAX_QUOTED_BYTES + 80, "{message}");
        assert!(message.ends_with("… (2000 bytes)"), "{message}");
    }
}
