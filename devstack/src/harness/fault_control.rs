//! An HTTP control endpoint for the faults of a running [`SampleStack`], so a person at a
//! terminal (`make local`) can break and heal the stack's downstreams with `curl`:
//!
//! ```text
//! curl -X POST http://127.0.0.1:4563/cost-explorer/throttle   # ThrottlingException from now on
//! curl -X POST http://127.0.0.1:4563/payments/down            # the payment API answers 503
//! curl -X POST http://127.0.0.1:4563/cost-explorer/heal       # forward to moto again
//! curl http://127.0.0.1:4563/                                 # every fault and request count
//! ```
//!
//! Targets: `cost-explorer` and `sqs` (behind the fault proxy: `throttle`, `unavailable`,
//! `slow` (forwarded after [`SLOW`]), `drop`, `heal`) and `payments` (the stub: `down`,
//! `heal`). An unknown target or fault gets a 404 naming what exists; nothing changes.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::BufReader;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::sample_stack::SampleStack;
use crate::fixtures::fault_proxy::{Fault, Service};
use crate::fixtures::http1::{self, Unframed};

/// The delay of `slow`: past the functions' attempt timeouts in [`SampleStack::function_env`].
pub const SLOW: Duration = Duration::from_secs(6);

/// What `POST /<target>/<fault>` accepts, for the 404's message.
const USAGE: &str = "POST /cost-explorer/<fault> or /sqs/<fault> with fault = throttle | unavailable | slow | drop | heal; POST /payments/down | /payments/heal; GET / for the state";

/// The running endpoint. Dropping it stops it.
///
/// ```no_run
/// # async fn demo() -> anyhow::Result<()> {
/// use std::sync::Arc;
/// use devstack::fixtures::http1;
/// use devstack::harness::fault_control::FaultControl;
/// use devstack::harness::sample_stack::SampleStack;
///
/// let stack = Arc::new(SampleStack::start().await?);
/// let control = FaultControl::start("127.0.0.1:0", Arc::clone(&stack)).await?;
/// let address = control.url().trim_start_matches("http://");
/// let (status, _) = http1::request(address, "POST", "/payments/down", &[], b"").await?;
/// assert_eq!(status, 200);
/// assert!(stack.payments.is_down());
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct FaultControl {
    url: String,
    server: JoinHandle<()>,
}

impl Drop for FaultControl {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FaultControl {
    /// Listens on `listen` (`127.0.0.1:PORT`; port 0: a free one) for the faults of `stack`.
    pub async fn start(listen: &str, stack: Arc<SampleStack>) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(listen).await?;
        let url = format!("http://{}", listener.local_addr()?);
        let server = tokio::spawn(serve(listener, stack));
        Ok(Self { url, server })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }
}

async fn serve(listener: TcpListener, stack: Arc<SampleStack>) {
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(connection(stream, Arc::clone(&stack)));
    }
}

async fn connection(stream: TcpStream, stack: Arc<SampleStack>) -> std::io::Result<()> {
    let (reader, mut writer) = stream.into_split();
    let mut reader = BufReader::new(reader);
    while let Some((head, _)) = http1::read_message(&mut reader, Unframed::NoBody).await? {
        let (status, body) = answer(&stack, head.method(), head.path());
        let json = [("Content-Type", "application/json")];
        let mut body = body.to_string().into_bytes();
        body.push(b'\n');
        http1::write_response(&mut writer, status, &json, &body).await?;
    }
    Ok(())
}

/// The status and JSON body of one request; applies the fault it names.
fn answer(stack: &SampleStack, method: &str, path: &str) -> (u16, Value) {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method, parts.as_slice()) {
        ("GET", [""]) => (200, state(stack)),
        ("POST", ["payments", "down"]) => {
            stack.payments.set_down(true);
            (200, state(stack))
        }
        ("POST", ["payments", "heal"]) => {
            stack.payments.set_down(false);
            (200, state(stack))
        }
        ("POST", [target, fault]) => {
            let service = match *target {
                "cost-explorer" => Service::CostExplorer,
                "sqs" => Service::Sqs,
                _ => return (404, json!({"error": USAGE})),
            };
            let fault = match *fault {
                "throttle" => Some(Fault::Throttle),
                "unavailable" => Some(Fault::Unavailable),
                "slow" => Some(Fault::Latency(SLOW)),
                "drop" => Some(Fault::DropConnection),
                "heal" => None,
                _ => return (404, json!({"error": USAGE})),
            };
            stack.proxy.inject(service, fault);
            (200, state(stack))
        }
        _ => (404, json!({"error": USAGE})),
    }
}

/// Every target's fault and how many requests it saw and faulted.
fn state(stack: &SampleStack) -> Value {
    let proxied = |service| {
        json!({
            "fault": match stack.proxy.fault(service) {
                None => "none",
                Some(Fault::Throttle) => "throttle",
                Some(Fault::Unavailable) => "unavailable",
                Some(Fault::Latency(_)) => "slow",
                Some(Fault::DropConnection) => "drop",
                Some(Fault::AnswerLost) => "answer-lost",
                Some(Fault::AnswerLostOnce) => "answer-lost-once",
            },
            "requests": stack.proxy.seen(service),
            "faulted": stack.proxy.injected(service),
        })
    };
    json!({
        "cost-explorer": proxied(Service::CostExplorer),
        "sqs": proxied(Service::Sqs),
        "payments": {
            "fault": if stack.payments.is_down() { "down" } else { "none" },
            "requests": stack.payments.requests(),
            "charged": stack.payments.charged().len(),
        },
    })
}
