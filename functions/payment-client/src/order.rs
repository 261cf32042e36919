//! An order as the functions receive it, validated before anything is called.

use serde_json::Value;

/// A validated order. `payload` is the event exactly as received (extra fields included):
/// it is what goes to the payment API and, while the circuit is open, to the buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct Order {
    /// The caller's id of the order; the idempotency key of the charge.
    pub order_id: String,
    /// A positive amount in `currency`.
    pub amount: f64,
    /// An ISO 4217 code, three upper-case letters.
    pub currency: String,
    /// The whole event.
    pub payload: Value,
}

/// Why an event is not an order: one message a caller can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid order: {0}")]
pub struct InvalidOrder(pub String);

/// Longest accepted `order_id`: SQS message attributes and idempotency keys stay small.
const MAX_ORDER_ID_LEN: usize = 128;

impl Order {
    /// Validates `payload` (a JSON object with `order_id`, `amount`, `currency`).
    pub fn from_payload(payload: Value) -> Result<Self, InvalidOrder> {
        let Some(fields) = payload.as_object() else {
            return Err(invalid("the event must be a JSON object"));
        };
        let order_id = match fields.get("order_id") {
            Some(Value::String(id)) if is_valid_order_id(id) => id.clone(),
            Some(Value::String(_)) => {
                return Err(invalid(format!(
                    "order_id must be 1 to {MAX_ORDER_ID_LEN} printable characters"
                )));
            }
            Some(_) => return Err(invalid("order_id must be a string")),
            None => return Err(invalid("order_id is required")),
        };
        let amount = match fields.get("amount") {
            Some(Value::Number(n)) => n
                .as_f64()
                .filter(|a| a.is_finite() && *a > 0.0)
                .ok_or_else(|| invalid("amount must be a positive number"))?,
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
            payload,
        })
    }
}

fn is_valid_order_id(id: &str) -> bool {
    !id.trim().is_empty() && id.len() <= MAX_ORDER_ID_LEN && !id.chars().any(char::is_control)
}

fn invalid(message: impl Into<String>) -> InvalidOrder {
    InvalidOrder(message.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_complete_order_keeps_its_whole_payload() {
        let payload = json!({"order_id": "o-1", "amount": 12.5, "currency": "EUR", "note": "gift"});
        let order = Order::from_payload(payload.clone()).unwrap();
        assert_eq!(order.order_id, "o-1");
        assert_eq!(order.amount, 12.5);
        assert_eq!(order.currency, "EUR");
        assert_eq!(order.payload, payload);
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
        ] {
            let error = Order::from_payload(payload.clone())
                .unwrap_err()
                .to_string();
            assert!(error.contains(expected), "{payload}: {error}");
        }
    }
}
