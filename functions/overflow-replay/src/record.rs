//! What a queue record carries: the order (as its JSON text, the amount as the caller wrote
//! it), how long ago it was first buffered, and the deferral that sends it again.

use std::collections::BTreeMap;
use std::time::Duration;

use aws_lambda_events::event::sqs::SqsMessage;
use payment_pipeline::{Deferral, FailureCount, Order};
use serde_json::value::RawValue;

/// The order in the record's body: the body itself, or the event inside a record of
/// `charge`'s on-failure destination.
pub fn order_of(record: &SqsMessage) -> Result<Order, String> {
    let body = record.body.as_deref().unwrap_or_default();
    if serde_json::from_str::<&RawValue>(body).is_err() {
        return Err("the message body is not JSON".to_owned());
    }
    Order::parse(unwrap_destination_record(body)).map_err(|e| e.to_string())
}

/// A record of `charge`'s on-failure destination carries the event in `requestPayload`
/// (next to `requestContext`, `responsePayload`): moved here as is, it is that order, its
/// text untouched.
pub fn unwrap_destination_record(body: &str) -> &str {
    let Ok(fields) = serde_json::from_str::<BTreeMap<&str, &RawValue>>(body) else {
        return body;
    };
    match (fields.get("requestContext"), fields.get("requestPayload")) {
        (Some(_), Some(payload)) if payload.get().starts_with('{') => payload.get(),
        _ => body,
    }
}

/// Seconds since the order was first buffered (`buffered_at`, kept across deferrals), if
/// the record says.
pub fn age(record: &SqsMessage, now: u64) -> Option<u64> {
    let buffered_at: u64 = record
        .message_attributes
        .get("buffered_at")?
        .string_value
        .as_deref()?
        .parse()
        .ok()?;
    Some(now.saturating_sub(buffered_at))
}

/// The deferral that sends `record` again after `delay`.
pub fn deferral(record: &SqsMessage, delay: Duration, failures: FailureCount) -> Deferral {
    Deferral {
        message_id: record.message_id.clone().unwrap_or_default(),
        body: record.body.clone().unwrap_or_default(),
        attributes: record
            .message_attributes
            .iter()
            .filter_map(|(name, attribute)| {
                Some((
                    name.clone(),
                    (
                        attribute.data_type.clone()?,
                        attribute.string_value.clone()?,
                    ),
                ))
            })
            .collect(),
        delay,
        failures,
    }
}

#[cfg(test)]
mod tests {
    use aws_lambda_events::event::sqs::SqsMessageAttribute;

    use super::*;

    #[test]
    fn an_on_failure_destination_record_is_the_order_it_carries() {
        let order = r#"{"order_id": "o-1", "amount": 10.50, "currency": "EUR"}"#;
        let record = format!(
            r#"{{"version": "1.0", "requestContext": {{"condition": "RetriesExhausted"}}, "requestPayload": {order}, "responsePayload": {{"errorType": "BufferFailed"}}}}"#
        );
        assert_eq!(unwrap_destination_record(&record), order);
        // An order that merely has such a field stays as it is.
        let odd = r#"{"order_id": "o-2", "requestPayload": {"x": 1}}"#;
        assert_eq!(unwrap_destination_record(odd), odd);
    }

    #[test]
    fn the_age_counts_from_the_first_buffering() {
        let mut record = SqsMessage::default();
        assert_eq!(age(&record, 100), None);
        let mut buffered_at = SqsMessageAttribute::default();
        buffered_at.string_value = Some("40".into());
        buffered_at.data_type = Some("Number".into());
        record
            .message_attributes
            .insert("buffered_at".into(), buffered_at);
        assert_eq!(age(&record, 100), Some(60));
        assert_eq!(age(&record, 10), Some(0));
    }
}
