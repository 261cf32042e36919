//! Why a warm-up failed: a configuration only a change cures (stop the function at init),
//! or a store that did not answer (the circuits fail open).

use crate::default_store::DefaultStoreError;
use crate::store::{StoreError, StoreErrorKind};

/// What [`warm_up`](crate::warm_up) and [`WarmUp::run`](crate::WarmUp::run) answer on
/// failure. Two kinds of failure need two answers:
///
/// - a misconfiguration ([`is_misconfiguration`](Self::is_misconfiguration)): no table
///   configured inside Lambda, a table that does not exist, or the function's role denied
///   access to it. Every call would fail open, in every execution environment, until the
///   configuration changes: stop the function at init, so the deployment fails loudly;
/// - an unavailable store (an outage, throttling, the warm-up's timeout): the circuits fail
///   open, and each reads the store on its first call.
///
/// ```
/// use breaker_runtime::WarmUpError;
/// use breaker_runtime::store::{StoreError, StoreErrorKind};
///
/// let missing = WarmUpError::from(StoreError::with_kind(
///     StoreErrorKind::NotFound,
///     "DynamoDB BatchGetItem on table 'circuit-breakers' failed: ResourceNotFoundException",
/// ));
/// assert!(missing.is_misconfiguration());
/// assert!(missing.to_string().contains("table 'circuit-breakers'"));
///
/// let outage = WarmUpError::from(StoreError::with_kind(StoreErrorKind::Timeout, "timed out"));
/// assert!(!outage.is_misconfiguration());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WarmUpError {
    /// Inside a Lambda function, the environment names no usable default store.
    #[error(transparent)]
    DefaultStore(DefaultStoreError),
    /// The store refused for its configuration: the table does not exist
    /// ([`StoreErrorKind::NotFound`]) or access to it is denied
    /// ([`StoreErrorKind::AccessDenied`]). The DynamoDB store's message names the table and,
    /// for access denied, the missing permission.
    #[error("circuit breaker misconfigured: {0}")]
    Misconfigured(StoreError),
    /// The store did not answer (unreachable, throttled, past the warm-up's timeout): the
    /// circuits fail open and read the store on their first call.
    #[error("circuit breaker store unavailable at init (circuits fail open): {0}")]
    Unavailable(StoreError),
}

impl WarmUpError {
    /// Whether only a change of configuration cures it: stop the function on it.
    pub fn is_misconfiguration(&self) -> bool {
        !matches!(self, Self::Unavailable(_))
    }

    /// The store's error, unless the default store could not be built at all.
    pub fn store_error(&self) -> Option<&StoreError> {
        match self {
            Self::DefaultStore(_) => None,
            Self::Misconfigured(error) | Self::Unavailable(error) => Some(error),
        }
    }
}

impl From<StoreError> for WarmUpError {
    /// A missing table or denied access is a misconfiguration; any other error, an
    /// unavailable store.
    fn from(error: StoreError) -> Self {
        match error.kind() {
            StoreErrorKind::NotFound | StoreErrorKind::AccessDenied => Self::Misconfigured(error),
            _ => Self::Unavailable(error),
        }
    }
}

impl From<DefaultStoreError> for WarmUpError {
    fn from(error: DefaultStoreError) -> Self {
        Self::DefaultStore(error)
    }
}
