//! Why a cost report could not be produced, and which of those reasons count toward
//! opening the `cost-explorer` circuit.

use lambda_runtime::Diagnostic;

/// Every way a cost report can fail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CostError {
    /// The event is not a valid request; nothing was called.
    #[error("invalid request: {0}")]
    Invalid(String),
    /// Cost Explorer is throttling, unwell, slow or unreachable: may work later.
    #[error("Cost Explorer is unavailable: {0}")]
    Transient(String),
    /// Cost Explorer refused this request (validation, data unavailable, expired bill...).
    #[error("Cost Explorer rejected the request: {code}: {message}")]
    Rejected { code: String, message: String },
    /// No live answer and no snapshot to fall back on.
    #[error(
        "the cache is cold: Cost Explorer is unavailable ({reason}) and no snapshot of {period} \
         is stored; send {{\"prime\": true}} once it recovers"
    )]
    ColdCache { period: String, reason: String },
}

impl CostError {
    /// The errors that say Cost Explorer is unwell: they trip the circuit and are answered
    /// from the snapshot. Validation-type rejections do neither.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Transient(_))
    }
}

/// A call the breaker abandoned at the invocation's deadline: Cost Explorer was too slow,
/// so the snapshot answers, as for any transient failure.
impl From<breaker_runtime::CallAbandonedError> for CostError {
    fn from(error: breaker_runtime::CallAbandonedError) -> Self {
        Self::Transient(error.to_string())
    }
}

/// `handled = is_transient` takes a `fn(&E) -> bool`.
pub fn is_transient(error: &CostError) -> bool {
    error.is_transient()
}

impl From<CostError> for Diagnostic {
    fn from(error: CostError) -> Self {
        let error_type = match &error {
            CostError::Invalid(_) => "InvalidRequest",
            CostError::Transient(_) => "CostExplorerUnavailable",
            CostError::Rejected { .. } => "CostExplorerRejected",
            CostError::ColdCache { .. } => "CacheCold",
        };
        Diagnostic {
            error_type: error_type.into(),
            error_message: error.to_string(),
        }
    }
}
