//! Everything the sample functions talk to, on loopback: dynalite (circuit and snapshot
//! tables), moto (overflow queue + DLQ, Cost Explorer) behind the fault proxy, and the
//! stub payment API. Shared by the end-to-end tests and the demo.
//!
//! The functions run as real binaries ([`FunctionProcess`]); [`SampleStack::replay_once`]
//! plays the SQS event source mapping for `overflow-replay` (receive, invoke, delete what
//! succeeded, report the rest).

use std::collections::HashMap;

use anyhow::Context as _;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, MessageSystemAttributeName};
use serde_json::{Value, json};

use super::runtime_api::{FunctionProcess, LogEcho};
use crate::fixtures::dynalite::Dynalite;
use crate::fixtures::fault_proxy::FaultProxy;
use crate::fixtures::moto::{Moto, QueuePair};
use crate::fixtures::payment_stub::PaymentStub;

/// Receives before an overflow message moves to the DLQ (the template's `maxReceiveCount`).
pub const MAX_RECEIVE_COUNT: u32 = 5;

/// The circuit and snapshot tables' names.
pub const CIRCUIT_TABLE: &str = "circuit-breakers";
/// See [`CIRCUIT_TABLE`].
pub const SNAPSHOT_TABLE: &str = "cost-snapshots";

/// The local services of the sample stack.
#[derive(Debug)]
pub struct SampleStack {
    /// DynamoDB.
    pub dynalite: Dynalite,
    /// SQS and Cost Explorer.
    pub moto: Moto,
    /// In front of moto: the functions' `AWS_ENDPOINT_URL`.
    pub proxy: FaultProxy,
    /// The payment API.
    pub payments: PaymentStub,
    /// The overflow queue and its DLQ.
    pub queues: QueuePair,
}

/// What one pass of the event source mapping did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplayPass {
    /// Records handed to the function.
    pub received: usize,
    /// Records the function reported as failed (left in the queue).
    pub failed: usize,
}

impl SampleStack {
    /// Starts every service and creates the tables and queues.
    pub async fn start() -> anyhow::Result<Self> {
        let (dynalite, moto, payments) =
            tokio::try_join!(Dynalite::start(), Moto::start(), PaymentStub::start())?;
        let proxy = FaultProxy::start(moto.address()).await?;
        dynalite.create_table(CIRCUIT_TABLE, "id", None).await?;
        dynalite
            .create_table(SNAPSHOT_TABLE, "period", None)
            .await?;
        let queues = moto
            .create_queue_with_dlq("overflow", MAX_RECEIVE_COUNT)
            .await?;
        Ok(Self {
            dynalite,
            moto,
            proxy,
            payments,
            queues,
        })
    }

    /// The environment of every function: local endpoints, dummy credentials, the
    /// template's variables, and circuit tunables scaled down to seconds.
    pub fn function_env(&self) -> Vec<(&'static str, String)> {
        let mut env = self.dynalite.env();
        env.extend([
            ("AWS_ENDPOINT_URL", self.proxy.endpoint().to_owned()),
            ("CIRCUIT_BREAKER_TABLE", CIRCUIT_TABLE.into()),
            ("SNAPSHOT_TABLE", SNAPSHOT_TABLE.into()),
            ("OVERFLOW_QUEUE_URL", self.queues.queue_url.clone()),
            ("PAYMENT_API_URL", self.payments.url().to_owned()),
            ("PAYMENT_TIMEOUT_MS", "2000".into()),
            ("CIRCUIT_FAILURE_THRESHOLD", "3".into()),
            ("CIRCUIT_RECOVERY_TIMEOUT_SECS", "2".into()),
            ("CIRCUIT_SUCCESS_THRESHOLD", "1".into()),
            ("CIRCUIT_CACHE_MAX_AGE_SECS", "0".into()),
            ("CE_MAX_ATTEMPTS", "2".into()),
            ("CE_INITIAL_BACKOFF_MS", "20".into()),
            ("CE_ATTEMPT_TIMEOUT_MS", "2000".into()),
            ("CE_OPERATION_TIMEOUT_MS", "5000".into()),
            ("CE_REQUESTS_PER_SECOND", "50".into()),
            ("RUST_LOG", "info".into()),
        ]);
        env
    }

