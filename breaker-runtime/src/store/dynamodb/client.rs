//! The DynamoDB client: where it comes from, how a client of the store's own is tuned,
//! and how its errors read.

use std::time::Duration;

use aws_config::SdkConfig;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::error::ProvideErrorMetadata;

use crate::store::{StoreError, StoreErrorKind};

/// Where the client comes from.
#[derive(Debug)]
pub(super) enum ClientSource {
    Given(Client),
    SdkConfig(Box<SdkConfig>),
    Environment,
}

/// An SDK error of `operation` on `table` as a store error, in one line an operator can
/// read: the service's code and message, or the chain of causes (no response dumps).
/// Its kind is told apart: throttling (the store can be reached), and what only a change
/// of configuration cures (a missing table, a missing permission).
pub(super) fn store_error<E>(table: &str, operation: &str, error: &E) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    let cause = match (error.code(), error.message()) {
        (Some(code), Some(message)) => format!("{code}: {message}"),
        (Some(code), None) => code.to_owned(),
        _ => causes(error),
    };
    let kind = kind_of(error.code());
    let mut message = format!("DynamoDB {operation} on table '{table}' failed: {cause}");
    match kind {
        // What to change, said where the operator reads it (the error, the log line).
        StoreErrorKind::AccessDenied => message.push_str(&format!(
            " (the caller needs dynamodb:{operation} on table '{table}')"
        )),
        StoreErrorKind::NotFound => message.push_str(&format!(
            " (no table '{table}' in this account and region: create it, or fix the name)"
        )),
        _ => {}
    }
    StoreError::with_kind(kind, message)
}

/// The kind of an error with the service's `code`.
fn kind_of(code: Option<&str>) -> StoreErrorKind {
    match code {
        Some(
            "ProvisionedThroughputExceededException"
            | "ThrottlingException"
            | "RequestLimitExceeded",
        ) => StoreErrorKind::Throttled,
        Some(
            "AccessDeniedException"
            | "UnrecognizedClientException"
            | "MissingAuthenticationTokenException"
            | "InvalidSignatureException"
            | "ExpiredTokenException",
        ) => StoreErrorKind::AccessDenied,
        Some("ResourceNotFoundException") => StoreErrorKind::NotFound,
        _ => StoreErrorKind::Other,
    }
}

/// A client tuned to fit in the breaker's store timeout (see "Retries and timeouts" on
/// `DynamoDbStore`).
pub(super) fn own_client(config: &SdkConfig) -> Client {
    let retry = RetryConfig::standard()
        .with_max_attempts(2)
        .with_initial_backoff(Duration::from_millis(20))
        .with_max_backoff(Duration::from_millis(100));
    let timeouts = TimeoutConfig::builder()
        .connect_timeout(Duration::from_millis(500))
        .build();
    let config = aws_sdk_dynamodb::config::Builder::from(config)
        .retry_config(retry)
        .timeout_config(timeouts)
        .build();
    Client::from_conf(config)
}

/// `error` and its sources, joined: `dispatch failure: io error: ... Connection refused`.
fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_code_an_operator_acts_on_has_its_kind() {
        let kinds = [
            ("ThrottlingException", StoreErrorKind::Throttled),
            ("AccessDeniedException", StoreErrorKind::AccessDenied),
            ("ResourceNotFoundException", StoreErrorKind::NotFound),
            ("InternalServerError", StoreErrorKind::Other),
        ];
        for (code, kind) in kinds {
            assert_eq!(kind_of(Some(code)), kind, "{code}");
        }
        assert_eq!(kind_of(None), StoreErrorKind::Other);
    }
}
