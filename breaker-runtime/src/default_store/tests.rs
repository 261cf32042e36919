use std::collections::HashMap;
use tracing::Level;

use super::*;
use crate::test_logs::Logs;

/// An environment holding only `pairs`.
fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let vars: HashMap<String, String> = pairs.iter().map(|&(k, v)| (k.into(), v.into())).collect();
    move |name| vars.get(name).cloned()
}

const LAMBDA: (&str, &str) = ("AWS_LAMBDA_FUNCTION_NAME", "charge");

fn problem(pairs: &[(&str, &str)]) -> Option<String> {
    resolve(vars(pairs)).problem.map(|p| p.to_string())
}

fn is_memory(pairs: &[(&str, &str)]) -> bool {
    format!("{:?}", resolve(vars(pairs)).store).contains("InMemory")
}

#[test]
fn inside_lambda_a_missing_blank_or_invalid_table_is_an_error_naming_it() {
    for (table, says) in [
        (None, "CIRCUIT_BREAKER_TABLE is not set"),
        (Some("  "), "CIRCUIT_BREAKER_TABLE is blank"),
        (
            Some("ab"),
            "CIRCUIT_BREAKER_TABLE is \"ab\": a table name is 3 to 255",
        ),
        (Some("my table"), "CIRCUIT_BREAKER_TABLE is \"my table\""),
        (
            Some("arn:aws:dynamodb:eu-west-1:1:stream/x"),
            "CIRCUIT_BREAKER_TABLE is \"arn:",
        ),
    ] {
        let mut pairs = vec![LAMBDA];
        if let Some(table) = table {
            pairs.push(("CIRCUIT_BREAKER_TABLE", table));
        }
        let problem = problem(&pairs).unwrap_or_else(|| panic!("{table:?}: no error"));
        assert!(problem.starts_with(says), "{table:?}: {problem}");
        assert!(
            problem.contains("CIRCUIT_BREAKER_STORE=memory"),
            "{problem}"
        );
        assert!(is_memory(&pairs), "the calls still run, fail-open");
    }
}

#[test]
fn inside_lambda_a_valid_table_or_an_explicit_memory_store_is_no_error() {
    let table = [LAMBDA, ("CIRCUIT_BREAKER_TABLE", "circuit-breakers")];
    assert_eq!(problem(&table), None);
    assert!(!is_memory(&table));
    let arn = [
        LAMBDA,
        (
            "CIRCUIT_BREAKER_TABLE",
            "arn:aws:dynamodb:eu-west-1:123456789012:table/circuits",
        ),
    ];
    assert_eq!(problem(&arn), None);
    for memory in ["memory", " Memory "] {
        let chosen = [LAMBDA, ("CIRCUIT_BREAKER_STORE", memory)];
        assert_eq!(problem(&chosen), None, "{memory:?}");
        assert!(is_memory(&chosen));
    }
}

#[test]
fn a_store_kind_that_is_neither_memory_nor_dynamodb_is_an_error_inside_lambda() {
    let typo = [LAMBDA, ("CIRCUIT_BREAKER_STORE", "memroy")];
    let problem = problem(&typo).expect("an error");
    assert!(
        problem.starts_with("CIRCUIT_BREAKER_STORE is \"memroy\", expected memory or dynamodb"),
        "{problem}"
    );
}

#[test]
fn outside_lambda_an_unset_table_is_the_in_memory_store_as_before() {
    assert_eq!(problem(&[]), None);
    assert!(is_memory(&[]));
    assert_eq!(problem(&[("CIRCUIT_BREAKER_TABLE", "x y")]), None);
    assert!(is_memory(&[("CIRCUIT_BREAKER_TABLE", "x y")]));
    // Asking for DynamoDB explicitly makes a missing table an error anywhere.
    assert!(problem(&[("CIRCUIT_BREAKER_STORE", "dynamodb")]).is_some());
}

#[test]
fn a_problem_is_logged_at_error_once_and_a_sound_store_not_at_all() {
    let logs = Logs::default();
    tracing::subscriber::with_default(logs.clone(), || {
        let _ = resolve(vars(&[LAMBDA]));
        assert_eq!(logs.at(Level::ERROR).len(), 1);
        let _ = resolve(vars(&[LAMBDA, ("CIRCUIT_BREAKER_STORE", "memory")]));
        let _ = resolve(vars(&[LAMBDA, ("CIRCUIT_BREAKER_TABLE", "circuits")]));
        assert_eq!(logs.at(Level::ERROR).len(), 1);
    });
}
