//! An order as the functions receive it, validated before anything is called. Only the
//! validated fields travel on (to the payment API, to the overflow queue): an unknown field
//! of the event is never forwarded.

use serde_json::{Map, Number, Value};

/// A validated order.
#[derive(Debug, Clone, PartialEq)]
pub struct Order {
    /// The caller's id of the order: the ledger's key and the charge's idempotency key.
    pub order_id: String,
    /// A positive amount in `currency`, exactly as the caller wrote it.
    pub amount: Number,
    /// An ISO 4217 code, three upper-case letters.
    pub currency: String,
    /// The caller's customer reference, if given.
    pub customer: Option<String>,
}

/// Why an event is not an order: one message a caller can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid order: {0}")]
pub struct InvalidOrder(pub String);

/// Longest accepted `order_id` and `customer`: message attributes and idempotency keys
/// stay small.
pub const MAX_ID_LEN: usize = 128;

/// Largest accepted event, as JSON: far below SQS's 256 KiB, so a buffered order can
/// always be sent, and a clear error instead of a payload that fails only while open.
pub const MAX_EVENT_BYTES: usize = 8 * 1024;

impl Order {
    /// Validates `payload` (a JSON object with `order_id`, `amount`, `currency`, optionally
    /// `customer`; other fields are ignored) of at most [`MAX_EVENT_BYTES`].
    ///
    /// ```
    /// use payment_pipeline::Order;
    /// let order = Order::from_payload(serde_json::json!({"order_id": "o-1", "amount": 5, "currency": "EUR", "debug": true})).unwrap();
    /// assert_eq!(order.to_json(), serde_json::json!({"order_id": "o-1", "amount": 5, "currency": "EUR"}));
    /// let error = Order::from_payload(serde_json::json!({"order_id": "o-\u{FFFE}", "amount": 5, "currency": "EUR"})).unwrap_err();
    /// assert!(error.to_string().contains("U+FFFE"), "{error}");
    /// ```
    pub fn from_payload(payload: Value) -> Result<Self, InvalidOrder> {
        let size = serde_json::to_vec(&payload).map_or(usize::MAX, |json| json.len());
        if size > MAX_EVENT_BYTES {
            return Err(invalid(format!(
                "the event is {size} bytes; at most {MAX_EVENT_BYTES} are accepted"
            )));
        }
        let Some(fields) = payload.as_object() else {
            return Err(invalid("the event must be a JSON object"));
        };
        let order_id = match fields.get("order_id") {
            Some(Value::String(id)) => checked_id("order_id", id)?,
            Some(_) => return Err(invalid("order_id must be a string")),
            None => return Err(invalid("order_id is required")),
        };
        let customer = match fields.get("customer") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) => Some(checked_id("customer", c)?),
            Some(_) => return Err(invalid("customer must be a string")),
        };
        let amount = match fields.get("amount") {
            Some(Value::Number(n)) if n.as_f64().is_some_and(|a| a.is_finite() && a > 0.0) => {
                n.clone()
            }
            Some(_) => return Err(invalid("amount must be a positive number")),
            None => return Err(invalid("amount is required")),
        };
        let currency = match fields.get("currency") {
            Some(Value::String(c)) if c.len() == 3 && c.bytes().all(|b| b.is_ascii_uppercase()) => {
                c.clone()
            }
            Some(_) => {
                return Err(invalid("currency must be an ISO 4217 code such as \"EUR\""));
            }
            None => return Err(invalid("currency is required")),
        };
        Ok(Self {
            order_id,
            amount,
            currency,
            customer,
        })
    }

    /// The validated fields as JSON: the body of the charge and of a buffered order.
    pub fn to_json(&self) -> Value {
        let mut fields = Map::new();
        fields.insert("order_id".into(), Value::String(self.order_id.clone()));
        fields.insert("amount".into(), Value::Number(self.amount.clone()));
        fields.insert("currency".into(), Value::String(self.currency.clone()));
        if let Some(customer) = &self.customer {
            fields.insert("customer".into(), Value::String(customer.clone()));
        }
        Value::Object(fields)
    }
}

