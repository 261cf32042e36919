//! One policy for every setting the sample functions read from their environment: unset
//! means the documented default; a value that does not parse or is out of range stops the
//! function at start, with a message that names the variable and the value
//! (`PAYMENT_TIMEOUT_MS=0: must be between 1 and 60000`). A typo in a deployment fails the
//! deployment's first invocation loudly instead of running with a silent default.

use std::ops::RangeInclusive;
use std::time::Duration;

/// A setting that is missing (when required), does not parse, or is out of range.
///
/// ```
/// let error = circuit_env::setting::number_from("PAYMENT_TIMEOUT_MS", Some("0".into()), 3000, 1..=60_000)
///     .unwrap_err();
/// assert_eq!(error.to_string(), "PAYMENT_TIMEOUT_MS=0: must be between 1 and 60000");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}={value}: {problem}")]
pub struct SettingError {
    /// The environment variable.
    pub variable: String,
    /// Its value as set (empty when unset).
    pub value: String,
    /// What is wrong with it.
    pub problem: String,
}

impl SettingError {
    /// An error about `variable` set to `value`.
    pub fn new(variable: &str, value: &str, problem: impl Into<String>) -> Self {
        Self {
            variable: variable.to_owned(),
            value: value.to_owned(),
            problem: problem.into(),
        }
    }
}

/// A whole number from the environment variable `name`, `default` when unset, within `range`.
///
/// ```
/// assert_eq!(circuit_env::setting::number("NOT_SET_ANYWHERE", 7, 1..=10), Ok(7));
/// ```
pub fn number(name: &str, default: u64, range: RangeInclusive<u64>) -> Result<u64, SettingError> {
    number_from(name, std::env::var(name).ok(), default, range)
}

/// [`number`] with the value given (`None`: unset).
pub fn number_from(
    name: &str,
    value: Option<String>,
    default: u64,
    range: RangeInclusive<u64>,
) -> Result<u64, SettingError> {
    let Some(value) = value else {
        return Ok(default);
    };
    let n: u64 = value
        .trim()
        .parse()
        .map_err(|_| SettingError::new(name, &value, "not a whole number"))?;
    if !range.contains(&n) {
        return Err(SettingError::new(
            name,
            &value,
            format!("must be between {} and {}", range.start(), range.end()),
        ));
    }
    Ok(n)
}

/// [`number`] as milliseconds.
pub fn millis(
    name: &str,
    default: u64,
    range: RangeInclusive<u64>,
) -> Result<Duration, SettingError> {
    number(name, default, range).map(Duration::from_millis)
}

/// [`number`] as seconds.
pub fn secs(
    name: &str,
    default: u64,
    range: RangeInclusive<u64>,
) -> Result<Duration, SettingError> {
    number(name, default, range).map(Duration::from_secs)
}

/// A variable that must be set and not blank.
///
/// ```
/// let error = circuit_env::setting::required("NOT_SET_EITHER").unwrap_err();
/// assert_eq!(error.to_string(), "NOT_SET_EITHER=: is required");
/// ```
pub fn required(name: &str) -> Result<String, SettingError> {
    match std::env::var(name) {
        Ok(value) if !value.trim().is_empty() => Ok(value),
        Ok(value) => Err(SettingError::new(name, &value, "is required")),
        Err(_) => Err(SettingError::new(name, "", "is required")),
    }
}

/// `true`/`false` (any case), `default` when unset.
///
/// ```
/// assert_eq!(circuit_env::setting::flag("NOT_A_FLAG", false), Ok(false));
/// ```
pub fn flag(name: &str, default: bool) -> Result<bool, SettingError> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(value) => match value.trim().to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(SettingError::new(name, &value, "must be true or false")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_is_the_default_set_is_checked() {
        assert_eq!(number_from("X", None, 5, 1..=9), Ok(5));
        assert_eq!(number_from("X", Some(" 9 ".into()), 5, 1..=9), Ok(9));
        assert_eq!(
            number_from("X", Some("five".into()), 5, 1..=9)
                .unwrap_err()
                .to_string(),
            "X=five: not a whole number"
        );
        assert_eq!(
            number_from("X", Some("10".into()), 5, 1..=9)
                .unwrap_err()
                .to_string(),
            "X=10: must be between 1 and 9"
        );
    }
}
