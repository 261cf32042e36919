//! docs/dynamodb.md's table of the exact requests is these strings, rendered: a condition
//! or update changed here fails this test until the doc holds the table printed.
//! `BREAKER_DOCS=overwrite cargo test -p breaker-runtime --features dynamodb --lib
//! requests_doc` writes it in place (review the diff).

use std::path::Path;

use super::conditions::{self, Expression, UNREADABLE};
use super::item::tests_support::names;

const DOC: &str = "docs/dynamodb.md";
const BEGIN: &str = "<!-- the requests: BEGIN (generated from store/dynamodb/conditions.rs) -->";
const END: &str = "<!-- the requests: END -->";

/// One way a write is sent: the write (and which of its cases), the request, its
/// `ConditionExpression` and its `UpdateExpression` (none for a whole-item put).
type Row = (&'static str, &'static str, String, Option<String>);

fn rows() -> Vec<Row> {
    let put = |write, condition: &str| (write, "PutItem", condition.to_owned(), None);
    let update = |write, condition: &str, update: &str| {
        (
            write,
            "UpdateItem",
            condition.to_owned(),
            Some(update.to_owned()),
        )
    };
    vec![
        put("**Trip**", conditions::TRIP),
        update(
            "**Elect**, having read an `opened_at`",
            &conditions::elect(true, false),
            conditions::elect_update(false),
        ),
        update(
            "**Elect**, having read no `opened_at`",
            &conditions::elect(false, false),
            conditions::elect_update(false),
        ),
        update(
            "**Elect**, a takeover that read a count",
            &conditions::elect(true, true),
            conditions::elect_update(true),
        ),
        update(
            "**Hand-over**",
            conditions::OWNER,
            conditions::HAND_OVER_UPDATE,
        ),
        put("**Close**", conditions::OWNER),
        put("**Reopen**", conditions::OWNER),
        update(
            "**Suspect**",
            conditions::SUSPECT,
            conditions::SUSPECT_UPDATE,
        ),
        update(
            "**Override**, forced open until a time, with a reason, on no override",
            conditions::NO_OVERRIDE,
            &conditions::set_override(true, true, true, true),
        ),
        update(
            "**Override**, disabled or shadowed until released, no reason, on the override read",
            conditions::OVERRIDE_IS,
            &conditions::set_override(false, false, false, false),
        ),
        update(
            "**Release** of a forced open that holds",
            conditions::RELEASE_LIVE,
            &conditions::release(true),
        ),
        update(
            "**Release** of anything else that holds",
            conditions::RELEASE_LIVE,
            &conditions::release(false),
        ),
        update(
            "**Release** of an override that has ended",
            conditions::RELEASE_ENDED,
            &conditions::release(false),
        ),
        put("**Reset**", conditions::RESET),
    ]
}

/// The generated part of the doc: the placeholders with the default attribute names, the
/// shared test for an unreadable item, and one row per way a write is sent.
fn rendered() -> String {
    let rows = rows();
    let expressions: Vec<&str> = rows
        .iter()
        .flat_map(|(_, _, condition, update)| [Some(condition.as_str()), update.as_deref()])
        .flatten()
        .collect();
    let bound = Expression::bind(&names(), &expressions, []);
    let mut placeholders: Vec<_> = bound.names.iter().collect();
    placeholders.sort();
    let legend = placeholders
        .iter()
        .map(|(placeholder, name)| format!("`{placeholder}` = `{name}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut constants: Vec<_> = bound.values.iter().collect();
    constants.sort_by_key(|(placeholder, _)| *placeholder);
    let constants = constants
        .iter()
        .map(|(placeholder, value)| {
            let value = value
                .as_s()
                .map(|s| format!("\"{s}\""))
                .or_else(|_| value.as_n().cloned())
                .expect("a string or a number");
            format!("`{placeholder}` = {value}")
        })
        .collect::<Vec<_>>()
        .join(", ");
    let mut out = format!(
        "{BEGIN}\n\nNames (default attribute names): {legend}. Constants: {constants}. \
         Every other `:value` is the write's own. `UNREADABLE` stands for:\n\n\
         ```text\n{UNREADABLE}\n```\n\n\
         | write | request | `ConditionExpression` | `UpdateExpression` |\n|---|---|---|---|\n"
    );
    for (write, request, condition, update) in &rows {
        let update = update
            .as_deref()
            .map_or_else(|| String::from("(the whole item)"), |u| format!("`{u}`"));
        let condition = condition.replace(UNREADABLE, "UNREADABLE");
        out += &format!("| {write} | {request} | `{condition}` | {update} |\n");
    }
    out + "\n" + END
}

#[test]
fn the_store_doc_holds_every_request_as_sent() {
    let table = rendered();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(DOC);
    let doc = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{DOC}: {e}"));
    if doc.contains(&table) {
        return;
    }
    let (start, end) = (doc.find(BEGIN), doc.find(END));
    if std::env::var("BREAKER_DOCS").as_deref() == Ok("overwrite")
        && let (Some(start), Some(end)) = (start, end)
    {
        let updated = format!("{}{table}{}", &doc[..start], &doc[end + END.len()..]);
        std::fs::write(&file, updated).unwrap_or_else(|e| panic!("{DOC}: {e}"));
        return;
    }
    panic!(
        "{DOC} must hold the requests as the store sends them, between {BEGIN} and {END}; \
         regenerate with `BREAKER_DOCS=overwrite cargo test -p breaker-runtime --features \
         dynamodb --lib requests_doc`, or put there:\n\n{table}"
    );
}
