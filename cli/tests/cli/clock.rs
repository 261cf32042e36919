//! The operator's clock against the store's: writes computed from a clock far off the
//! store's `Date` are refused. The store's clock is moved by the fault proxy, which
//! rewrites the `Date` of dynalite's answers.

use devstack::fixtures::fault_proxy::FaultProxy;

use crate::support::{Run, Table, s};

/// `breaker ARGS` through `proxy`.
async fn via(table: &Table, proxy: &FaultProxy, args: &[&str]) -> Run {
    let endpoint = ["--endpoint-url", proxy.endpoint()];
    table.breaker(&[&endpoint[..], args].concat()).await
}

/// dynalite behind a proxy whose answers' `Date` is `shift` seconds off.
async fn behind_proxy(table: &Table, shift: i64) -> FaultProxy {
    let upstream = format!("127.0.0.1:{}", table.dynalite.port());
    let proxy = FaultProxy::start(&upstream).await.expect("proxy");
    proxy.shift_date(shift);
    proxy
}

#[tokio::test]
async fn writes_are_refused_when_this_clock_is_off_the_stores() {
    let table = Table::new().await;
    table.trip("payments", 5).await;
    // The store's clock 2 minutes behind: this machine is 2 minutes ahead.
    let ahead = behind_proxy(&table, -120).await;
    for command in [
        vec!["open", "payments", "--for", "30m", "--by", "a"],
        vec!["disable", "payments", "--by", "a"],
        vec!["close", "payments"],
    ] {
        let run = via(&table, &ahead, &command).await;
        run.failed(1, "ahead of the store's (its Date header)");
        run.failed(1, "nothing was written");
        run.failed(1, "--max-clock-skew");
    }
    let item = table.raw("payments").await.expect("the item");
    assert_eq!(s(&item, "state").as_deref(), Some("OPEN"));
    assert!(!item.contains_key("override"), "{item:?}");

    // Behind is refused too; a bound that covers the skew lets the write go.
    let behind = behind_proxy(&table, 120).await;
    via(&table, &behind, &["open", "payments", "--by", "a"])
        .await
        .failed(1, "behind the store's (its Date header)");
    let bound = ["--max-clock-skew", "3m", "open", "payments", "--by", "a"];
    via(&table, &behind, &bound).await.ok();
    let item = table.raw("payments").await.expect("the item");
    assert_eq!(s(&item, "override").as_deref(), Some("OPEN"));

    // A store in step: the default bound (30 s) holds.
    let in_step = behind_proxy(&table, 0).await;
    via(&table, &in_step, &["release", "payments"]).await.ok();
    let item = table.raw("payments").await.expect("the item");
    assert!(!item.contains_key("override"), "released: {item:?}");
}
