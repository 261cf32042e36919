//! What the function tests ask of the stack again and again: a function started with the
//! stack's environment, the sample events, queue depths and draining the overflow queue
//! through `overflow-replay`, as its event source would, and a payment API that keeps the
//! bodies it receives as sent.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use devstack::harness::function_process::{FunctionProcess, LogEcho};
use devstack::harness::sample_stack::SampleStack;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// Invokes `overflow-replay` (`replay`) with `event` and asserts its answer hands no record
/// back to the queue: each was charged, parked or deferred.
/// Waits for `function` to stop at its init, which must fail; its logs, for what the init
/// error must say.
pub async fn stopped_at_init(function: &FunctionProcess) -> String {
    let status = function
        .wait_exit(Duration::from_secs(20))
        .await
        .expect("the function stops at init");
    assert!(!status.success(), "{status:?}");
    function.logs().join("\n")
}

pub async fn replay_fails_no_item(replay: &FunctionProcess, event: Value) {
    let response = replay.invoke(event).await.unwrap().expect_response();
    assert_eq!(response["batchItemFailures"], json!([]), "{response}");
}

/// Function `name` against `stack`, its environment as [`SampleStack::function_env`]
/// sets it, its logs on stderr.
pub async fn start(stack: &SampleStack, name: &str) -> FunctionProcess {
    stack
        .start_function(name, LogEcho::Stderr, &[])
        .await
        .unwrap()
}

/// The sample event `events/<name>`, the one `make invoke` and `sam local invoke` send.
pub fn sample_event(name: &str) -> Value {
    let path = format!("{}/../events/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Messages in the overflow queue, visible or in flight (delayed ones not counted).
pub async fn in_overflow(stack: &SampleStack) -> usize {
    stack
        .moto
        .message_count(&stack.queues.queue_url)
        .await
        .unwrap()
}

/// Messages in the DLQ.
pub async fn dead_letters(stack: &SampleStack) -> usize {
    stack
        .moto
        .message_count(&stack.queues.dlq_url)
        .await
        .unwrap()
}

/// Messages in the overflow queue, delayed ones (deferred records) included.
pub async fn overflow_depth(stack: &SampleStack) -> usize {
    stack.queue_depth(&stack.queues.queue_url).await.unwrap()
}

/// Polls the overflow queue into `replay` until it is empty, delayed messages included;
/// fails the test if that takes longer than `within`. Returns how many records `replay`
/// reported failed on the way.
pub async fn drain(stack: &SampleStack, replay: &FunctionProcess, within: Duration) -> usize {
    let until = Instant::now() + within;
    let mut failed = 0;
    while overflow_depth(stack).await > 0 {
        assert!(
            Instant::now() < until,
            "the overflow queue did not drain within {within:?}: {} left",
            overflow_depth(stack).await
        );
        failed += stack.replay_once(replay).await.unwrap().failed;
    }
    failed
}

/// The function's log lines once at least `count` of them satisfy `matches`: its output is
/// read from pipes, so a line written just before an answer may arrive just after it.
/// Gives up after 15 s (a loaded CI machine) and returns what there is (the caller's
/// assertion then says); a match returns at once.
pub async fn logs_with(
    function: &FunctionProcess,
    count: usize,
    matches: impl Fn(&str) -> bool,
) -> Vec<String> {
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        let logs = function.logs();
        if logs.iter().filter(|l| matches(l)).count() >= count || Instant::now() > until {
            return logs;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A payment API that keeps each request body as the bytes it received (the stub of
/// `SampleStack` parses them, which would hide how a number was written) and charges
/// every request: 201 with a receipt.
pub struct RawPaymentApi {
    url: String,
    bodies: Arc<Mutex<Vec<String>>>,
}

impl RawPaymentApi {
    /// Listens on a free loopback port.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/charges", listener.local_addr().unwrap());
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&bodies);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let seen = Arc::clone(&seen);
                tokio::spawn(async move {
                    let mut reader = BufReader::new(stream);
                    let mut length = 0;
                    let mut line = String::new();
                    while reader.read_line(&mut line).await.unwrap_or(0) > 2 {
                        if let Some((name, value)) = line.split_once(':')
                            && name.eq_ignore_ascii_case("content-length")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                        line.clear();
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    seen.lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&body).into_owned());
                    let receipt = r#"{"id":"ch_raw"}"#;
                    let response = format!(
                        "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{receipt}",
                        receipt.len()
                    );
                    let _ = reader.into_inner().write_all(response.as_bytes()).await;
                });
            }
        });
        Self { url, bodies }
    }

    /// `PAYMENT_API_URL`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Every request body received, as sent.
    pub fn bodies(&self) -> Vec<String> {
        self.bodies.lock().unwrap().clone()
    }
}
