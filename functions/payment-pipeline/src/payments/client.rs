//! The payment API client: one POST per charge, with a timeout, and errors sorted into
//! "the downstream is unwell" (they trip the circuit) and "this order was refused" (they don't).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, Uri};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::answer::{PaymentError, Receipt, classify, retry_after_secs};
use super::refusals::RecentRefusals;
use crate::order::Order;

/// The header that carries the order id, so a retried or replayed charge is charged once.
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";

/// Default for `PAYMENT_TIMEOUT_MS`: the whole request, connect to last body byte.
const DEFAULT_TIMEOUT_MS: u64 = 3000;

/// Default for `PAYMENT_CONNECT_TIMEOUT_MS`: the TCP connect alone. A connection that does
/// not open in time was never sent: the order is known not charged, not parked.
const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 1000;

/// Most of a response body read: a receipt is small; a larger body is cut, never buffered whole.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// Calls the payment API. Cheap to clone; build it once in `main`.
#[derive(Debug, Clone)]
pub struct PaymentClient {
    url: Uri,
    timeout: Duration,
    deduplicates: bool,
    http: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    refusals: Arc<Mutex<RecentRefusals>>,
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
    /// `PAYMENT_TIMEOUT_MS` (default 3000, 1 to 60000) and the connect timeout
    /// `PAYMENT_CONNECT_TIMEOUT_MS` (default 1000, 1 to 60000, at most the timeout). The URL
    /// must be `https`; plain `http` only to a loopback host or to the one host named by
    /// `PAYMENT_API_ALLOW_HTTP_HOST` (a local stack reached from a container).
    /// `PAYMENT_API_DEDUPLICATES` (default `false`) says whether the provider answers a
    /// repeated idempotency key with the first request's outcome: see
    /// [`deduplicating`](Self::deduplicating).
    pub fn from_env() -> Result<Self, PaymentConfigError> {
        let url = circuit_env::setting::required("PAYMENT_API_URL")?;
        let timeout =
            circuit_env::setting::millis("PAYMENT_TIMEOUT_MS", DEFAULT_TIMEOUT_MS, 1..=60_000)?;
        let connect = circuit_env::setting::millis(
            "PAYMENT_CONNECT_TIMEOUT_MS",
            DEFAULT_CONNECT_TIMEOUT_MS,
            1..=60_000,
        )?;
        let deduplicates = circuit_env::setting::flag("PAYMENT_API_DEDUPLICATES", false)?;
        let allow_http = std::env::var(ALLOW_HTTP_HOST).ok();
        Ok(
            Self::with_connect_timeout(&url, timeout, connect, allow_http.as_deref())?
                .deduplicating(deduplicates),
        )
    }

    /// Whether the provider deduplicates on the idempotency key (Stripe-style: a repeated
    /// key gets the first request's outcome, a concurrent one a 409). `false` (the default):
    /// an ambiguous answer (500, 502, 504, 409) parks the order as unknown, the same as a
    /// timeout, and exactly-once rests on the ledger alone. `true`: such an answer is
    /// taken as not charged and the order retried later with the same key, so
    /// exactly-once rests on the provider's deduplication for those answers.
    pub fn deduplicating(mut self, deduplicates: bool) -> Self {
        self.deduplicates = deduplicates;
        self
    }

    /// Whether a failed charge of `order` counts toward opening the circuit: every failure
    /// but a [request refusal](PaymentError::is_request_refusal) that no other order met
    /// within the last minute in this environment (one order's shape, not the API's).
    pub fn counts_against_api(&self, error: &PaymentError, order: &Order) -> bool {
        let (true, PaymentError::Unavailable { status, .. }) = (error.is_request_refusal(), error)
        else {
            return error.is_downstream_failure();
        };
        let corroborated = self
            .refusals
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .corroborated(*status, &order.order_id, Instant::now());
        if !corroborated {
            tracing::warn!(order_id = %order.order_id, %error, "the payment API refused this order alone: not counted against the API");
        }
        corroborated
    }

    /// The whole-request timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// A client that POSTs charges to `url`: `https`, or `http` to a loopback host or to
    /// `allow_http_host` (blank: none).
    pub fn new(
        url: &str,
        timeout: Duration,
        allow_http_host: Option<&str>,
    ) -> Result<Self, PaymentConfigError> {
        let connect = Duration::from_millis(DEFAULT_CONNECT_TIMEOUT_MS);
        Self::with_connect_timeout(url, timeout, connect, allow_http_host)
    }

