//! A record `overflow-replay` cannot charge yet, and the message that sends it again.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_sqs::types::SendMessageBatchRequestEntry;

use super::message::{MAX_DELAY, attribute};

/// A record `overflow-replay` sends again, delayed, instead of failing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deferral {
    /// The record's message id (reported back on failure).
    pub message_id: String,
    /// The body, unchanged.
    pub body: String,
    /// The record's attributes: name → (data type, string value).
    pub attributes: HashMap<String, (String, String)>,
    /// How long SQS hides the new message (capped at [`MAX_DELAY`]).
    pub delay: Duration,
    /// What becomes of the record's `failures` attribute.
    pub failures: FailureCount,
}

/// The `failures` attribute of a deferred record: the failed charges since the circuit was
/// last seen open. Only failures with the circuit closed make a record poison; a record
/// that meets an open circuit starts over, so an outage's failed probes never add up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureCount {
    /// Unchanged (deferred for time, or behind another attempt).
    Keep,
    /// One more (deferred after a failed charge).
    Increment,
    /// Back to none (deferred because the circuit is open).
    Reset,
}

impl Deferral {
    /// The record's `failures` attribute as received (0 when absent).
    pub fn failure_count(&self) -> u64 {
        self.count("failures")
    }

    fn count(&self, name: &str) -> u64 {
        self.attributes
            .get(name)
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0)
    }
}

/// The batch entry that sends `deferral` again as entry `index`, its counts updated.
pub(super) fn batch_entry(
    index: usize,
    deferral: &Deferral,
) -> Result<SendMessageBatchRequestEntry, String> {
    let deferrals = deferral.count("deferrals") + 1;
    let failures = match deferral.failures {
        FailureCount::Keep => deferral.failure_count(),
        FailureCount::Increment => deferral.failure_count() + 1,
        FailureCount::Reset => 0,
    };
    let delay = deferral.delay.min(MAX_DELAY).as_secs() as i32;
    let mut entry = SendMessageBatchRequestEntry::builder()
        .id(index.to_string())
        .message_body(&deferral.body)
        .delay_seconds(delay);
    for (name, (data_type, value)) in &deferral.attributes {
        if name != "deferrals" && name != "failures" {
            entry = entry.message_attributes(name, attribute(data_type, value)?);
        }
    }
    if failures > 0 {
        entry = entry.message_attributes("failures", attribute("Number", &failures.to_string())?);
    }
    entry
        .message_attributes("deferrals", attribute("Number", &deferrals.to_string())?)
        .build()
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deferral(attributes: &[(&str, &str, &str)], failures: FailureCount) -> Deferral {
        Deferral {
            message_id: "m-1".into(),
            body: r#"{"order_id":"o-1"}"#.into(),
            attributes: attributes
                .iter()
                .map(|(n, t, v)| ((*n).to_owned(), ((*t).to_owned(), (*v).to_owned())))
                .collect(),
            delay: Duration::from_secs(5000),
            failures,
        }
    }

    fn attribute_value(entry: &SendMessageBatchRequestEntry, name: &str) -> Option<String> {
        entry
            .message_attributes()
            .and_then(|a| a.get(name))
            .and_then(|v| v.string_value().map(str::to_owned))
    }

    #[test]
    fn a_deferral_keeps_the_attributes_counts_itself_and_caps_the_delay() {
        let first = batch_entry(
            3,
            &deferral(
                &[
                    ("order_id", "String", "o-1"),
                    ("buffered_at", "Number", "17"),
                ],
                FailureCount::Keep,
            ),
        )
        .unwrap();
        assert_eq!(first.id(), "3");
        assert_eq!(first.message_body(), r#"{"order_id":"o-1"}"#);
        assert_eq!(first.delay_seconds(), Some(900));
        assert_eq!(attribute_value(&first, "order_id").as_deref(), Some("o-1"));
        assert_eq!(
            attribute_value(&first, "buffered_at").as_deref(),
            Some("17")
        );
        assert_eq!(attribute_value(&first, "deferrals").as_deref(), Some("1"));
        assert_eq!(attribute_value(&first, "failures"), None);

        let again = batch_entry(
            0,
            &deferral(
                &[("deferrals", "Number", "4"), ("failures", "Number", "2")],
                FailureCount::Increment,
            ),
        )
        .unwrap();
        assert_eq!(attribute_value(&again, "deferrals").as_deref(), Some("5"));
        assert_eq!(attribute_value(&again, "failures").as_deref(), Some("3"));

        let open = batch_entry(
            0,
            &deferral(&[("failures", "Number", "2")], FailureCount::Reset),
        )
        .unwrap();
        assert_eq!(attribute_value(&open, "failures"), None);
    }
}
