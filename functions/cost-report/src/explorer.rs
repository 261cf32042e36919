//! Cost Explorer: the client (always `us-east-1`, bounded retries and timeouts), the
//! paginated `GetCostAndUsage` call, and the sorting of its errors.

use std::time::Duration;

use aws_config::SdkConfig;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_sdk_costexplorer::Client;
use aws_sdk_costexplorer::config::Region;
use aws_sdk_costexplorer::config::http::HttpResponse;
use aws_sdk_costexplorer::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_costexplorer::operation::get_cost_and_usage::GetCostAndUsageError;
use aws_sdk_costexplorer::types::{
    DateInterval, Granularity, GroupDefinition, GroupDefinitionType,
};

use crate::error::CostError;
use crate::rate_limit::TokenBucket;
use crate::report::{CostReport, CostTally};
use crate::request::Period;

const METRIC: &str = "UnblendedCost";

/// Most pages read for one report. The breaker abandons a call still paging at the
/// invocation's deadline, but a service that kept answering with a next token would keep
/// every invocation busy until then, and each would count as a failure: a bound on pages
/// ends it sooner, as an error of its own. A year of daily costs by service fits in a few
/// dozen pages.
pub const MAX_PAGES: usize = 100;

/// Error codes that mean "slow down": they count toward opening the circuit.
const THROTTLING_CODES: &[&str] = &[
    "ThrottlingException",
    "Throttling",
    "LimitExceededException",
    "RequestLimitExceeded",
    "TooManyRequestsException",
];

/// Retry and timeout settings, from `CE_MAX_ATTEMPTS`, `CE_INITIAL_BACKOFF_MS`,
/// `CE_ATTEMPT_TIMEOUT_MS`, `CE_OPERATION_TIMEOUT_MS`, `CE_REQUESTS_PER_SECOND`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExplorerSettings {
    pub max_attempts: u32,
    pub initial_backoff: Duration,
    pub attempt_timeout: Duration,
    pub operation_timeout: Duration,
    pub requests_per_second: f64,
}

impl ExplorerSettings {
    /// The settings of the environment; a value that does not parse or is out of range
    /// is an error naming the variable and the value.
    pub fn from_env() -> Result<Self, circuit_env::SettingError> {
        use circuit_env::setting::{millis, number};
        Ok(Self {
            max_attempts: number("CE_MAX_ATTEMPTS", 3, 1..=10)? as u32,
            initial_backoff: millis("CE_INITIAL_BACKOFF_MS", 500, 1..=60_000)?,
            attempt_timeout: millis("CE_ATTEMPT_TIMEOUT_MS", 5_000, 100..=60_000)?,
            operation_timeout: millis("CE_OPERATION_TIMEOUT_MS", 15_000, 100..=300_000)?,
            // The GetCostAndUsage quota is a handful of requests per second per account.
            requests_per_second: number("CE_REQUESTS_PER_SECOND", 2, 1..=100)? as f64,
        })
    }
}

/// Cost Explorer behind the client-side rate limit.
#[derive(Debug)]
pub struct CostExplorer {
    client: Client,
    bucket: TokenBucket,
}

impl CostExplorer {
    pub fn new(sdk: &SdkConfig, settings: &ExplorerSettings) -> Self {
        // Cost Explorer has one endpoint, in us-east-1, whatever the function's region.
        let config = aws_sdk_costexplorer::config::Builder::from(sdk)
            .region(Region::from_static("us-east-1"))
            .retry_config(
                RetryConfig::standard()
                    .with_max_attempts(settings.max_attempts)
                    .with_initial_backoff(settings.initial_backoff)
                    .with_max_backoff(settings.initial_backoff * 8),
            )
            .timeout_config(
                TimeoutConfig::builder()
                    .operation_attempt_timeout(settings.attempt_timeout)
                    .operation_timeout(settings.operation_timeout)
                    .build(),
            )
            .build();
        Self {
            client: Client::from_conf(config),
            bucket: TokenBucket::new(settings.requests_per_second, 2),
        }
    }

