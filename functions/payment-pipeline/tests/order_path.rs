//! docs/functions.md lists one order's path through `charge`, hop by hop, each hop naming its
//! file and its function. A newcomer follows that list instead of the code's imports, so a
//! file moved or a function renamed must fail here, not leave the list pointing nowhere.

use std::path::{Path, PathBuf};

const SECTION: &str = "### One order's path through `charge`";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The numbered hops of the section: (number, the hop's text, continuation lines joined).
fn hops(doc: &str) -> Vec<(u32, String)> {
    let start = doc
        .find(SECTION)
        .expect("docs/functions.md has the order's path");
    let body = &doc[start + SECTION.len()..];
    let end = body.find("\n## ").unwrap_or(body.len());
    let mut hops: Vec<(u32, String)> = Vec::new();
    for line in body[..end].lines() {
        let numbered = line
            .split_once(". ")
            .and_then(|(number, rest)| Some((number.parse::<u32>().ok()?, rest)));
        match (numbered, hops.last_mut()) {
            (Some((number, rest)), _) => hops.push((number, rest.to_owned())),
            (None, Some((_, text))) if line.starts_with("   ") => {
                text.push(' ');
                text.push_str(line.trim());
            }
            _ => {}
        }
    }
    hops
}

/// The code spans of `text`, in order.
fn spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// Whether `source` defines the function `name` (`Type::method`: a method in an `impl` of
/// `Type` in that file).
fn defines(source: &str, name: &str) -> bool {
    let (owner, function) = match name.rsplit_once("::") {
        Some((owner, function)) => (Some(owner), function),
        None => (None, name),
    };
    let has_fn = [format!("fn {function}("), format!("fn {function}<")]
        .iter()
        .any(|signature| source.contains(signature.as_str()));
    let has_impl = owner.is_none_or(|owner| {
        source.contains(&format!("impl {owner} {{")) || source.contains(&format!("for {owner} {{"))
    });
    has_fn && has_impl
}

#[test]
fn each_hop_of_the_order_path_names_a_file_that_defines_its_function() {
    let root = workspace();
    let doc = std::fs::read_to_string(root.join("docs/functions.md")).unwrap();
    let hops = hops(&doc);
    assert!(hops.len() >= 8, "too few hops to follow an order: {hops:?}");
    for (index, (number, text)) in hops.iter().enumerate() {
        assert_eq!(*number as usize, index + 1, "hops are numbered in order");
        let spans = spans(text);
        let [file, function, ..] = spans[..] else {
            panic!("hop {number} must start with `file` `function`: {text}");
        };
        let source = std::fs::read_to_string(root.join(file))
            .unwrap_or_else(|e| panic!("hop {number} names {file}, which cannot be read: {e}"));
        assert!(
            defines(&source, function),
            "hop {number}: {file} does not define {function}"
        );
        for path in spans.iter().filter(|span| span.ends_with(".rs")) {
            assert!(
                root.join(path).is_file(),
                "hop {number} names {path}, which does not exist"
            );
        }
    }
}

#[test]
fn the_check_tells_a_defined_function_from_a_missing_one() {
    let source = "impl Ledger {\n    pub async fn claim(&self) {}\n}\nfn answer<'a>() {}";
    assert!(defines(source, "Ledger::claim"));
    assert!(defines(source, "answer"));
    assert!(!defines(source, "Ledger::settle"));
    assert!(!defines(source, "OverflowQueue::claim"));
    let doc = format!(
        "{SECTION}\n\n1. `a.rs` `f`: one\n   more\n2. `b.rs` `g`: two\n\n## next\n3. `c.rs` `h`"
    );
    assert_eq!(
        hops(&doc),
        vec![
            (1, "`a.rs` `f`: one more".to_owned()),
            (2, "`b.rs` `g`: two".to_owned())
        ]
    );
}
