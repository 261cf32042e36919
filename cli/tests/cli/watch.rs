//! `breaker watch`: one view with `--once`; with `--for`, refreshes until then and logs the
//! changes it saw.

use std::time::Duration;

use crate::support::Table;

#[tokio::test]
async fn watch_once_prints_the_table_and_exits() {
    let table = Table::new().await;
    table.trip("payments", 5).await;
    let run = table.breaker(&["watch", "--once"]).await;
    let text = run.ok();
    assert!(
        text.contains("breaker watch: table 'circuits' at"),
        "{text}"
    );
    assert!(text.contains("payments") && text.contains("OPEN"), "{text}");
    assert!(!text.contains("changes:"), "{text}");
    let one = table.breaker(&["watch", "payments", "--once"]).await;
    assert!(one.ok().contains("payments"), "{one:?}");
}

#[tokio::test]
async fn watch_for_a_while_marks_and_logs_state_changes() {
    let table = Table::new().await;
    table.trip("payments", 5).await;
    table.trip("ledger", 5).await;
    let watching = table.breaker(&["watch", "--for", "6s", "--interval", "1s"]);
    let operate = async {
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        table
            .breaker(&["open", "payments", "--by", "alice"])
            .await
            .ok();
    };
    let (run, ()) = tokio::join!(watching, operate);
    let text = run.ok();
    assert!(
        text.contains("payments: OPEN -> FORCED OPEN"),
        "the change is logged:\n{text}"
    );
    assert!(
        text.contains("│ * ┆ payments"),
        "the row is marked:\n{text}"
    );
    assert!(
        !text.contains("ledger: "),
        "an unchanged circuit is not logged:\n{text}"
    );
    let views = text.matches("breaker watch: table").count();
    assert!(
        (2..=7).contains(&views),
        "{views} views in 6 s at one a second at most:\n{text}"
    );
}
