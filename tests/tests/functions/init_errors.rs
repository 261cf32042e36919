//! A sample function whose circuit table does not exist stops at init with an error naming
//! it (through `circuit_env::start`), instead of failing open on every call.

use devstack::harness::function_process::LogEcho;
use devstack::harness::sample_stack::SampleStack;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sample_function_whose_circuit_table_does_not_exist_stops_at_init_naming_it() {
    let stack = SampleStack::start().await.unwrap();
    let function = stack
        .start_function(
            "cost-report",
            LogEcho::Stderr,
            &[("CIRCUIT_BREAKER_TABLE", "no-such-circuits".into())],
        )
        .await
        .unwrap();
    let logs = crate::support::stopped_at_init(&function).await;
    assert!(
        logs.contains("table 'no-such-circuits'") && logs.contains("invalid configuration"),
        "the init error names the table: {logs}"
    );
}