    /// Daily unblended cost per service over `period`, every page.
    pub async fn cost_and_usage(
        &self,
        period: &Period,
        fetched_at: u64,
    ) -> Result<CostReport, CostError> {
        let interval = DateInterval::builder()
            .start(&period.start)
            .end(&period.end)
            .build()
            .map_err(|e| CostError::Invalid(e.to_string()))?;
        let by_service = GroupDefinition::builder()
            .r#type(GroupDefinitionType::Dimension)
            .key("SERVICE")
            .build();
        let mut tally = CostTally::default();
        let mut next_page_token: Option<String> = None;
        let mut pages = 0;
        loop {
            pages += 1;
            self.bucket.acquire().await;
            let page = self
                .client
                .get_cost_and_usage()
                .time_period(interval.clone())
                .granularity(Granularity::Daily)
                .metrics(METRIC)
                .group_by(by_service.clone())
                .set_next_page_token(next_page_token.take())
                .send()
                .await
                .map_err(classify)?;
            for day in page.results_by_time() {
                for group in day.groups() {
                    let service = group.keys().first().map_or("(unknown)", String::as_str);
                    if let Some(metric) = group.metrics().and_then(|m| m.get(METRIC)) {
                        let amount = metric.amount().and_then(|a| a.parse().ok()).unwrap_or(0.0);
                        tally.add(service, amount, metric.unit().unwrap_or("USD"));
                    }
                }
            }
            match next_page(page.next_page_token(), pages)? {
                Some(token) => next_page_token = Some(token),
                None => break,
            }
        }
        Ok(tally.into_report(period.clone(), fetched_at))
    }
}

/// The token of the page after the `pages`-th, `None` after the last page; an error once
/// [`MAX_PAGES`] were read and there are more (transient: it counts toward opening, and the
/// caller answers its stale snapshot).
fn next_page(token: Option<&str>, pages: usize) -> Result<Option<String>, CostError> {
    match token {
        Some(token) if !token.is_empty() && pages >= MAX_PAGES => Err(CostError::Transient(
            format!("GetCostAndUsage still paging after {MAX_PAGES} pages"),
        )),
        Some(token) if !token.is_empty() => Ok(Some(token.to_owned())),
        _ => Ok(None),
    }
}

/// Throttling, 5xx, timeouts and connection failures are transient; what Cost Explorer
/// refuses on its merits (`ValidationException`, `DataUnavailableException`,
/// `BillExpirationException`, `InvalidNextTokenException`, `RequestChangedException`, ...)
/// is not.
fn classify(error: SdkError<GetCostAndUsageError, HttpResponse>) -> CostError {
    let detail = aws_sdk_costexplorer::error::DisplayErrorContext(&error).to_string();
    match &error {
        SdkError::ServiceError(service) => {
            let code = service.err().code().unwrap_or_default();
            let status = service.raw().status();
            let unwell = THROTTLING_CODES.contains(&code)
                || status.is_server_error()
                || status.as_u16() == 429;
            if unwell {
                CostError::Transient(detail)
            } else {
                CostError::Rejected {
                    code: code.to_owned(),
                    message: service.err().message().unwrap_or_default().to_owned(),
                }
            }
        }
        SdkError::ConstructionFailure(_) => CostError::Rejected {
            code: "ConstructionFailure".into(),
            message: detail,
        },
        // Timeouts, dispatch (connection) failures, unreadable responses.
        _ => CostError::Transient(detail),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paging_ends_at_the_last_page_or_at_the_bound() {
        assert_eq!(next_page(Some("t2"), 1).unwrap().as_deref(), Some("t2"));
        assert_eq!(next_page(Some(""), 1).unwrap(), None);
        assert_eq!(next_page(None, 1).unwrap(), None);
        assert!(next_page(None, MAX_PAGES).unwrap().is_none());
        let runaway = next_page(Some("again"), MAX_PAGES).unwrap_err();
        assert!(matches!(runaway, CostError::Transient(_)), "{runaway:?}");
    }
}
