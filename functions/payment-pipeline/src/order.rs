//! An order as the functions receive it, validated before anything is called. Only the
//! validated fields travel on (to the payment API, to the overflow queue): an unknown field
//! of the event is never forwarded.

mod currency;

use std::collections::BTreeMap;

use serde_json::Value;
use serde_json::value::RawValue;

/// A validated order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    /// The caller's id of the order: the ledger's key and the charge's idempotency key.
    pub order_id: String,
    /// A positive JSON number in `currency`, in plain decimal notation (no exponent), its
    /// text exactly as the caller wrote it (`10.50` stays `10.50`, 30 digits stay 30
    /// digits): never parsed into a float.
    pub amount: String,
    /// An active ISO 4217 code (`EUR`, `USD`, ...).
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

/// Longest accepted `amount`, in characters of its JSON text: 32, more digits than any
/// payment provider accepts would only be refused by it, order by order.
pub const MAX_AMOUNT_LEN: usize = 32;

impl Order {
    /// Validates the JSON text `json` (an object with `order_id`, `amount`, `currency`,
    /// optionally `customer`; other fields are ignored) of at most [`MAX_EVENT_BYTES`]. The
    /// amount's text is kept as written.
    ///
    /// ```
    /// use payment_pipeline::Order;
    /// let order = Order::parse(r#"{"order_id": "o-1", "amount": 10.50, "currency": "EUR", "debug": true}"#).unwrap();
    /// assert_eq!(order.amount, "10.50");
    /// assert_eq!(order.to_body(), r#"{"order_id":"o-1","amount":10.50,"currency":"EUR"}"#);
    /// let error = Order::parse(r#"{"order_id": "o-\uFFFE", "amount": 5, "currency": "EUR"}"#).unwrap_err();
    /// assert!(error.to_string().contains("U+FFFE"), "{error}");
    /// ```
    pub fn parse(json: &str) -> Result<Self, InvalidOrder> {
        if json.len() > MAX_EVENT_BYTES {
            return Err(invalid(format!(
                "the event is {} bytes; at most {MAX_EVENT_BYTES} are accepted",
                json.len()
            )));
        }
        let fields: BTreeMap<String, &RawValue> =
            serde_json::from_str(json).map_err(|_| invalid("the event must be a JSON object"))?;
        // A field whose JSON does not decode (a lone surrogate in a string) is an error
        // naming it, never taken as absent.
        let field = |name: &str| -> Result<Option<Value>, InvalidOrder> {
            fields
                .get(name)
                .map(|raw| {
                    serde_json::from_str(raw.get()).map_err(|_| {
                        invalid(format!("{name} is not valid JSON text (a lone surrogate?)"))
                    })
                })
                .transpose()
        };
        let order_id = match field("order_id")? {
            Some(Value::String(id)) => checked_id("order_id", &id)?,
            Some(_) => return Err(invalid("order_id must be a string")),
            None => return Err(invalid("order_id is required")),
        };
        let customer = match field("customer")? {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) => Some(checked_id("customer", &c)?),
            Some(_) => return Err(invalid("customer must be a string")),
        };
        let amount = match (fields.get("amount"), field("amount")?) {
            (Some(raw), Some(Value::Number(n)))
                if n.as_f64().is_some_and(|a| a.is_finite() && a > 0.0)
                    && raw.get().trim().len() <= MAX_AMOUNT_LEN
                    && !raw.get().contains(['e', 'E']) =>
            {
                raw.get().trim().to_owned()
            }
            (Some(_), _) => {
                return Err(invalid(format!(
                    "amount must be a positive number in plain decimal notation (no exponent) of at most {MAX_AMOUNT_LEN} characters"
                )));
            }
            (None, _) => return Err(invalid("amount is required")),
        };
        let currency = match field("currency")? {
            Some(Value::String(c)) if currency::is_iso_4217(&c) => c,
            Some(_) => {
                return Err(invalid(
                    "currency must be an ISO 4217 code in use, such as \"EUR\"",
                ));
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

    /// [`parse`](Self::parse) of an already parsed event (its numbers as `serde_json` kept
    /// them).
    ///
    /// ```
    /// use payment_pipeline::Order;
    /// let order = Order::from_payload(serde_json::json!({"order_id": "o-1", "amount": 5, "currency": "EUR", "debug": true})).unwrap();
    /// assert_eq!(order.to_json(), serde_json::json!({"order_id": "o-1", "amount": 5, "currency": "EUR"}));
    /// ```
    pub fn from_payload(payload: Value) -> Result<Self, InvalidOrder> {
        Self::parse(&payload.to_string())
    }

    /// The validated fields as JSON text, the amount as written: the body of the charge and
    /// of a buffered order.
    pub fn to_body(&self) -> String {
        let text = |value: &str| Value::String(value.to_owned()).to_string();
        let mut body = format!(
            r#"{{"order_id":{},"amount":{},"currency":{}"#,
            text(&self.order_id),
            self.amount,
            text(&self.currency)
        );
        if let Some(customer) = &self.customer {
            body.push_str(&format!(r#","customer":{}"#, text(customer)));
        }
        body.push('}');
        body
    }

    /// [`to_body`](Self::to_body) parsed (numbers as `serde_json` keeps them).
    pub fn to_json(&self) -> Value {
        serde_json::from_str(&self.to_body()).unwrap_or(Value::Null)
    }

    /// What two copies of one order must agree on: the amount's value (`10.50` and `10.5`
    /// are one amount), the currency and the customer. A reused id with another key is
    /// another order.
    pub fn contents_key(&self) -> String {
        format!(
            "{} {} {}",
            decimal_key(&self.amount),
            self.currency,
            self.customer.as_deref().unwrap_or_default()
        )
    }
}

/// `amount` without the zeros that do not change its value (leading ones, trailing ones
/// after the point); an exponent form is kept as written.
fn decimal_key(amount: &str) -> String {
    if amount.contains(['e', 'E']) {
        return amount.to_owned();
    }
    let (whole, fraction) = amount.split_once('.').unwrap_or((amount, ""));
    let whole = whole.trim_start_matches('0');
    let fraction = fraction.trim_end_matches('0');
    let whole = if whole.is_empty() { "0" } else { whole };
    if fraction.is_empty() {
        whole.to_owned()
    } else {
        format!("{whole}.{fraction}")
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
        assert_eq!(order.amount, "12.5");
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
                json!({"order_id": "o", "amount": 3, "currency": "ABC"}),
                "ISO 4217 code in use",
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
    fn malformed_amounts_and_undecodable_fields_are_refused_not_dropped() {
        for (text, expected) in [
            (
                r#"{"order_id": "o", "amount": 1e2, "currency": "EUR"}"#.to_owned(),
                "no exponent",
            ),
            (
                r#"{"order_id": "o", "amount": 2E-1, "currency": "EUR"}"#.to_owned(),
                "no exponent",
            ),
            (
                format!(
                    r#"{{"order_id": "o", "amount": {}, "currency": "EUR"}}"#,
                    "9".repeat(64)
                ),
                "at most 32 characters",
            ),
            (
                r#"{"order_id": "o", "amount": 3, "currency": "EUR", "customer": "c-\uD800"}"#
                    .to_owned(),
                "customer is not valid JSON text",
            ),
        ] {
            let error = Order::parse(&text).unwrap_err().to_string();
            assert!(error.contains(expected), "{text}: {error}");
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

    #[test]
    fn amounts_travel_exactly_as_the_caller_wrote_them() {
        for amount in ["10.50", "12345678901234567890.123456789", "0.10", "7"] {
            let order = Order::parse(&format!(
                r#"{{"order_id": "o-1", "amount": {amount}, "currency": "EUR"}}"#
            ))
            .unwrap();
            assert_eq!(order.amount, amount);
            assert!(
                order.to_body().contains(&format!(r#""amount":{amount},"#)),
                "{}",
                order.to_body()
            );
            // The buffered body parses back to the same order.
            assert_eq!(Order::parse(&order.to_body()).unwrap(), order);
        }
    }

    #[test]
    fn one_amount_written_two_ways_has_one_contents_key() {
        let order = |amount: &str, customer: &str| {
            Order::parse(&format!(
                r#"{{"order_id": "o-1", "amount": {amount}, "currency": "EUR", "customer": "{customer}"}}"#
            ))
            .unwrap()
        };
        assert_eq!(
            order("10.50", "c").contents_key(),
            order("10.5", "c").contents_key()
        );
        assert_eq!(
            order("10", "c").contents_key(),
            order("10.000", "c").contents_key()
        );
        assert_ne!(
            order("10.5", "c").contents_key(),
            order("10.51", "c").contents_key()
        );
        assert_ne!(
            order("10.5", "c").contents_key(),
            order("10.5", "d").contents_key()
        );
    }
}
