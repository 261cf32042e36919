//! The two fields Lambda's log-level filter reads on a JSON log line, as breaker's EMF
//! records write them; public only through [`crate::unstable`], for the sample functions'
//! own EMF lines.

/// The `level` of every EMF record: high enough that log-level filtering keeps it.
pub const LOG_LEVEL: &str = "ERROR";

/// `unix_millis` as an RFC 3339 UTC timestamp with milliseconds, the form Lambda's
/// log-level filter reads.
///
/// ```
/// assert_eq!(breaker_runtime::unstable::rfc3339_millis(0), "1970-01-01T00:00:00.000Z");
/// assert_eq!(breaker_runtime::unstable::rfc3339_millis(1_709_251_199_999), "2024-02-29T23:59:59.999Z");
/// ```
pub fn rfc3339_millis(unix_millis: u64) -> String {
    let (secs, millis) = (unix_millis / 1000, unix_millis % 1000);
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil_from_days, for days since 1970-01-01 (never negative here).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}
