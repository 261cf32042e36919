//! A local SQS and Cost Explorer for tests: moto's server (installed into `.local/venv` by
//! `scripts/install-tools.sh`) on a free loopback port. Never used for DynamoDB: see
//! [`crate::dynalite`].
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use breaker_tests::moto::Moto;
//! let moto = Moto::start().await?;
//! let queues = moto.create_queue_with_dlq("overflow", 3).await?;
//! moto.seed_cost_and_usage(vec![serde_json::json!({"ResultsByTime": []})]).await?;
//! # Ok(()) }
//! ```
//!
//! No stray processes: like dynalite, moto runs under a small shell that kills it as soon
//! as its stdin closes; the [`Moto`] holds the other end of that pipe.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_sqs::config::{Credentials, SharedCredentialsProvider};
use aws_sdk_sqs::types::QueueAttributeName;
use serde_json::{Value, json};

use crate::http1;

const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs moto in the background and kills it when stdin reaches end-of-file.
const SUPERVISOR: &str = r#""$@" & child=$!
read -r _ignored
kill -9 "$child" 2>/dev/null
wait "$child" 2>/dev/null
exit 0"#;

/// A running moto server. Dropping it stops the server.
#[derive(Debug)]
pub struct Moto {
    address: String,
    child: Child,
    stdin: Option<ChildStdin>,
    sdk_config: SdkConfig,
}

/// An overflow queue and its dead-letter queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuePair {
    /// The queue's URL.
    pub queue_url: String,
    /// The DLQ's URL.
    pub dlq_url: String,
}

impl Moto {
    /// Starts moto on a free loopback port and waits until it answers.
    pub async fn start() -> anyhow::Result<Self> {
        let port = free_port()?;
        let address = format!("127.0.0.1:{port}");
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(SUPERVISOR)
            .arg("moto-supervisor")
            .arg(moto_server())
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", moto_server().display()))?;
        let stdin = child.stdin.take();
        let sdk_config = SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .endpoint_url(format!("http://{address}"))
            .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                "moto", "moto", None, None, "moto",
            )))
            .build();
        let moto = Self {
            address,
            child,
            stdin,
            sdk_config,
        };
        moto.wait_ready().await?;
        Ok(moto)
    }

    async fn wait_ready(&self) -> anyhow::Result<()> {
        let started = Instant::now();
        loop {
            if let Ok((200, _)) =
                http1::request(&self.address, "GET", "/moto-api/data.json", &[], b"").await
            {
                return Ok(());
            }
            if started.elapsed() > STARTUP_TIMEOUT {
                bail!(
                    "moto did not answer on {} within {STARTUP_TIMEOUT:?}",
                    self.address
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `127.0.0.1:PORT`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.address)
    }

    /// An SQS client straight to moto (no fault proxy), with dummy credentials.
    pub fn sqs(&self) -> aws_sdk_sqs::Client {
        aws_sdk_sqs::Client::new(&self.sdk_config)
    }

    /// Forgets every queue, message and seeded result.
    pub async fn reset(&self) -> anyhow::Result<()> {
        self.post("/moto-api/reset", &json!({})).await
    }

    /// Queues Cost Explorer answers: each `GetCostAndUsage` request body not seen before
    /// takes the next one (so page 2 of a paginated call takes the second result); a
    /// repeated request gets the same answer again.
    pub async fn seed_cost_and_usage(&self, results: Vec<Value>) -> anyhow::Result<()> {
        self.post(
            "/moto-api/static/ce/cost-and-usage-results",
            &json!({ "results": results }),
        )
        .await
    }

    async fn post(&self, path: &str, body: &Value) -> anyhow::Result<()> {
        let (status, answer) = http1::request(
            &self.address,
            "POST",
            path,
            &[("Content-Type", "application/json")],
            body.to_string().as_bytes(),
        )
        .await?;
        if status != 200 && status != 201 {
            bail!(
                "POST {path}: HTTP {status}: {}",
                String::from_utf8_lossy(&answer)
            );
        }
        Ok(())
    }

    /// Creates `name` and `name-dlq`, redriving to the DLQ after `max_receive_count`
    /// receives.
    pub async fn create_queue_with_dlq(
        &self,
        name: &str,
        max_receive_count: u32,
    ) -> anyhow::Result<QueuePair> {
        let sqs = self.sqs();
        let dlq_url = sqs
            .create_queue()
            .queue_name(format!("{name}-dlq"))
            .send()
            .await?
            .queue_url
            .context("no DLQ url")?;
        let dlq_arn = sqs
            .get_queue_attributes()
            .queue_url(&dlq_url)
            .attribute_names(QueueAttributeName::QueueArn)
            .send()
            .await?
            .attributes
            .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
            .context("no DLQ arn")?;
        let redrive = json!({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": max_receive_count});
        let queue_url = sqs
            .create_queue()
            .queue_name(name)
            .attributes(QueueAttributeName::RedrivePolicy, redrive.to_string())
            .send()
            .await?
            .queue_url
            .context("no queue url")?;
        Ok(QueuePair { queue_url, dlq_url })
    }

    /// Messages in `queue_url`, visible or in flight.
    pub async fn message_count(&self, queue_url: &str) -> anyhow::Result<usize> {
        let attributes = self
            .sqs()
            .get_queue_attributes()
            .queue_url(queue_url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await?
            .attributes
            .unwrap_or_default();
        let count = |name: &QueueAttributeName| -> usize {
            attributes
                .get(name)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        Ok(count(&QueueAttributeName::ApproximateNumberOfMessages)
            + count(&QueueAttributeName::ApproximateNumberOfMessagesNotVisible))
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        // EOF on the supervisor's stdin: it kills moto.
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.write_all(b"\n");
        }
        let _ = self.child.wait();
    }
}

fn moto_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../.local/venv/bin/moto_server")
}

fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}
