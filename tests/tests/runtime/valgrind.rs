//! A program using breaker runs under valgrind. rustix's own vDSO parser crashes there
//! (bytecodealliance/rustix#1559), so the coarse clock goes through libc; this test keeps it
//! that way. valgrind is a Debian package on every machine this project builds on.

use std::process::Command;

#[test]
fn a_circuit_trips_and_rejects_under_valgrind() {
    let output = Command::new("valgrind")
        .args(["--quiet", "--error-exitcode=99"])
        .arg(env!("CARGO_BIN_EXE_disabled-probe"))
        .env_remove("CIRCUIT_BREAKER_DISABLED")
        .output()
        .expect("valgrind is installed (Debian package `valgrind`)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "exit {:?}: {stdout}\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stderr)
    );
    let report = stdout.trim();
    assert!(
        report.starts_with("ran=1 "),
        "opened after one failure: {report}"
    );
    assert!(report.ends_with("state=OPEN"), "{report}");
}
