//! The README's table of settings and the attribute docs' table of keys are the table of
//! settings (`breaker_rules::knobs`), rendered: a row added, changed or removed there fails
//! here until both docs hold the table printed, verbatim. `BREAKER_DOCS=overwrite cargo
//! test -p breaker-rules --test docs_tables` writes them in place (review the diff).

use std::path::Path;

use breaker_rules::MAX_DURATION_SECS;
use breaker_rules::knobs::{Group, KNOBS, Knob, Value};

#[test]
fn the_attribute_docs_list_every_key_as_the_table_says() {
    holds("breaker-runtime/src/attribute_docs.md", &attribute_table());
}

#[test]
fn the_readme_lists_every_setting_as_the_table_says() {
    holds("README.md", &readme_table());
}

/// Whether the doc at `path` holds `table`; with `BREAKER_DOCS=overwrite`, writes it over
/// the doc's table with the same header first.
fn holds(path: &str, table: &str) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    let doc = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{path}: {e}"));
    if doc.contains(table) {
        return;
    }
    if std::env::var("BREAKER_DOCS").as_deref() == Ok("overwrite") {
        let header = table.lines().next().expect("a header");
        let start = doc
            .find(header)
            .unwrap_or_else(|| panic!("{path}: no `{header}`"));
        let rows = doc[start..]
            .lines()
            .take_while(|line| line.starts_with('|'));
        let end = start + rows.map(|line| line.len() + 1).sum::<usize>();
        let updated = format!("{}{table}{}", &doc[..start], &doc[end..]);
        std::fs::write(&file, updated).unwrap_or_else(|e| panic!("{path}: {e}"));
        return;
    }
    panic!(
        "{path} must hold the table as breaker_rules::knobs gives it; regenerate with \
         `BREAKER_DOCS=overwrite cargo test -p breaker-rules --test docs_tables`, or \
         replace its table with:\n\n{table}"
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

#[test]
fn numbers_are_grouped_by_thousands() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(100), "100");
    assert_eq!(thousands(3_600), "3,600");
    assert_eq!(thousands(31_536_000_000), "31,536,000,000");
}
