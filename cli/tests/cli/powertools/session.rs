//! One Powertools execution environment: `powertools.py` run by the venv's Python with one
//! pinned Powertools release first on its path, kept running between calls so its
//! module-level counts live on as in a warm Lambda environment.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::support::{TABLE, Table};

/// A running `powertools.py` on one circuit.
pub(crate) struct Powertools {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    /// Calls that reached the downstream so far.
    pub(crate) reached: u64,
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

impl Powertools {
    /// Starts Powertools `version` (installed into `.local/powertools-VERSION` by
    /// `scripts/install-tools.sh python`) on `circuit` of `table`, and checks that release
    /// is the one that runs.
    pub(crate) async fn start(version: &str, table: &Table, circuit: &str) -> Self {
        let root = repository();
        let python = root.join(".local/venv/bin/python");
        let package = root.join(format!(".local/powertools-{version}"));
        for needed in [&python, &package] {
            assert!(
                needed.exists(),
                "{} is missing: run scripts/install-tools.sh python",
                needed.display()
            );
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/powertools.py");
        let mut child = Command::new(python)
            .arg(script)
            .args([
                table.dynalite.endpoint(),
                TABLE.to_owned(),
                circuit.to_owned(),
            ])
            .envs(table.dynalite.env())
            .env("PYTHONPATH", &package)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python starts");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let mut powertools = Self {
            child,
            stdin,
            stdout,
            reached: 0,
        };
        let hello = powertools.answer().await;
        assert_eq!(
            hello["version"].as_str(),
            Some(version),
            "the Powertools release that runs"
        );
        powertools
    }

    /// One call to a downstream that succeeds (`ok`) or fails: `ran`, `failed` or `rejected`.
    pub(crate) async fn call(&mut self, ok: bool) -> String {
        let line = if ok { "ok\n" } else { "fail\n" };
        self.stdin
            .write_all(line.as_bytes())
            .await
            .expect("powertools.py reads its calls");
        let answer = self.answer().await;
        self.reached = answer["reached"].as_u64().expect("a count");
        answer["outcome"].as_str().expect("an outcome").to_owned()
    }

    /// `calls` calls, each succeeding (`ok`) or failing; their outcomes.
    pub(crate) async fn calls(&mut self, calls: u32, ok: bool) -> Vec<String> {
        let mut outcomes = Vec::new();
        for _ in 0..calls {
            outcomes.push(self.call(ok).await);
        }
        outcomes
    }

    async fn answer(&mut self) -> serde_json::Value {
        match self.stdout.next_line().await.expect("stdout readable") {
            Some(line) => serde_json::from_str(&line).expect("one JSON object a line"),
            None => {
                let status = self.child.wait().await.expect("python exits");
                panic!("powertools.py ended ({status}); its stderr says why")
            }
        }
    }
}
