//! What the function tests ask of the stack again and again: a function started with the
//! stack's environment, the sample events, queue depths and draining the overflow queue
//! through `overflow-replay`, as its event source would.

use std::time::{Duration, Instant};

use devstack::harness::function_process::{FunctionProcess, LogEcho};
use devstack::harness::sample_stack::SampleStack;
use serde_json::Value;

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
