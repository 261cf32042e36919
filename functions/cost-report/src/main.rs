//! `cost-report`: daily AWS costs per service from Cost Explorer, behind the
//! `cost-explorer` circuit. Every live answer is stored as a snapshot; while Cost Explorer
//! throttles or is down (or the circuit is open), the snapshot is answered, flagged
//! `"stale": true`.
//!
//! Event: `{"start": "YYYY-MM-DD", "end": "YYYY-MM-DD"}` (end exclusive; none: month to
//! date), optionally `"prime": true`. Environment: `SNAPSHOT_TABLE`,
//! `CIRCUIT_BREAKER_TABLE`, `PRIME_ON_INIT`, the `CE_*` settings of [`explorer`] and the
//! `CIRCUIT_*` tunables of `circuit-env`.
#![forbid(unsafe_code)]

mod error;
mod explorer;
mod rate_limit;
mod report;
mod request;
mod snapshot;

use std::time::{SystemTime, UNIX_EPOCH};

use breaker_runtime::lambda::run_concurrent;
use breaker_runtime::{CircuitInfo, circuit_breaker};
use lambda_runtime::{Diagnostic, Error, LambdaEvent, service_fn};
use serde_json::Value;
use time::OffsetDateTime;

use crate::error::{CostError, is_transient};
use crate::explorer::{CostExplorer, ExplorerSettings};
use crate::report::CostReport;
use crate::request::{CostRequest, Period};
use crate::snapshot::SnapshotTable;

/// What every invocation shares: built once in `main`.
#[derive(Debug)]
struct App {
    explorer: CostExplorer,
    snapshots: SnapshotTable,
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (app, prime) = circuit_env::start(["cost-explorer"], app_from_env).await?;
    if prime {
        prime_on_init(&app).await;
    }
    // Shared by every invocation for the life of the process, several at once on Lambda
    // Managed Instances.
    let app: &'static App = Box::leak(Box::new(app));
    // breaker's `run_concurrent` puts each invocation in its own deadline scope: a
    // `cost-explorer` call still running near its deadline is abandoned and counted,
    // callback or not. `AWS_LAMBDA_MAX_CONCURRENCY` invocations at once where Lambda sets it
    // (Managed Instances), else one at a time.
    run_concurrent(service_fn(move |event: LambdaEvent<Value>| {
        handle(app, event.payload)
    }))
    .await
}

/// The function's settings, checked before anything runs: a bad value stops the function here.
fn app_from_env(sdk: &aws_config::SdkConfig) -> Result<(App, bool), String> {
    let settings = ExplorerSettings::from_env().map_err(|e| e.to_string())?;
    let table = circuit_env::setting::required("SNAPSHOT_TABLE").map_err(|e| e.to_string())?;
    let prime = circuit_env::setting::flag("PRIME_ON_INIT", false).map_err(|e| e.to_string())?;
    let app = App {
        explorer: CostExplorer::new(sdk, &settings),
        snapshots: SnapshotTable::new(aws_sdk_dynamodb::Client::new(sdk), table)
            .map_err(|e| e.to_string())?,
    };
    Ok((app, prime))
}

async fn handle(app: &App, event: Value) -> Result<CostReport, Diagnostic> {
    let request = CostRequest::parse(event, OffsetDateTime::now_utc().date())?;
    Ok(report(app, &request).await?)
}

/// A live report if Cost Explorer answers (stored as the new snapshot), else the snapshot.
async fn report(app: &App, request: &CostRequest) -> Result<CostReport, CostError> {
    match fetch_costs(app, &request.period).await {
        // Priming needs a live answer; the snapshot the open circuit served is not one.
        Ok(report) if report.stale && request.prime => Err(CostError::Transient(format!(
            "the circuit is {}; prime once Cost Explorer recovers",
            report.breaker
        ))),
        Ok(report) if report.stale => Ok(report),
        Ok(report) => {
            if let Err(error) = app.snapshots.store(&report, unix_now()).await {
                // The live answer is still right; only the fallback ages.
                tracing::warn!(%error, period = %request.period.key(), "could not store the snapshot");
            }
            Ok(report)
        }
        Err(error) if error.is_transient() && !request.prime => {
            tracing::warn!(%error, "Cost Explorer unavailable; answering the snapshot");
            stale_snapshot(app, &request.period, "closed", error.to_string()).await
        }
        Err(error) => Err(error),
    }
}

/// The live call, guarded: throttling, 5xx, timeouts and connection failures count.
/// `handled` stays a `bool`: Cost Explorer's throttling (`LimitExceededException`,
/// `ThrottlingException`) carries no `Retry-After` nor any other hint of when to come back
/// (the SDK's retries use their own backoff), so there is no time to hand the circuit as
/// `Outcome::OpenFor`; a throttled fleet opens at its recovery timeout like any other.
#[circuit_breaker(
    name = "cost-explorer",
    config = circuit_env::circuit_config(),
    handled = is_transient,
    on_circuit_open = serve_snapshot,
    on_transition = breaker_runtime::emf::log_transition
)]
async fn fetch_costs(app: &App, period: &Period) -> Result<CostReport, CostError> {
    app.explorer.cost_and_usage(period, unix_now()).await
}

/// While the circuit is open: the snapshot, without calling Cost Explorer.
async fn serve_snapshot(
    app: &App,
    period: &Period,
    circuit: CircuitInfo,
) -> Result<CostReport, CostError> {
    let breaker = circuit.state.as_str().to_ascii_lowercase();
    stale_snapshot(
        app,
        period,
        &breaker,
        format!("circuit '{}' is open", circuit.name),
    )
    .await
}

async fn stale_snapshot(
    app: &App,
    period: &Period,
    breaker: &str,
    reason: String,
) -> Result<CostReport, CostError> {
    let cold = |reason: String| CostError::ColdCache {
        period: period.key(),
        reason,
    };
    match app.snapshots.load(period).await {
        Ok(Some(mut snapshot)) => {
            snapshot.stale = true;
            snapshot.breaker = breaker.to_owned();
            Ok(snapshot)
        }
        Ok(None) => Err(cold(reason)),
        Err(error) => Err(cold(format!(
            "{reason}; the snapshot table failed too: {error}"
        ))),
    }
}

/// `PRIME_ON_INIT`: fill the cache for month to date before the first invocation. A
/// failure is logged, never fatal: the function still serves.
async fn prime_on_init(app: &App) {
    let request = CostRequest {
        period: {
            let (start, end) = request::month_to_date(OffsetDateTime::now_utc().date());
            Period {
                start: start.to_string(),
                end: end.to_string(),
            }
        },
        prime: true,
    };
    match report(app, &request).await {
        Ok(_) => tracing::info!(period = %request.period.key(), "snapshot primed at init"),
        Err(error) => tracing::warn!(%error, "could not prime the snapshot at init"),
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
