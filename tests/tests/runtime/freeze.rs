//! A frozen environment does not trust its old copy: a real process stopped (SIGSTOP) for
//! longer than its cache age and continued (SIGCONT) reads the store on its first call
//! after the pause, though its closed path reads no clock. Inside an invocation's deadline
//! scope (which reads the clock at its start, as Lambda handlers do) that holds for the
//! very first call; outside any scope it holds once the clock thread has ticked after the
//! pause (it is runnable at once; a call racing it could use the time before the pause).
//! A function written as the README's quickstart (`quickstart-function`, whose
//! `breaker_runtime::lambda::run` scopes every invocation), frozen between invocations as
//! Lambda freezes it, reads the store in the first invocation after the thaw.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Worker {
    fn start(scoped: bool) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_freeze-worker"));
        if scoped {
            command.arg("scoped");
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the worker starts");
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        Self {
            child,
            stdin,
            stdout,
        }
    }

    /// One call; the store reads so far.
    fn call(&mut self) -> u64 {
        writeln!(self.stdin, "call").expect("the worker reads");
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .expect("the worker answers");
        line.trim()
            .strip_prefix("store_calls=")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("unexpected answer {line:?}"))
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {signal}");
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn first_call_after_a_pause_reads_the_store(scoped: bool, after_continue: Duration) {
    let mut worker = Worker::start(scoped);
    let first = worker.call();
    assert_eq!(first, 1, "the first call reads the record");
    assert_eq!(worker.call(), first, "a fresh copy is trusted: no read");
    // Let the clock thread sleep again, then freeze the process past the cache age (1 s).
    std::thread::sleep(Duration::from_millis(50));
    worker.signal("-STOP");
    std::thread::sleep(Duration::from_millis(2_000));
    worker.signal("-CONT");
    std::thread::sleep(after_continue);
    assert_eq!(
        worker.call(),
        first + 1,
        "after 2 s frozen the 1 s old copy is not trusted"
    );
}

#[test]
fn a_frozen_invocation_reads_the_store_on_its_first_call_after_the_thaw() {
    for _ in 0..3 {
        first_call_after_a_pause_reads_the_store(true, Duration::ZERO);
    }
}

#[test]
fn a_frozen_process_outside_any_scope_reads_the_store_after_the_thaw() {
    for _ in 0..3 {
        // A few ticks of the clock thread (5 ms each).
        first_call_after_a_pause_reads_the_store(false, Duration::from_millis(50));
    }
}

/// The default `local_cache_max_age` the quickstart's circuit keeps.
const DEFAULT_CACHE_AGE: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quickstart_function_frozen_between_invocations_reads_the_store_after_the_thaw() {
    use devstack::fixtures::dynalite::Dynalite;
    use devstack::fixtures::fault_proxy::{FaultProxy, Service};
    use devstack::harness::function_process::{FunctionProcess, LogEcho};

    let dynalite = Dynalite::start().await.unwrap();
    dynalite
        .create_circuit_table("circuit-breakers")
        .await
        .unwrap();
    // Every DynamoDB request of the function passes the proxy, which counts them.
    let dynamodb = FaultProxy::start(&format!("127.0.0.1:{}", dynalite.port()))
        .await
        .unwrap();
    let mut env = dynalite.env();
    env.retain(|(key, _)| *key != "AWS_ENDPOINT_URL_DYNAMODB");
    env.push(("AWS_ENDPOINT_URL_DYNAMODB", dynamodb.endpoint().to_owned()));
    env.push(("INVENTORY_URL", healthy_api().await));
    let function = FunctionProcess::start("quickstart-function", &env, LogEcho::Stderr)
        .await
        .unwrap();
    let reserve = |sku: &str| {
        let event = serde_json::json!({ "sku": sku });
        let function = &function;
        async move { function.invoke(event).await.unwrap().expect_response() }
    };

    assert_eq!(reserve("before").await["reserved"], true);
    let warm = dynamodb.seen(Service::Other);
    assert!(warm >= 1, "warm_up read the circuit's record");
    reserve("warm").await;
    assert_eq!(
        dynamodb.seen(Service::Other),
        warm,
        "a fresh copy is trusted: no read"
    );

    // Frozen between invocations (blocked on the Runtime API's `next`) past the cache age.
    let pid = function.pid().expect("the function runs").to_string();
    let signal = |name: &str| {
        let status = Command::new("kill").args([name, &pid]).status().unwrap();
        assert!(status.success(), "kill {name}");
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    signal("-STOP");
    tokio::time::sleep(DEFAULT_CACHE_AGE + Duration::from_secs(1)).await;
    signal("-CONT");
    assert_eq!(reserve("thawed").await["reserved"], true);
    assert!(
        dynamodb.seen(Service::Other) > warm,
        "the first invocation after the thaw did not trust its copy from before the freeze"
    );
    assert_eq!(function.restarts(), 0);
}

/// An inventory API answering 200 to every request; its `host:port`.
async fn healthy_api() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                // One request per connection (`Connection: close`): its head fits a read.
                let mut head = [0; 1024];
                let _ = stream.read(&mut head).await;
                let answer = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    address
}
