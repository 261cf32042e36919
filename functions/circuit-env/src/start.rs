//! The start every sample function shares: logging, the AWS config, every setting checked
//! under the one policy (a bad value is logged and stops the function before its first
//! invocation), then the function's circuits warmed up on the shared table, which must be
//! there: without it each execution environment would keep a circuit of its own.

use std::fmt::Display;

/// Starts a function: Lambda's log subscriber, the AWS config, the circuit tunables
/// ([`init`](crate::init)), then `build` with the function's own settings; finally one
/// batched read warms `circuits` up. A setting that `init` or `build` rejects is logged
/// and returned, so `main` stops before polling for work; so is a misconfiguration the
/// warm-up finds: a default store unfit inside Lambda (`CIRCUIT_BREAKER_TABLE` missing or
/// invalid, without `CIRCUIT_BREAKER_STORE=memory`, the error naming the variable), or a
/// table that does not exist or denies access (the error naming the table and the
/// permission). A store that is down or slow fails open.
///
/// ```no_run
/// # async fn demo() -> Result<(), lambda_runtime::Error> {
/// let table = circuit_env::start(["payment-backend"], |_aws| {
///     circuit_env::setting::required("LEDGER_TABLE")
/// })
/// .await?;
/// # Ok(()) }
/// ```
pub async fn start<A, E: Display>(
    circuits: impl IntoIterator<Item = &'static str>,
    build: impl FnOnce(&aws_config::SdkConfig) -> Result<A, E>,
) -> Result<A, lambda_runtime::Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let aws = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let built = crate::init()
        .map_err(|e| e.to_string())
        .and_then(|_| build(&aws).map_err(|e| e.to_string()));
    let app = built.map_err(|error| {
        tracing::error!(%error, "invalid configuration: the function stops");
        error
    })?;
    // Each call that fails open on a store error counts `StoreErrors` (template.yaml alarms).
    breaker_runtime::emf::log_store_errors();
    if let Err(error) = breaker_runtime::warm_up(circuits).await
        && error.is_misconfiguration()
    {
        // No table configured, a table that does not exist, or access denied to it: every
        // call would fail open until the configuration changes.
        tracing::error!(%error, "invalid configuration: the function stops");
        return Err(error.into());
    }
    // An outage is a cold cache: the first call reads the item itself.
    Ok(app)
}
