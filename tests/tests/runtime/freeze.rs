//! A frozen environment does not trust its old copy: a real process stopped (SIGSTOP) for
//! longer than its cache age and continued (SIGCONT) reads the store on its first call
//! after the pause, though its closed path reads no clock. Inside an invocation's deadline
//! scope (which reads the clock at its start, as Lambda handlers do) that holds for the
//! very first call; outside any scope it holds once the clock thread has ticked after the
//! pause (it is runnable at once; a call racing it could use the time before the pause).

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