/// 1 to [`MAX_ID_LEN`] bytes, not blank, no control characters, and only characters SQS
/// carries (its message attributes refuse U+FFFE, U+FFFF and other noncharacters).
fn checked_id(field: &str, id: &str) -> Result<String, InvalidOrder> {
    if id.trim().is_empty() || id.len() > MAX_ID_LEN || id.chars().any(char::is_control) {
        return Err(invalid(format!(
            "{field} must be 1 to {MAX_ID_LEN} bytes of printable characters"
        )));
    }
    if let Some(c) = id.chars().find(|&c| is_noncharacter(c)) {
        return Err(invalid(format!(
            "{field} contains U+{:04X}, a noncharacter SQS cannot carry",
            u32::from(c)
        )));
    }
    Ok(id.to_owned())
}

/// U+FDD0..=U+FDEF and the last two code points of every plane (U+FFFE, U+FFFF, U+1FFFE, ...).
fn is_noncharacter(c: char) -> bool {
    let code = u32::from(c);
    (0xFDD0..=0xFDEF).contains(&code) || code & 0xFFFE == 0xFFFE
}

fn invalid(message: impl Into<String>) -> InvalidOrder {
    InvalidOrder(message.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_validated_fields_are_kept() {
        let payload = json!({"order_id": "o-1", "amount": 12.5, "currency": "EUR", "customer": "c-1", "card": "4111"});
        let order = Order::from_payload(payload).unwrap();
        assert_eq!(order.order_id, "o-1");
        assert_eq!(order.amount.as_f64(), Some(12.5));
        assert_eq!(order.currency, "EUR");
        assert_eq!(
            order.to_json(),
            json!({"order_id": "o-1", "amount": 12.5, "currency": "EUR", "customer": "c-1"})
        );
    }

    #[test]
    fn each_invalid_field_is_named_in_the_error() {
        for (payload, expected) in [
            (json!([1, 2]), "JSON object"),
            (
                json!({"amount": 1, "currency": "EUR"}),
                "order_id is required",
            ),
            (
                json!({"order_id": "", "amount": 1, "currency": "EUR"}),
                "order_id must be 1",
            ),
            (
                json!({"order_id": 7, "amount": 1, "currency": "EUR"}),
                "order_id must be a string",
            ),
            (
                json!({"order_id": "o", "currency": "EUR"}),
                "amount is required",
            ),
            (
                json!({"order_id": "o", "amount": -3, "currency": "EUR"}),
                "amount must be a positive number",
            ),
            (
                json!({"order_id": "o", "amount": "3", "currency": "EUR"}),
                "amount must be a positive number",
            ),
            (
                json!({"order_id": "o", "amount": 3}),
                "currency is required",
            ),
            (
                json!({"order_id": "o", "amount": 3, "currency": "eur"}),
                "ISO 4217",
            ),
            (
                json!({"order_id": "o", "amount": 3, "currency": "EUR", "customer": 5}),
                "customer must be a string",
            ),
            (
                json!({"order_id": "o\u{FFFF}", "amount": 3, "currency": "EUR"}),
                "order_id contains U+FFFF",
            ),
            (
                json!({"order_id": "o", "amount": 3, "currency": "EUR", "customer": "\u{1FFFE}"}),
                "customer contains U+1FFFE",
            ),
            (
                json!({"order_id": "o", "amount": 3, "currency": "EUR", "note": "x".repeat(MAX_EVENT_BYTES)}),
                "bytes; at most 8192 are accepted",
            ),
        ] {
            let error = Order::from_payload(payload.clone())
                .unwrap_err()
                .to_string();
            assert!(error.contains(expected), "{payload}: {error}");
        }
    }

    #[test]
    fn ordinary_unicode_is_accepted() {
        let order = Order::from_payload(
            json!({"order_id": "commande-é-日本-😀", "amount": 1, "currency": "JPY"}),
        )
        .unwrap();
        assert_eq!(order.order_id, "commande-é-日本-😀");
        assert!(!is_noncharacter('\u{FFFD}'));
    }
}
