//! Lambda's SQS event source mapping for `overflow-replay`, played against moto as Lambda
//! plays it: receive up to 10 messages, invoke with them, delete what the function did not
//! report as failed; a failed record (or the whole batch, when the invocation fails or
//! times out) is left alone and comes back after the queue's visibility timeout, and the
//! function's own changes (deferrals, visibility) are honoured. [`poll_once`] is one such
//! poll, [`EventSource`] polls in the background.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context as _;
use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, MessageSystemAttributeName};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::function_process::FunctionProcess;
use super::runtime_api::Invocation;

/// What passes of the event source mapping did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplayPass {
    /// Records handed to the function.
    pub received: usize,
    /// Records left in the queue: reported as failed, or of a failed invocation.
    pub failed: usize,
    /// Invocations.
    pub invocations: usize,
    /// Invocations that failed or timed out (their whole batch came back).
    pub invocation_errors: usize,
}

impl std::ops::AddAssign for ReplayPass {
    fn add_assign(&mut self, pass: Self) {
        self.received += pass.received;
        self.failed += pass.failed;
        self.invocations += pass.invocations;
        self.invocation_errors += pass.invocation_errors;
    }
}

/// A running event source mapping: polls in the background until [`stop`](Self::stop).
#[derive(Debug)]
pub struct EventSource {
    stop: Arc<AtomicBool>,
    task: JoinHandle<anyhow::Result<ReplayPass>>,
}

impl EventSource {
    /// Polls `queue_url` for `replay` in the background. Start several for a
    /// `MaximumConcurrency` above one.
    pub fn start(
        sqs: aws_sdk_sqs::Client,
        queue_url: String,
        replay: Arc<FunctionProcess>,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let task = tokio::spawn(async move {
            let mut total = ReplayPass::default();
            while !stopped.load(Ordering::SeqCst) {
                total += poll_once(&sqs, &queue_url, &replay).await?;
            }
            Ok(total)
        });
        Self { stop, task }
    }

    /// Stops polling after the current pass; returns what all passes did.
    pub async fn stop(self) -> anyhow::Result<ReplayPass> {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await?
    }
}

/// One poll: receive (waiting up to a second for messages), invoke, delete what succeeded;
/// leave the rest to the visibility timeout.
pub async fn poll_once(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
    replay: &FunctionProcess,
) -> anyhow::Result<ReplayPass> {
    let received = sqs
        .receive_message()
        .queue_url(queue_url)
        .max_number_of_messages(10)
        .wait_time_seconds(1)
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .message_attribute_names("All")
        .send()
        .await?;
    let messages = received.messages.unwrap_or_default();
    if messages.is_empty() {
        return Ok(ReplayPass::default());
    }
    let records: Vec<Value> = messages.iter().map(lambda_record).collect();
    let failed: Vec<String> = match replay.invoke(json!({ "Records": records })).await? {
        Invocation::Response(response) => response["batchItemFailures"]
            .as_array()
            .context("no batchItemFailures in the replay response")?
            .iter()
            .filter_map(|f| f["itemIdentifier"].as_str().map(str::to_owned))
            .collect(),
        // A failed or timed-out invocation: the whole batch comes back.
        Invocation::Error { .. } => {
            return Ok(ReplayPass {
                received: messages.len(),
                failed: messages.len(),
                invocations: 1,
                invocation_errors: 1,
            });
        }
    };
    let mut deletes = Vec::new();
    for message in &messages {
        let (Some(id), Some(handle)) = (message.message_id(), message.receipt_handle()) else {
            continue;
        };
        if !failed.iter().any(|f| f == id) {
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
            .queue_url(queue_url)
            .set_entries(Some(deletes))
            .send()
            .await?;
    }
    Ok(ReplayPass {
        received: messages.len(),
        failed: failed.len(),
        invocations: 1,
        invocation_errors: 0,
    })
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
