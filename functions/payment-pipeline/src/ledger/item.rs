//! The layout of a ledger item: its attribute values and the bound on its `detail`.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

/// One item as DynamoDB returns it.
pub(super) type Item = HashMap<String, AttributeValue>;

/// Set on a parked item once `PaymentOutcomeUnknown` was counted for it (Unix seconds).
pub(super) const COUNTED: &str = "unknown_counted_at";

/// Longest `detail` recorded (the payment API's answer, an error): an item stays small.
pub(super) const MAX_DETAIL_BYTES: usize = 512;

pub(super) fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

pub(super) fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// The string attribute `name`, empty when absent.
pub(super) fn text<'a>(item: &'a Item, name: &str) -> &'a str {
    match item.get(name) {
        Some(AttributeValue::S(value)) => value,
        _ => "",
    }
}

/// The number attribute `name`, 0 when absent.
pub(super) fn number(item: &Item, name: &str) -> u64 {
    match item.get(name) {
        Some(AttributeValue::N(value)) => value.parse().unwrap_or(0),
        _ => 0,
    }
}
