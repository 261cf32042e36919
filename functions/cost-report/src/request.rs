//! The event: which period to report, or a request to prime the cache. Validated before
//! any AWS call, so a bad request never touches the circuit.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::macros::format_description;
use time::{Date, Month};

use crate::error::CostError;

/// Cost Explorer answers at most 38 months back (with multi-year data enabled; 14 without):
/// anything earlier it always rejects.
const MAX_HISTORY_MONTHS: i32 = 38;

/// A report period: `start` inclusive, `end` exclusive, as Cost Explorer takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Period {
    pub start: String,
    pub end: String,
}

impl Period {
    /// The snapshot table's key.
    pub fn key(&self) -> String {
        format!("{}/{}", self.start, self.end)
    }
}

/// What the event asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostRequest {
    pub period: Period,
    /// Fetch live and store the snapshot, even if a caller would be fine with it stale.
    pub prime: bool,
}

#[derive(Debug, Deserialize)]
struct RawRequest {
    start: Option<String>,
    end: Option<String>,
    #[serde(default)]
    prime: bool,
}

impl CostRequest {
    /// Parses and validates `event` against `today` (UTC). Without dates: month to date.
    pub fn parse(event: Value, today: Date) -> Result<Self, CostError> {
        let event = if event.is_null() {
            Value::Object(Default::default())
        } else {
            event
        };
        let raw: RawRequest = serde_json::from_value(event).map_err(|e| {
            CostError::Invalid(format!(
                "expected {{\"start\": \"YYYY-MM-DD\", \"end\": \"YYYY-MM-DD\"}} or {{\"prime\": true}}: {e}"
            ))
        })?;
        let (start, end) = match (raw.start.as_deref(), raw.end.as_deref()) {
            (None, None) => month_to_date(today),
            (Some(start), Some(end)) => (parse_date("start", start)?, parse_date("end", end)?),
            _ => {
                return Err(CostError::Invalid(
                    "give both start and end, or neither (month to date)".into(),
                ));
            }
        };
        validate(start, end, today)?;
        Ok(Self {
            period: Period {
                start: start.to_string(),
                end: end.to_string(),
            },
            prime: raw.prime,
        })
    }
}

/// From the first of `today`'s month to tomorrow (end exclusive: today included).
pub fn month_to_date(today: Date) -> (Date, Date) {
    (
        today.replace_day(1).unwrap_or(today),
        today.next_day().unwrap_or(today),
    )
}

fn parse_date(field: &str, value: &str) -> Result<Date, CostError> {
    Date::parse(value, format_description!("[year]-[month]-[day]")).map_err(|_| {
        CostError::Invalid(format!("{field} must be a date YYYY-MM-DD, got {value:?}"))
    })
}

fn validate(start: Date, end: Date, today: Date) -> Result<(), CostError> {
    if start >= end {
        return Err(CostError::Invalid(format!(
            "start ({start}) must be before end ({end}); end is exclusive"
        )));
    }
    let tomorrow = today.next_day().unwrap_or(today);
    if end > tomorrow {
        return Err(CostError::Invalid(format!(
            "end ({end}) is in the future: Cost Explorer reports costs up to today, so end can be at most {tomorrow}"
        )));
    }
    let oldest = months_before(today.replace_day(1).unwrap_or(today), MAX_HISTORY_MONTHS);
    if start < oldest {
        return Err(CostError::Invalid(format!(
            "start ({start}) is older than Cost Explorer keeps data ({MAX_HISTORY_MONTHS} months: {oldest})"
        )));
    }
    Ok(())
}

/// The first day of the month `months` before `first_of_month`.
fn months_before(first_of_month: Date, months: i32) -> Date {
    let index =
        first_of_month.year() * 12 + i32::from(u8::from(first_of_month.month())) - 1 - months;
    let month = Month::try_from((index.rem_euclid(12) + 1) as u8).unwrap_or(Month::January);
    Date::from_calendar_date(index.div_euclid(12), month, 1).unwrap_or(first_of_month)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use time::macros::date;

    const TODAY: Date = date!(2026 - 11 - 29);

    fn parse(event: Value) -> Result<CostRequest, String> {
        CostRequest::parse(event, TODAY).map_err(|e| e.to_string())
    }

    #[test]
    fn no_dates_means_month_to_date_today_included() {
        let request = parse(json!({})).unwrap();
        assert_eq!(request.period.key(), "2026-11-01/2026-11-30");
        assert!(!request.prime);
        assert_eq!(parse(Value::Null).unwrap().period, request.period);
    }

    #[test]
    fn explicit_dates_and_prime_are_kept() {
        let request =
            parse(json!({"start": "2026-10-01", "end": "2026-11-01", "prime": true})).unwrap();
        assert_eq!(
            request.period,
            Period {
                start: "2026-10-01".into(),
                end: "2026-11-01".into()
            }
        );
        assert!(request.prime);
    }

    #[test]
    fn bad_requests_say_what_is_wrong() {
        for (event, expected) in [
            (
                json!({"start": "2026-13-01", "end": "2026-11-01"}),
                "start must be a date",
            ),
            (
                json!({"start": "2026-10-01", "end": "soon"}),
                "end must be a date",
            ),
            (
                json!({"start": "2026-11-05", "end": "2026-11-05"}),
                "must be before end",
            ),
            (json!({"start": "2026-11-01"}), "both start and end"),
            (
                json!({"start": "2026-11-01", "end": "2026-12-05"}),
                "in the future",
            ),
            (
                json!({"start": "2023-01-01", "end": "2023-02-01"}),
                "older than Cost Explorer keeps",
            ),
            (
                json!({"start": 20261101, "end": "2026-11-05"}),
                "expected {\"start\"",
            ),
            (json!(["2026-11-01"]), "expected {\"start\""),
        ] {
            let error = parse(event.clone()).unwrap_err();
            assert!(error.contains(expected), "{event}: {error}");
        }
    }

    #[test]
    fn history_limit_crosses_years() {
        assert_eq!(
            months_before(date!(2026 - 11 - 01), 38),
            date!(2023 - 09 - 01)
        );
        assert_eq!(
            months_before(date!(2026 - 01 - 01), 1),
            date!(2025 - 12 - 01)
        );
    }
}