    /// [`new`](Self::new) whose TCP connect is bounded by `connect` (at most `timeout`): a
    /// connection that does not open in time ends as
    /// [`Unreachable`](PaymentError::Unreachable), never sent, rather than as a timeout
    /// whose order would be parked.
    pub fn with_connect_timeout(
        url: &str,
        timeout: Duration,
        connect: Duration,
        allow_http_host: Option<&str>,
    ) -> Result<Self, PaymentConfigError> {
        let url: Uri = url
            .parse()
            .map_err(|e| PaymentConfigError(format!("PAYMENT_API_URL {url:?}: {e}")))?;
        check_scheme(&url, allow_http_host)?;
        // aws-lc-rs: the provider the AWS SDK already links, so TLS is compiled in once.
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_connect_timeout(Some(connect.min(timeout)));
        let connector = HttpsConnectorBuilder::new()
            .with_provider_and_native_roots(rustls::crypto::aws_lc_rs::default_provider())
            .map_err(|e| PaymentConfigError(format!("no TLS root certificates: {e}")))?
            .https_or_http()
            .enable_http1()
            .wrap_connector(tcp);
        let http = Client::builder(TokioExecutor::new()).build(connector);
        Ok(Self {
            url,
            timeout,
            deduplicates: false,
            http,
            refusals: Arc::default(),
        })
    }

    /// POSTs the order's validated fields with the order id as idempotency key, within
    /// [`timeout`](Self::timeout). Not guarded: the functions charge behind the circuit.
    pub async fn charge(&self, order: &Order) -> Result<Receipt, PaymentError> {
        self.charge_within(order, self.timeout).await
    }

    /// [`charge`](Self::charge) within `bound` too, when it is shorter than the timeout
    /// (what is left of an attempt's lease or of the invocation).
    pub async fn charge_within(
        &self,
        order: &Order,
        bound: Duration,
    ) -> Result<Receipt, PaymentError> {
        let timeout = self.timeout.min(bound);
        match tokio::time::timeout(timeout, self.post(order)).await {
            Ok(result) => result,
            Err(_) => Err(PaymentError::Timeout(timeout)),
        }
    }

    async fn post(&self, order: &Order) -> Result<Receipt, PaymentError> {
        let request = Request::builder()
            .method(Method::POST)
            .uri(self.url.clone())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(IDEMPOTENCY_KEY_HEADER, order.order_id.as_str())
            .body(Full::new(Bytes::from(order.to_body())))
            .map_err(|e| PaymentError::Unreachable(format!("invalid request: {e}")))?;
        let response = self.http.request(request).await.map_err(|e| {
            if e.is_connect() {
                PaymentError::Unreachable(error_chain(&e))
            } else {
                PaymentError::Interrupted(error_chain(&e))
            }
        })?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(hyper::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(retry_after_secs);
        let body = read_bounded(response.into_body()).await?;
        match classify(status, &body) {
            Err(PaymentError::Ambiguous { status, code }) if self.deduplicates => {
                Err(PaymentError::Unavailable {
                    status,
                    code,
                    retry_after: None,
                })
            }
            Err(PaymentError::Unavailable { status, code, .. }) => Err(PaymentError::Unavailable {
                status,
                code,
                retry_after,
            }),
            other => other,
        }
    }
}

/// The variable naming the one non-loopback host `PAYMENT_API_URL` may reach over plain http.
pub const ALLOW_HTTP_HOST: &str = "PAYMENT_API_ALLOW_HTTP_HOST";

/// `https`; `http` only to loopback (`localhost`, 127.0.0.0/8, `::1`) or `allow_http_host`:
/// card payments never cross a network in clear text by mistake.
fn check_scheme(url: &Uri, allow_http_host: Option<&str>) -> Result<(), PaymentConfigError> {
    let host = url.host().unwrap_or_default();
    match url.scheme_str() {
        Some("https") => Ok(()),
        Some("http") if is_loopback(host) => Ok(()),
        Some("http")
            if allow_http_host.map(str::trim).is_some_and(|allowed| {
                !allowed.is_empty() && allowed.eq_ignore_ascii_case(host)
            }) =>
        {
            Ok(())
        }
        Some("http") => Err(PaymentConfigError(format!(
            "PAYMENT_API_URL={url}: plain http only to a loopback host or to the host named by {ALLOW_HTTP_HOST}; use https"
        ))),
        _ => Err(PaymentConfigError(format!(
            "PAYMENT_API_URL must be an https URL, got {url}"
        ))),
    }
}

fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
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
mod tests;
