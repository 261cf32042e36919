//! The payment API client: one POST per charge, with a timeout, and errors sorted into
//! "the downstream is unwell" (they trip the circuit) and "this order was refused" (they don't).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode, Uri};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use super::refusals::RecentRefusals;
use crate::order::Order;
use crate::text::truncate;

/// The header that carries the order id, so a retried or replayed charge is charged once.
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";

/// Default for `PAYMENT_TIMEOUT_MS`: the whole request, connect to last body byte.
const DEFAULT_TIMEOUT_MS: u64 = 3000;

/// Default for `PAYMENT_CONNECT_TIMEOUT_MS`: the TCP connect alone. A connection that does
/// not open in time was never sent: the order is known not charged, not parked.
const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 1000;

/// Most of a response body read: a receipt is small; a larger body is cut, never buffered whole.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// Most of a response body quoted in an error or a log line.
pub const MAX_QUOTED_BYTES: usize = 256;

/// Calls the payment API. Cheap to clone; build it once in `main`.
#[derive(Debug, Clone)]
pub struct PaymentClient {
    url: Uri,
    timeout: Duration,
    deduplicates: bool,
    http: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    refusals: Arc<Mutex<RecentRefusals>>,
}

/// What the payment API answered to an accepted charge.
#[derive(Debug, Clone, PartialEq)]
pub struct Receipt {
    /// The HTTP status (2xx).
    pub status: u16,
    /// The response body: JSON, or a string (cut at [`MAX_QUOTED_BYTES`]) if it was not JSON.
    pub body: Value,
}

impl Receipt {
    /// What the ledger keeps of it: the provider's charge id (`id` or `charge_id`, a code-like
    /// string), never the rest of the body.
    pub fn reference(&self) -> String {
        ["id", "charge_id"]
            .into_iter()
            .filter_map(|name| self.body.get(name).and_then(Value::as_str))
            .find(|id| is_code(id))
            .map(|id| format!("HTTP {} {id}", self.status))
            .unwrap_or_else(|| format!("HTTP {}", self.status))
    }
}

/// Why a charge did not go through. The display names the status and the provider's error
/// code, never the response body: it goes to logs and to the ledger's `detail`.
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
    /// An error answer given after the request reached the provider, which may have
    /// committed the charge first: 500, 502, 504 (a load balancer that gave up waiting), or
    /// 409 (the provider's answer to a concurrent request with the same idempotency key).
    /// Parked as unknown, unless the provider deduplicates on the idempotency key
    /// (`PAYMENT_API_DEDUPLICATES`): then it is [`Unavailable`](Self::Unavailable), retried
    /// later with the same key.
    #[error(
        "payment API answered HTTP {status}{} after the request was sent: it may have charged",
        code_suffix(code)
    )]
    Ambiguous {
        /// The HTTP status.
        status: u16,
        /// The provider's error code, if its body carried one.
        code: Option<String>,
    },
    /// Any answer but a charge, this order's decline or an ambiguous one: 503, 429, a
    /// redirect, 401/403 (rotated credentials, a WAF rule), 404 (a wrong path), 408, 400 or a
    /// 422 without a decline code (see [`is_request_refusal`](Self::is_request_refusal)).
    /// The API did not charge this order.
    #[error("payment API unavailable: HTTP {status}{}", code_suffix(code))]
    Unavailable {
        /// The HTTP status.
        status: u16,
        /// The provider's error code, if its body carried one.
        code: Option<String>,
    },
    /// The API declined this order (see [`is_order_decline`]). Final.
    #[error("payment API declined the order: HTTP {status}{}", code_suffix(code))]
    Declined {
        /// The HTTP status.
        status: u16,
        /// The provider's decline or error code, if its body carried one.
        code: Option<String>,
        /// The start of the response body, for the caller's answer only (never logged).
        body: String,
    },
}

fn code_suffix(code: &Option<String>) -> String {
    code.as_ref()
        .map(|code| format!(" ({code})"))
        .unwrap_or_default()
}

impl PaymentError {
    /// True for the errors that say the downstream is unwell: they count toward opening the
    /// circuit. A declined order says nothing about the API's health.
    pub fn is_downstream_failure(&self) -> bool {
        !matches!(self, Self::Declined { .. })
    }

