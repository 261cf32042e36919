//! The credentials operators have: a profile whose `credential_process` is a helper
//! script, and an SSO profile that has not signed in (what to run).

use std::path::PathBuf;

use crate::support::{TABLE, Table};

/// A fresh directory for one test's config file, helper script and home.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("breaker-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// The static keys and profile variables the fixtures set: without them the profile in
/// `AWS_CONFIG_FILE` is the only source of credentials.
const NO_STATIC_KEYS: [&str; 3] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
];

#[tokio::test]
async fn a_credential_process_profile_reads_the_table() {
    let table = Table::new().await;
    table.trip("payments", 5).await;
    let dir = scratch("process");
    let ran = dir.join("helper-ran");
    let helper = dir.join("credentials.sh");
    std::fs::write(
        &helper,
        format!(
            "#!/bin/sh\ntouch '{}'\n\
             printf '{{\"Version\":1,\"AccessKeyId\":\"local\",\"SecretAccessKey\":\"local\"}}'\n",
            ran.display()
        ),
    )
    .expect("helper script");
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&helper)
        .status()
        .expect("chmod");
    let config = dir.join("config");
    std::fs::write(
        &config,
        format!(
            "[profile operator]\nregion = us-east-1\ncredential_process = {}\n",
            helper.display()
        ),
    )
    .expect("config file");

    let run = table
        .breaker_in(
            &["list"],
            &[
                ("CIRCUIT_BREAKER_TABLE", TABLE),
                ("AWS_PROFILE", "operator"),
                ("AWS_CONFIG_FILE", config.to_str().expect("utf-8 path")),
                ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"),
            ],
            &NO_STATIC_KEYS,
        )
        .await;
    assert!(run.ok().contains("payments"), "{run:?}");
    assert!(ran.exists(), "the helper supplied the credentials: {run:?}");
}

#[tokio::test]
async fn an_sso_profile_without_a_session_says_to_sign_in() {
    let table = Table::new().await;
    let dir = scratch("sso");
    let config = dir.join("config");
    std::fs::write(
        &config,
        "[profile oncall]\nregion = us-east-1\nsso_session = corp\n\
         sso_account_id = 111122223333\nsso_role_name = Operator\n\n\
         [sso-session corp]\nsso_start_url = https://corp.awsapps.com/start\n\
         sso_region = us-east-1\n",
    )
    .expect("config file");

    // No token in this home's SSO cache: the operator has not run `aws sso login`.
    let run = table
        .breaker_in(
            &["list"],
            &[
                ("CIRCUIT_BREAKER_TABLE", TABLE),
                ("AWS_PROFILE", "oncall"),
                ("AWS_CONFIG_FILE", config.to_str().expect("utf-8 path")),
                ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"),
                ("HOME", dir.to_str().expect("utf-8 path")),
            ],
            &NO_STATIC_KEYS,
        )
        .await;
    run.failed(1, "run `aws sso login --profile oncall`");
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
}

/// aws-config's features as `cargo tree` resolves them with `selection` at the workspace
/// root (no selection: the default members, as `cargo lambda build --bin NAME` there).
fn aws_config_features(selection: &[&str]) -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let output = std::process::Command::new(env!("CARGO"))
        .current_dir(root)
        .args([
            "tree",
            "--locked",
            "--offline",
            "-e",
            "features",
            "-i",
            "aws-config",
        ])
        .args(selection)
        .output()
        .expect("cargo tree runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).expect("utf-8")
}

#[test]
fn only_the_cli_compiles_sso_and_credential_process() {
    for feature in ["\"sso\"", "\"credentials-process\""] {
        let cli = aws_config_features(&["-p", "breaker"]);
        assert!(cli.contains(feature), "the CLI lacks {feature}:\n{cli}");
        for functions in [&["-p", "charge"][..], &[]] {
            let tree = aws_config_features(functions);
            assert!(
                !tree.contains(feature),
                "{functions:?} has {feature}:\n{tree}"
            );
        }
    }
}
