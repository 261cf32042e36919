//! The real Powertools for AWS Lambda (Python) on the same table (`powertools.py`, run with
//! the package `scripts/install-tools.sh python` installs): it rejects a circuit forced open
//! however long ago the circuit opened, and, unable to honour a disable, trips it with a
//! write that replaces the item, override and all (as docs/operations.md says).

use std::path::Path;

use aws_sdk_dynamodb::types::AttributeValue;
use devstack::wall_clock::unix_secs;

use crate::support::{TABLE, Table, s};

/// Runs `powertools.py` on `circuit`: `calls` calls to a downstream that succeeds (`ok`)
/// or fails; returns (calls that reached it, outcomes).
async fn powertools(table: &Table, circuit: &str, calls: u32, ok: bool) -> (u64, Vec<String>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = root.join(".local/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/install-tools.sh python",
        python.display()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/powertools.py");
    let output = tokio::process::Command::new(python)
        .arg(script)
        .args([
            table.dynalite.endpoint(),
            TABLE.to_owned(),
            circuit.to_owned(),
            calls.to_string(),
            if ok { "ok" } else { "fail" }.to_owned(),
        ])
        .envs(table.dynalite.env())
        .output()
        .await
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "powertools.py failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    let outcomes = report["outcomes"]
        .as_array()
        .expect("outcomes")
        .iter()
        .map(|o| o.as_str().expect("a string").to_owned())
        .collect();
    (report["reached"].as_u64().expect("a count"), outcomes)
}

/// An OPEN item as Powertools writes it, opened `ago` seconds ago.
async fn opened_ago(table: &Table, circuit: &str, ago: u64) {
    let now = unix_secs();
    let n = |v: u64| AttributeValue::N(v.to_string());
    table
        .dynalite
        .client()
        .put_item()
        .table_name(TABLE)
        .item("id", AttributeValue::S(circuit.into()))
        .item("state", AttributeValue::S("OPEN".into()))
        .item("failure_count", n(2))
        .item("opened_at", n(now - ago))
        .item("expiration", n(now + 3_600))
        .send()
        .await
        .expect("PutItem");
}

#[tokio::test]
async fn powertools_rejects_a_circuit_forced_open_and_trips_over_a_disable() {
    let table = Table::new().await;
    // Control: opened long ago, recovery (1 s) elapsed, so Powertools probes and closes.
    opened_ago(&table, "control", 100).await;
    let (reached, _) = powertools(&table, "control", 1, true).await;
    assert_eq!(reached, 1, "an elapsed recovery lets Powertools probe");

    // The same circuit, forced open for a minute: every call rejected, nothing probes.
    opened_ago(&table, "timed", 100).await;
    table
        .breaker(&["open", "timed", "--for", "1m", "--by", "ops"])
        .await
        .ok();
    let (reached, outcomes) = powertools(&table, "timed", 3, true).await;
    assert_eq!((reached, outcomes), (0, vec!["rejected".to_owned(); 3]));

    // Forced open until released, on a circuit that had no item.
    table.breaker(&["open", "fresh", "--by", "ops"]).await.ok();
    let (reached, outcomes) = powertools(&table, "fresh", 3, true).await;
    assert_eq!((reached, outcomes), (0, vec!["rejected".to_owned(); 3]));
    let item = table.raw("fresh").await.expect("the item");
    assert_eq!(
        s(&item, "override").as_deref(),
        Some("OPEN"),
        "Powertools wrote nothing"
    );

    // Disabled: Powertools runs the calls, and its trip replaces the item.
    table.trip("disabled", 5).await;
    table
        .breaker(&["disable", "disabled", "--by", "ops"])
        .await
        .ok();
    let (reached, outcomes) = powertools(&table, "disabled", 2, false).await;
    assert_eq!((reached, outcomes), (2, vec!["failed".to_owned(); 2]));
    let item = table.raw("disabled").await.expect("the item");
    assert_eq!(s(&item, "state").as_deref(), Some("OPEN"), "{item:?}");
    assert!(
        !item.contains_key("override"),
        "the trip erased the override: {item:?}"
    );
}
