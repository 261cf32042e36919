//! `CIRCUIT_BREAKER_DISABLED` bypasses every circuit: checked in fresh processes, since the
//! variable is read when a circuit is created.

use std::process::Command;

fn run_with(value: Option<&str>) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_disabled-probe"));
    command.env_remove("CIRCUIT_BREAKER_DISABLED");
    if let Some(value) = value {
        command.env("CIRCUIT_BREAKER_DISABLED", value);
    }
    let output = command.output().expect("run disabled-probe");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

#[test]
fn truthy_values_bypass_every_circuit() {
    for value in ["1", "true", "TRUE", "yes", "on", " On "] {
        assert_eq!(
            run_with(Some(value)),
            "ran=20 store_calls=0 state=CLOSED",
            "{value:?}"
        );
    }
}

#[test]
fn other_values_leave_the_breaker_on() {
    for value in [
        None,
        Some("0"),
        Some("false"),
        Some("off"),
        Some(""),
        Some("disabled"),
    ] {
        let report = run_with(value);
        assert!(
            report.starts_with("ran=1 "),
            "{value:?}: opened after one failure: {report}"
        );
        assert!(report.ends_with("state=OPEN"), "{value:?}: {report}");
    }
}
