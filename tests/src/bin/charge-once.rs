//! Runs a `charge` binary built elsewhere (e.g. for arm64, by `make cross-check`) under the
//! loopback Runtime API against the sample stack, and checks that an order is charged once:
//! charged on its first invocation, answered from the ledger on its second, one request to
//! the payment API.
//!
//! Usage: `CHARGE_BINARY=path [CHARGE_RUNNER=qemu-aarch64-static] charge-once`. With a
//! runner, the binary is started as `RUNNER BINARY` (a user-mode emulator); the process
//! exits non-zero when any check fails.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, ensure};
use devstack::harness::function_process::{FunctionProcess, LogEcho};
use devstack::harness::runtime_api::Invocation;
use devstack::harness::sample_stack::SampleStack;
use serde_json::json;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let binary = PathBuf::from(
        std::env::var_os("CHARGE_BINARY").context("set CHARGE_BINARY to a charge binary")?,
    );
    ensure!(binary.is_file(), "{} is not a file", binary.display());
    let runner = std::env::var("CHARGE_RUNNER")
        .ok()
        .filter(|r| !r.is_empty());
    let scratch = std::env::temp_dir().join(format!("charge-once-{}", std::process::id()));
    let started = match &runner {
        Some(runner) => wrap(&scratch, runner, &binary)?,
        None => binary.clone(),
    };
    let result = charge_once(&started).await;
    if result.is_ok() {
        let how = runner.map_or(String::new(), |r| format!(" under {r}"));
        println!("order-arm64 charged once by {}{how}", binary.display());
    }
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// A script that starts `binary` under `runner`: the harness starts one executable.
fn wrap(scratch: &Path, runner: &str, binary: &Path) -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::create_dir_all(scratch)?;
    let binary = binary.canonicalize()?;
    let script = scratch.join("charge");
    std::fs::write(
        &script,
        format!("#!/bin/sh\nexec {runner} '{}' \"$@\"\n", binary.display()),
    )?;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))?;
    Ok(script)
}

async fn charge_once(binary: &Path) -> anyhow::Result<()> {
    let stack = SampleStack::start().await?;
    let env = stack.function_env();
    let charge = FunctionProcess::start_binary(binary, "charge", &env, LogEcho::Stderr).await?;
    let order =
        json!({"order_id": "order-arm64", "amount": 42, "currency": "EUR", "customer": "c-1"});

    let first = charge.invoke(order.clone()).await?;
    let Invocation::Response(first) = first else {
        anyhow::bail!("first invocation: {first:?}");
    };
    println!("first invocation:  {first}");
    ensure!(first["charged"] == true, "not charged: {first}");
    let second = charge.invoke(order).await?;
    let Invocation::Response(second) = second else {
        anyhow::bail!("second invocation: {second:?}");
    };
    println!("second invocation: {second}");
    ensure!(
        second["duplicate"] == true && second["charged"] == true,
        "the second invocation is not answered as a duplicate: {second}"
    );

    ensure!(
        stack.payments.requests() == 1,
        "the payment API saw {} requests, not 1",
        stack.payments.requests()
    );
    ensure!(
        stack.payments.charged() == BTreeSet::from(["order-arm64".to_owned()]),
        "charged: {:?}",
        stack.payments.charged()
    );
    ensure!(stack.payments.charged_twice().is_empty(), "charged twice");
    let status = stack.ledger_status("order-arm64").await?;
    println!(
        "payment API requests: {}; ledger: {status:?}; init {:?}; restarts {}",
        stack.payments.requests(),
        charge.init_duration(),
        charge.restarts()
    );
    ensure!(charge.restarts() == 0, "the function was restarted");
    Ok(())
}
