//! Who is running the command, for the override's `override_by`.

use std::time::Duration;

use aws_config::SdkConfig;

/// How long the identity lookup may take before the local user name is used.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(3);

/// The caller's AWS identity (its ARN, from `sts:GetCallerIdentity`), else `$USER`.
pub(crate) async fn caller(sdk: &SdkConfig) -> String {
    let sts = aws_sdk_sts::Client::new(sdk);
    let lookup = tokio::time::timeout(LOOKUP_TIMEOUT, sts.get_caller_identity().send()).await;
    if let Ok(Ok(identity)) = lookup
        && let Some(arn) = identity.arn()
    {
        return arn.to_owned();
    }
    local_user()
}

fn local_user() -> String {
    ["USER", "USERNAME", "LOGNAME"]
        .iter()
        .find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "unknown".to_owned())
}
