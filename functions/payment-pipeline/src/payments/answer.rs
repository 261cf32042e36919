//! What the payment API's answer means: a receipt, or an error sorted into "the
//! downstream is unwell" (it trips the circuit), "this order was refused" (it does not) and
//! "it may have charged" (the order is parked).

use std::time::Duration;

use hyper::StatusCode;
use serde_json::Value;

use crate::text::truncate;

/// Most of a response body quoted in an error or a log line.
pub const MAX_QUOTED_BYTES: usize = 256;

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
        /// A 429's or 503's `Retry-After`, in seconds (an HTTP date is not read): how long
        /// the provider asked to be left alone. The circuit opens for it.
        retry_after: Option<Duration>,
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

/// The seconds of a `Retry-After` header (`"20"`); `None` for an HTTP date or anything
/// else, which the circuit then treats as an ordinary failure.
///
/// ```
/// use std::time::Duration;
/// use payment_pipeline::retry_after_secs;
/// assert_eq!(retry_after_secs("20"), Some(Duration::from_secs(20)));
/// assert_eq!(retry_after_secs(" 3 "), Some(Duration::from_secs(3)));
/// assert_eq!(retry_after_secs("Wed, 21 Oct 2026 07:28:00 GMT"), None);
/// ```
pub fn retry_after_secs(header: &str) -> Option<Duration> {
    header.trim().parse().ok().map(Duration::from_secs)
}

impl PaymentError {
    /// How long the provider asked to be left alone: a 429's or 503's `Retry-After`.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Unavailable {
                status: 429 | 503,
                retry_after,
                ..
            } => *retry_after,
            _ => None,
        }
    }

    /// A 429 or 503 without `Retry-After`: the provider turned the call away for load.
    pub fn is_load_shed(&self) -> bool {
        matches!(
            self,
            Self::Unavailable {
                status: 429 | 503,
                retry_after: None,
                ..
            }
        )
    }

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
    /// [`PaymentClient::counts_against_api`](super::PaymentClient::counts_against_api)).
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

/// The start of `body` as text, cut at a character boundary within [`MAX_QUOTED_BYTES`].
pub(super) fn quoted(body: &[u8]) -> String {
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

pub(super) fn classify(status: StatusCode, body: &[u8]) -> Result<Receipt, PaymentError> {
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
            retry_after: None,
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

#[cfg(test)]
mod tests;
