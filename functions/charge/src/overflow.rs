//! The overflow queue: where orders wait while the payment circuit is open.

use aws_sdk_sqs::types::MessageAttributeValue;
use breaker_runtime::CircuitInfo;
use payment_client::Order;

/// The SQS queue `overflow-replay` drains.
#[derive(Debug, Clone)]
pub struct OverflowQueue {
    sqs: aws_sdk_sqs::Client,
    queue_url: String,
}

/// SQS did not take the order: the invocation must fail so the order is not lost.
#[derive(Debug, thiserror::Error)]
#[error("could not buffer order {order_id} to the overflow queue: {message}")]
pub struct BufferError {
    order_id: String,
    message: String,
}

impl OverflowQueue {
    pub fn new(sqs: aws_sdk_sqs::Client, queue_url: String) -> Self {
        Self { sqs, queue_url }
    }

    /// Sends the order's exact payload, with the circuit's name, when it opened and the
    /// order id as message attributes. Returns the message id.
    pub async fn buffer(
        &self,
        order: &Order,
        circuit: &CircuitInfo,
    ) -> Result<String, BufferError> {
        let fail = |message: String| BufferError {
            order_id: order.order_id.clone(),
            message,
        };
        let mut request = self
            .sqs
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(order.payload.to_string())
            .message_attributes("circuit", string_attribute(&circuit.name).map_err(&fail)?)
            .message_attributes(
                "order_id",
                string_attribute(&order.order_id).map_err(&fail)?,
            );
        if let Some(opened_at) = circuit.opened_at {
            request = request
                .message_attributes("opened_at", number_attribute(opened_at).map_err(&fail)?);
        }
        let sent = request
            .send()
            .await
            .map_err(|e| fail(aws_sdk_sqs::error::DisplayErrorContext(&e).to_string()))?;
        Ok(sent.message_id.unwrap_or_default())
    }
}

fn string_attribute(value: &str) -> Result<MessageAttributeValue, String> {
    MessageAttributeValue::builder()
        .data_type("String")
        .string_value(value)
        .build()
        .map_err(|e| e.to_string())
}

fn number_attribute(value: u64) -> Result<MessageAttributeValue, String> {
    MessageAttributeValue::builder()
        .data_type("Number")
        .string_value(value.to_string())
        .build()
        .map_err(|e| e.to_string())
}
