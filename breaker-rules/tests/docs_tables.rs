//! The README's table of settings and the attribute docs' table of keys are the table of
//! settings (`breaker_rules::knobs`), rendered: a row added, changed or removed there fails
//! here until both docs hold the table printed below, verbatim.

use std::path::Path;

use breaker_rules::MAX_DURATION_SECS;
use breaker_rules::knobs::{Group, KNOBS, Knob, Value};

#[test]
fn the_attribute_docs_list_every_key_as_the_table_says() {
    let expected = attribute_table();
    let docs = read("breaker-runtime/src/attribute_docs.md");
    assert!(
        docs.contains(&expected),
        "breaker-runtime/src/attribute_docs.md must hold the table of keys as \
         breaker_rules::knobs gives it; replace its table with:\n\n{expected}"
    );
}

#[test]
fn the_readme_lists_every_setting_as_the_table_says() {
    let expected = readme_table();
    let readme = read("README.md");
    assert!(
        readme.contains(&expected),
        "README.md (\"Configuration\") must hold the table of settings as \
         breaker_rules::knobs gives it; replace its table with:\n\n{expected}"
    );
}

/// Every attribute key: what it takes, its default, what it does.
fn attribute_table() -> String {
    let mut table = String::from("| key | value | default | what it does |\n|---|---|---|---|\n");
    for knob in KNOBS.iter().filter(|knob| knob.group != Group::BuilderOnly) {
        table += &format!(
            "| [`{}`](#{}) | {} | {} | {} |\n",
            knob.key,
            knob.section,
            value(knob),
            knob.default,
            knob.doc
        );
    }
    table
}

/// Every config setting: its attribute key (if any), builder call, default, meaning.
fn readme_table() -> String {
    let mut table =
        String::from("| attribute key | builder | default | meaning |\n|---|---|---|---|\n");
    for knob in KNOBS.iter().filter(|knob| !knob.builder.is_empty()) {
        let key = match knob.group {
            Group::BuilderOnly => String::from("(builder only)"),
            _ => format!("`{}` ({})", knob.key, value(knob)),
        };
        table += &format!(
            "| {key} | {} | {} | {} |\n",
            knob.builder, knob.default, knob.doc
        );
    }
    table
}

/// What the key takes, in words.
fn value(knob: &Knob) -> String {
    match knob.value {
        Value::Name => "string literal".into(),
        Value::Expr => "expression".into(),
        Value::FnPath => "path to a fn".into(),
        Value::CratePath => "path".into(),
        Value::Count => format!("integer ≥ {}", breaker_rules::MIN_COUNT),
        Value::Percent => format!(
            "percent, {} to {}",
            breaker_rules::MIN_PERCENT,
            breaker_rules::MAX_PERCENT
        ),
        Value::Seconds { min } => {
            format!("whole seconds, {min} to {}", thousands(MAX_DURATION_SECS))
        }
        Value::Range { min, max, unit } => {
            format!("{unit}, {} to {}", thousands(min), thousands(max))
        }
        Value::Flag => "`true` or `false`".into(),
        Value::Choice(choices) => (choices.iter())
            .map(|choice| format!("`\"{choice}\"`"))
            .collect::<Vec<_>>()
            .join(" or "),
        Value::NoKey => String::new(),
    }
}

/// `n` with a comma between each group of three digits.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

fn read(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn numbers_are_grouped_by_thousands() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(100), "100");
    assert_eq!(thousands(3_600), "3,600");
    assert_eq!(thousands(31_536_000_000), "31,536,000,000");
}
