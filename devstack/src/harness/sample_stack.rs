//! Everything the sample functions talk to, on loopback: dynalite (circuit and snapshot
//! tables), moto (overflow queue + DLQ, Cost Explorer) behind the fault proxy, and the
//! stub payment API. Shared by the end-to-end tests and the demo.
//!
//! The functions run as real binaries ([`FunctionProcess`]); [`SampleStack::poll`] and
//! [`SampleStack::replay_once`] play the SQS event source mapping for `overflow-replay`
//! ([`event_source`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_sqs::types::QueueAttributeName;

use super::event_source::{self, EventSource, ReplayPass};
use super::function_process::{FunctionProcess, LogEcho};
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
/// The ledger table of `charge` and `overflow-replay` (key `order_id`).
pub const LEDGER_TABLE: &str = "orders-ledger";

/// The overflow queue's redrive and visibility settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueSettings {
    /// Receives before a message moves to the DLQ.
    pub max_receive_count: u32,
    /// How long a received message stays invisible.
    pub visibility_timeout: Duration,
}

impl Default for QueueSettings {
    /// [`MAX_RECEIVE_COUNT`] receives, 30 s.
    fn default() -> Self {
        Self {
            max_receive_count: MAX_RECEIVE_COUNT,
            visibility_timeout: Duration::from_secs(30),
        }
    }
}

/// The ports the functions reach the stack on; 0 (the default) picks a free one. Moto always
/// listens on a free loopback port: the functions reach it through the fault proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackPorts {
    /// Where dynalite, the payment stub and the fault proxy listen: loopback (the default),
    /// or every interface (`0.0.0.0`) for functions in containers.
    pub bind: std::net::IpAddr,
    /// dynalite (`AWS_ENDPOINT_URL_DYNAMODB`).
    pub dynamodb: u16,
    /// The fault proxy in front of moto (`AWS_ENDPOINT_URL`: SQS, Cost Explorer).
    pub aws: u16,
    /// The payment stub (`PAYMENT_API_URL`).
    pub payments: u16,
}

impl Default for StackPorts {
    /// Free loopback ports.
    fn default() -> Self {
        Self {
            bind: std::net::Ipv4Addr::LOCALHOST.into(),
            dynamodb: 0,
            aws: 0,
            payments: 0,
        }
    }
}

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

impl SampleStack {
    /// Starts every service and creates the tables and queues ([`QueueSettings::default`]).
    pub async fn start() -> anyhow::Result<Self> {
        Self::start_with(QueueSettings::default()).await
    }

    /// [`start`](Self::start) with the overflow queue's `settings`.
    pub async fn start_with(settings: QueueSettings) -> anyhow::Result<Self> {
        Self::start_on(StackPorts::default(), settings).await
    }

    /// [`start_with`](Self::start_with), the functions' endpoints on `ports`.
    ///
    /// ```no_run
    /// # async fn demo() -> anyhow::Result<()> {
    /// use devstack::harness::sample_stack::{QueueSettings, SampleStack, StackPorts};
    /// let ports = StackPorts { dynamodb: 4560, aws: 4561, payments: 4562, ..StackPorts::default() };
    /// let stack = SampleStack::start_on(ports, QueueSettings::default()).await?;
    /// assert_eq!(stack.payments.url(), "http://127.0.0.1:4562/charges");
    /// # Ok(()) }
    /// ```
    pub async fn start_on(ports: StackPorts, settings: QueueSettings) -> anyhow::Result<Self> {
        let dynamodb_port = match ports.dynamodb {
            0 => crate::fixtures::ports::free_port()?,
            port => port,
        };
        let payments_address = std::net::SocketAddr::new(ports.bind, ports.payments).to_string();
        let (dynalite, moto, payments) = tokio::try_join!(
            Dynalite::start_on(ports.bind, dynamodb_port),
            Moto::start(),
            PaymentStub::start_on(&payments_address)
        )?;
        let proxy = FaultProxy::start_on(
            &std::net::SocketAddr::new(ports.bind, ports.aws).to_string(),
            moto.address(),
        )
        .await?;
        dynalite.create_table(CIRCUIT_TABLE, "id", None).await?;
        dynalite
            .create_table(SNAPSHOT_TABLE, "period", None)
            .await?;
        dynalite
            .create_table(LEDGER_TABLE, "order_id", None)
            .await?;
        let queues = moto
            .create_queue_with_dlq("overflow", settings.max_receive_count)
            .await?;
        moto.sqs()
            .set_queue_attributes()
            .queue_url(&queues.queue_url)
            .attributes(
                QueueAttributeName::VisibilityTimeout,
                settings.visibility_timeout.as_secs().to_string(),
            )
            .send()
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
            ("SQS_OPERATION_TIMEOUT_MS", "1500".into()),
            ("LEDGER_TABLE", LEDGER_TABLE.into()),
            ("LEDGER_LEASE_SECS", "10".into()),
            ("LEDGER_OPERATION_TIMEOUT_MS", "1500".into()),
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

    /// Messages in `queue_url`: visible, in flight and delayed (deferred ones included).
    pub async fn queue_depth(&self, queue_url: &str) -> anyhow::Result<usize> {
        let attributes = self
            .moto
            .sqs()
            .get_queue_attributes()
            .queue_url(queue_url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesDelayed)
            .send()
            .await?
            .attributes
            .unwrap_or_default();
        Ok(attributes
            .values()
            .filter_map(|v| v.parse::<usize>().ok())
            .sum())
    }

    /// The order's ledger item (`status`, `attempt_id`, ...), as stored.
    pub async fn ledger_item(
        &self,
        order_id: &str,
    ) -> anyhow::Result<Option<HashMap<String, AttributeValue>>> {
        Ok(self
            .dynalite
            .client()
            .get_item()
            .table_name(LEDGER_TABLE)
            .key("order_id", AttributeValue::S(order_id.into()))
            .consistent_read(true)
            .send()
            .await?
            .item)
    }

    /// The order's ledger `status`, if it has an item.
    pub async fn ledger_status(&self, order_id: &str) -> anyhow::Result<Option<String>> {
        Ok(match self.ledger_item(order_id).await? {
            Some(item) => match item.get("status") {
                Some(AttributeValue::S(status)) => Some(status.clone()),
                _ => None,
            },
            None => None,
        })
    }

    /// One poll of the event source mapping; waits up to a second for messages.
    pub async fn replay_once(&self, replay: &FunctionProcess) -> anyhow::Result<ReplayPass> {
        event_source::poll_once(&self.moto.sqs(), &self.queues.queue_url, replay).await
    }

    /// The event source mapping, polling in the background for `replay` until
    /// [`EventSource::stop`]. Start several for a `MaximumConcurrency` above one.
    pub fn poll(&self, replay: Arc<FunctionProcess>) -> EventSource {
        EventSource::start(self.moto.sqs(), self.queues.queue_url.clone(), replay)
    }
}