    /// Starts function `name` against this stack, with `overrides` on top of
    /// [`function_env`](Self::function_env).
    pub async fn start_function(
        &self,
        name: &str,
        echo: LogEcho,
        overrides: &[(&'static str, String)],
    ) -> anyhow::Result<FunctionProcess> {
        let mut env = self.function_env();
        env.retain(|(key, _)| !overrides.iter().any(|(k, _)| k == key));
        env.extend(overrides.iter().cloned());
        FunctionProcess::start(name, &env, echo).await
    }

    /// The circuit's DynamoDB item, as stored.
    pub async fn circuit_item(
        &self,
        circuit: &str,
    ) -> anyhow::Result<Option<HashMap<String, AttributeValue>>> {
        Ok(self
            .dynalite
            .client()
            .get_item()
            .table_name(CIRCUIT_TABLE)
            .key("id", AttributeValue::S(circuit.into()))
            .consistent_read(true)
            .send()
            .await?
            .item)
    }

    /// The circuit's stored `state`, `CLOSED` when there is no item.
    pub async fn circuit_state(&self, circuit: &str) -> anyhow::Result<String> {
        let item = self.circuit_item(circuit).await?;
        Ok(match item.as_ref().and_then(|i| i.get("state")) {
            Some(AttributeValue::S(state)) => state.clone(),
            _ => "CLOSED".into(),
        })
    }

    /// One poll of the event source mapping: receives up to 10 messages, invokes
    /// `overflow-replay` with them as an SQS event, deletes the ones it did not report as
    /// failed and makes the failed ones visible again.
    pub async fn replay_once(&self, replay: &FunctionProcess) -> anyhow::Result<ReplayPass> {
        let sqs = self.moto.sqs();
        let received = sqs
            .receive_message()
            .queue_url(&self.queues.queue_url)
            .max_number_of_messages(10)
            .visibility_timeout(30)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .message_attribute_names("All")
            .send()
            .await?;
        let messages = received.messages.unwrap_or_default();
        if messages.is_empty() {
            return Ok(ReplayPass::default());
        }
        let records: Vec<Value> = messages.iter().map(lambda_record).collect();
        let response = replay
            .invoke(json!({ "Records": records }))
            .await?
            .expect_response();
        let failed: Vec<&str> = response["batchItemFailures"]
            .as_array()
            .context("no batchItemFailures in the replay response")?
            .iter()
            .filter_map(|f| f["itemIdentifier"].as_str())
            .collect();
        let mut deletes = Vec::new();
        for message in &messages {
            let (Some(id), Some(handle)) = (message.message_id(), message.receipt_handle()) else {
                continue;
            };
            if failed.contains(&id) {
                // The mapping would wait out the visibility timeout; the demo has no time.
                sqs.change_message_visibility()
                    .queue_url(&self.queues.queue_url)
                    .receipt_handle(handle)
                    .visibility_timeout(0)
                    .send()
                    .await?;
            } else {
                deletes.push(
                    DeleteMessageBatchRequestEntry::builder()
                        .id(id)
                        .receipt_handle(handle)
                        .build()?,
                );
            }
        }
        if !deletes.is_empty() {
            sqs.delete_message_batch()
                .queue_url(&self.queues.queue_url)
                .set_entries(Some(deletes))
                .send()
                .await?;
        }
        Ok(ReplayPass {
            received: messages.len(),
            failed: failed.len(),
        })
    }
}

/// An SQS message in the shape Lambda's event source mapping delivers it.
fn lambda_record(message: &aws_sdk_sqs::types::Message) -> Value {
    let attributes: serde_json::Map<String, Value> = message
        .attributes()
        .map(|a| {
            a.iter()
                .map(|(k, v)| (k.as_str().to_owned(), Value::String(v.clone())))
                .collect()
        })
        .unwrap_or_default();
    let message_attributes: serde_json::Map<String, Value> = message
        .message_attributes()
        .map(|a| {
            a.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        json!({
                            "stringValue": v.string_value(),
                            "stringListValues": [],
                            "binaryListValues": [],
                            "dataType": v.data_type(),
                        }),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    json!({
        "messageId": message.message_id(),
        "receiptHandle": message.receipt_handle(),
        "body": message.body(),
        "attributes": attributes,
        "messageAttributes": message_attributes,
        "md5OfBody": message.md5_of_body(),
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:overflow",
        "awsRegion": "us-east-1",
    })
}