    /// False when the request may have been charged although no answer says so (a
    /// timeout, a connection lost after sending): such an attempt is never repeated blindly.
    pub fn outcome_known(&self) -> bool {
        !matches!(
            self,
            Self::Timeout(_) | Self::Interrupted(_) | Self::Ambiguous { .. }
        )
    }

    /// A 400, or a 422 without a decline code: the API refused the request's shape, this
    /// order's alone or every order's (an API change). It counts toward opening the circuit
    /// only when another order met the same refusal lately (see
    /// [`PaymentClient::counts_against_api`]).
    pub fn is_request_refusal(&self) -> bool {
        matches!(
            self,
            Self::Unavailable {
                status: 400 | 422,
                ..
            }
        )
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
        let body = read_bounded(response.into_body()).await?;
        match classify(status, &body) {
            Err(PaymentError::Ambiguous { status, code }) if self.deduplicates => {
                Err(PaymentError::Unavailable { status, code })
            }
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
    if status.is_success() {
        let body = serde_json::from_slice(body).unwrap_or_else(|_| Value::String(quoted(body)));
        return Ok(Receipt {
            status: status.as_u16(),
            body,
        });
    }
    let json: Option<Value> = serde_json::from_slice(body).ok();
    let code = json.as_ref().and_then(provider_code);
    if is_order_decline(status, json.as_ref()) {
        Err(PaymentError::Declined {
            status: status.as_u16(),
            code,
            body: quoted(body),
        })
    } else if is_ambiguous(status) {
        Err(PaymentError::Ambiguous {
            status: status.as_u16(),
            code,
        })
    } else {
        Err(PaymentError::Unavailable {
            status: status.as_u16(),
            code,
        })
    }
}

/// The order-level decline, the only final answer: 402 (Payment Required, the status payment
/// APIs reserve for a declined payment: nothing systemic answers it), or 422 whose JSON body
/// carries a `decline_code` (top level or under `error`): the API understood the request and
/// refused this payment. Any other refusal (auth, routing, redirects, timeouts, conflicts, a
/// 400 or a 422 about the request's shape) would refuse every order alike: a downstream failure.
pub fn is_order_decline(status: StatusCode, body: Option<&Value>) -> bool {
    match status {
        StatusCode::PAYMENT_REQUIRED => true,
        StatusCode::UNPROCESSABLE_ENTITY => body.is_some_and(|body| {
            string_field(body, "decline_code").is_some()
                || body
                    .get("error")
                    .is_some_and(|error| string_field(error, "decline_code").is_some())
        }),
        _ => false,
    }
}

/// An error the provider (or a load balancer in front of it) may give after committing the
/// charge: 500 (a crash after the commit), 502 and 504 (the proxy lost or gave up on the
/// answer), 409 (a concurrent request with the same idempotency key is being processed).
/// 503 and 429 say the request was turned away before any work; 4xx refusals are about the
/// request itself.
pub fn is_ambiguous(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::INTERNAL_SERVER_ERROR
            | StatusCode::BAD_GATEWAY
            | StatusCode::GATEWAY_TIMEOUT
            | StatusCode::CONFLICT
    )
}

/// The provider's error code from a JSON body (`decline_code`, `code`, `error_code`, at top
/// level or under `error`), if it looks like a code: at most 64 characters of
/// `[A-Za-z0-9_.-]`. Anything else in the body is not kept.
fn provider_code(body: &Value) -> Option<String> {
    let scopes = [Some(body), body.get("error")];
    scopes
        .into_iter()
        .flatten()
        .flat_map(|scope| {
            ["decline_code", "code", "error_code"]
                .into_iter()
                .filter_map(move |name| string_field(scope, name))
        })
        .find(|code| is_code(code))
        .map(str::to_owned)
}

/// 1 to 64 characters of `[A-Za-z0-9_.-]`: an identifier, not prose or personal data.
fn is_code(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 64
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

fn string_field<'a>(value: &'a Value, name: &str) -> Option<&'a str> {
    value.get(name).and_then(Value::as_str)
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
