//! A table on a fresh dynalite, and the `breaker` binary run against it.

use std::collections::HashMap;
use std::sync::Arc;

use aws_sdk_dynamodb::types::AttributeValue;
use breaker_runtime::store::{DynamoDbStore, RecordWrite, StateStore as _, WriteOutcome};
use devstack::fixtures::dynalite::Dynalite;
use devstack::wall_clock::unix_secs;

pub(crate) type Item = HashMap<String, AttributeValue>;

/// The table every test uses.
pub(crate) const TABLE: &str = "circuits";
/// The operator name the runs see as `$USER`.
pub(crate) const USER: &str = "ci-operator";

/// dynalite with the default circuit table, and a store on it.
pub(crate) struct Table {
    pub(crate) dynalite: Dynalite,
    pub(crate) store: Arc<DynamoDbStore>,
}

impl Table {
    pub(crate) async fn new() -> Self {
        let dynalite = Dynalite::start().await.expect("dynalite starts");
        dynalite.create_circuit_table(TABLE).await.expect("table");
        let store = DynamoDbStore::builder()
            .table_name(TABLE)
            .client(dynalite.client())
            .build()
            .expect("valid store");
        Self {
            dynalite,
            store: Arc::new(store),
        }
    }

    /// Runs `breaker ARGS` with the table from `CIRCUIT_BREAKER_TABLE`.
    pub(crate) async fn breaker(&self, args: &[&str]) -> Run {
        self.breaker_with(args, &[("CIRCUIT_BREAKER_TABLE", TABLE)])
            .await
    }

    /// Runs `breaker ARGS` with the AWS environment of this dynalite plus `env`. STS goes
    /// to dynalite too (it answers no STS call), so the identity falls back to `$USER`
    /// without ever reaching AWS.
    pub(crate) async fn breaker_with(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        self.breaker_in(args, env, &[]).await
    }

    /// Runs `breaker ARGS` as [`Table::breaker_with`] does, with the variables `unset`
    /// removed after (an operator's shell without static keys, say).
    pub(crate) async fn breaker_in(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
        unset: &[&str],
    ) -> Run {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_breaker"));
        command
            .args(args)
            .env_remove("CIRCUIT_BREAKER_TABLE")
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_ENDPOINT_URL")
            .envs(self.dynalite.env())
            .env("AWS_ENDPOINT_URL_STS", self.dynalite.endpoint())
            .env("USER", USER)
            .envs(env.iter().copied());
        for name in unset {
            command.env_remove(name);
        }
        let output = command.output().await.expect("breaker runs");
        let run = Run {
            code: output.status.code().expect("exited, not killed"),
            stdout: String::from_utf8(output.stdout).expect("utf-8 stdout"),
            stderr: String::from_utf8(output.stderr).expect("utf-8 stderr"),
        };
        assert!(
            !run.stderr.contains("panicked"),
            "breaker panicked: {run:?}"
        );
        run
    }

    /// The raw item of `circuit`, strongly consistent.
    pub(crate) async fn raw(&self, circuit: &str) -> Option<Item> {
        self.dynalite
            .client()
            .get_item()
            .table_name(TABLE)
            .key("id", AttributeValue::S(circuit.into()))
            .consistent_read(true)
            .send()
            .await
            .expect("GetItem")
            .item
    }

    /// Writes `attributes` as `circuit`'s whole item, as a hand edit would.
    pub(crate) async fn put_raw(&self, circuit: &str, attributes: &[(&str, AttributeValue)]) {
        let mut item: Item = attributes
            .iter()
            .map(|(name, value)| ((*name).to_owned(), value.clone()))
            .collect();
        item.insert("id".into(), AttributeValue::S(circuit.into()));
        self.dynalite
            .client()
            .put_item()
            .table_name(TABLE)
            .set_item(Some(item))
            .send()
            .await
            .expect("PutItem");
    }

    /// Trips `circuit` now with `failures`, as a breaker environment would.
    pub(crate) async fn trip(&self, circuit: &str, failures: u32) -> u64 {
        let now = unix_secs();
        let trip = RecordWrite::Trip {
            opened_by: None,
            failure_count: failures,
            opened_at: now,
            expiration: now + 3_630,
            open_until: None,
        };
        assert_eq!(
            self.store.apply(circuit, &trip).await,
            Ok(WriteOutcome::Won)
        );
        now
    }

    /// Trips `circuit` and elects `owner` to probe it (lease 60 s).
    pub(crate) async fn half_open(&self, circuit: &str, owner: &str) -> u64 {
        let opened = self.trip(circuit, 5).await;
        let now = unix_secs();
        let elect = RecordWrite::Elect {
            owner: owner.into(),
            expected_opened_at: Some(opened),
            expected_successes: 0,
            now,
            lease_expiry: now + 60,
            expiration: now + 3_630,
        };
        assert_eq!(
            self.store.apply(circuit, &elect).await,
            Ok(WriteOutcome::Won)
        );
        opened
    }
}

/// What one run of `breaker` did.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    /// Asserts it succeeded and returns its stdout.
    pub(crate) fn ok(&self) -> &str {
        assert_eq!(self.code, 0, "{self:?}");
        &self.stdout
    }

    /// Asserts it failed with `code` and said so on stderr, mentioning `words`.
    pub(crate) fn failed(&self, code: i32, words: &str) {
        assert_eq!(self.code, code, "{self:?}");
        assert!(
            self.stderr.contains(words),
            "stderr lacks {words:?}: {self:?}"
        );
    }

    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.ok()).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }
}

pub(crate) fn s(item: &Item, attribute: &str) -> Option<String> {
    item.get(attribute).map(|v| v.as_s().expect("S").clone())
}

pub(crate) fn n(item: &Item, attribute: &str) -> Option<u64> {
    item.get(attribute)
        .map(|v| v.as_n().expect("N").parse().expect("integer"))
}
