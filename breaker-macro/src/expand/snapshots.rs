//! Pins what the attribute expands to: one checked-in file per attribute form in
//! `tests/expand/`, holding the input and `expand()`'s output, so the expansion shown in
//! breaker-runtime's `attribute_docs.md` cannot drift from it unnoticed. A changed
//! expansion fails here; regenerate with
//! `BREAKER_EXPAND=overwrite cargo test -p breaker-macro --lib snapshots` and review the diff.

use std::path::PathBuf;

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use quote::quote;

use crate::guard;

/// One attribute form: its arguments and the item it guards.
struct Case {
    file: &'static str,
    args: TokenStream,
    item: TokenStream,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            file: "sync",
            args: quote!(name = "inventory"),
            item: quote! {
                fn reserve(sku: &str) -> Result<(), anyhow::Error> {
                    reserve_in_api(sku)
                }
            },
        },
        Case {
            file: "async",
            args: quote!(name = "payment-backend"),
            item: quote! {
                async fn charge(order: Order) -> Result<String, anyhow::Error> {
                    payment_api.charge(order).await
                }
            },
        },
        Case {
            file: "on_circuit_open",
            args: quote!(name = "payment-backend", on_circuit_open = buffer_order),
            item: quote! {
                async fn charge(order: Order) -> Result<String, anyhow::Error> {
                    payment_api.charge(order).await
                }
            },
        },
        Case {
            file: "keyed",
            args: quote! {
                name = "webhooks",
                keyed_by = hook.merchant_id,
                max_open_keys = 50,
                on_circuit_open = retry_later
            },
            item: quote! {
                async fn deliver(hook: Webhook) -> Result<u16, anyhow::Error> {
                    post(&hook).await
                }
            },
        },
        Case {
            file: "inline_tunables",
            args: quote! {
                name = "search",
                failure_rate = 50,
                window_calls = 20,
                minimum_calls = 10,
                recovery_timeout = 60,
                recovery_backoff_max_secs = 600,
                call_timeout_ms = 2500,
                fleet_failure_threshold = 20,
                shadow = true,
                persistence_store = InMemoryStore::new()
            },
            item: quote! {
                fn search(query: &str) -> Result<usize, anyhow::Error> {
                    search_api(query)
                }
            },
        },
        Case {
            file: "config",
            args: quote! {
                name = "reports",
                config = config(),
                on_transition = alert,
                ignored = is_client_error,
                shadow = true
            },
            item: quote! {
                async fn report() -> Result<(), anyhow::Error> {
                    reports_api().await
                }
            },
        },
    ]
}

#[test]
fn the_expansion_of_each_attribute_form_is_the_checked_in_one() {
    let overwrite = std::env::var("BREAKER_EXPAND").as_deref() == Ok("overwrite");
    let mut stale = Vec::new();
    for case in cases() {
        let expanded = guard(case.args.clone(), case.item.clone())
            .unwrap_or_else(|error| panic!("{}: the attribute refused: {error}", case.file));
        let text = format!(
            "// #[circuit_breaker({})]\n// {}\n\n{}",
            case.args,
            case.item,
            pretty(expanded)
        );
        let path = snapshot_dir().join(format!("{}.txt", case.file));
        if overwrite {
            std::fs::write(&path, &text).expect("write the snapshot");
            continue;
        }
        let pinned = std::fs::read_to_string(&path).unwrap_or_default();
        if pinned != text {
            stale.push(format!(
                "{}:\n--- pinned\n{pinned}\n--- expanded\n{text}",
                path.display()
            ));
        }
    }
    assert!(
        stale.is_empty(),
        "the expansion changed; if that is intended, regenerate with \
         `BREAKER_EXPAND=overwrite cargo test -p breaker-macro --lib snapshots`, review the \
         diff and update breaker-runtime's attribute_docs.md (\"What the expansion looks \
         like\") to match:\n{}",
        stale.join("\n")
    );
}

fn snapshot_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/expand")
}

/// The tokens one statement, match arm or list item of a block per line, blocks
/// indented: enough to read a diff, with no formatter in the dependency tree.
fn pretty(tokens: TokenStream) -> String {
    let mut out = String::new();
    write_tokens(&mut out, tokens, 0, false);
    out.lines()
        .map(str::trim_end)
        .filter(|line| !line.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// `in_block`: the tokens are a brace group's, where `;` and `,` end a line.
fn write_tokens(out: &mut String, tokens: TokenStream, depth: usize, in_block: bool) {
    let mut tokens = tokens.into_iter().peekable();
    // Open `<` of generics: a `,` between them does not end a line.
    let mut angles = 0_usize;
    let mut previous = ' ';
    while let Some(tree) = tokens.next() {
        let current = match &tree {
            TokenTree::Punct(punct) => punct.as_char(),
            _ => ' ',
        };
        match current {
            '<' => angles += 1,
            '>' if previous != '-' && previous != '=' => angles = angles.saturating_sub(1),
            _ => {}
        }
        previous = current;
        match tree {
            TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => {
                out.push_str("{\n");
                indent(out, depth + 1);
                write_tokens(out, group.stream(), depth + 1, true);
                out.push('\n');
                indent(out, depth);
                out.push_str("} ");
                // A block that ends a match arm or a statement without `,`/`;`.
                let glued = matches!(tokens.peek(), Some(TokenTree::Punct(p)) if ",;.)".contains(p.as_char()));
                if in_block && !glued && tokens.peek().is_some() {
                    out.push('\n');
                    indent(out, depth);
                }
            }
            TokenTree::Group(group) => {
                let (open, close) = match group.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    _ => ("", ""),
                };
                out.push_str(open);
                let mut inner = String::new();
                write_tokens(&mut inner, group.stream(), depth, false);
                out.push_str(inner.trim_end());
                out.push_str(close);
                out.push(' ');
            }
            TokenTree::Punct(punct) if in_block && angles == 0 && matches!(current, ';' | ',') => {
                out.push(punct.as_char());
                out.push('\n');
                indent(out, depth);
            }
            TokenTree::Punct(punct) => {
                out.push(punct.as_char());
                if punct.spacing() == Spacing::Alone {
                    out.push(' ');
                }
            }
            other => {
                out.push_str(&other.to_string());
                out.push(' ');
            }
        }
    }
}

fn indent(out: &mut String, depth: usize) {
    out.push_str(&"    ".repeat(depth));
}

/// The hand-written sketch in breaker-runtime's `attribute_docs.md` ("What the expansion
/// looks like") names only what the expansion names: every `__private::` item and
/// `__breaker_` name it shows is in a snapshot.
#[test]
fn the_documented_expansion_names_what_the_expansion_names() {
    let docs =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../breaker-runtime/src/attribute_docs.md");
    let docs = std::fs::read_to_string(docs).expect("read attribute_docs.md");
    let sketch = docs
        .split_once("# What the expansion looks like")
        .expect("the expansion's section")
        .1;
    let mut expanded = String::new();
    for case in cases() {
        let path = snapshot_dir().join(format!("{}.txt", case.file));
        expanded += &std::fs::read_to_string(path).expect("read a snapshot");
    }
    let expanded: String = expanded.split_whitespace().collect();
    let mut missing = Vec::new();
    for prefix in ["__private::", "__breaker_", "__BREAKER_"] {
        for (at, _) in sketch.match_indices(prefix) {
            let name: String = sketch[at..]
                .chars()
                .skip(prefix.len())
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let name = format!("{prefix}{name}");
            if !expanded.contains(&name) {
                missing.push(name);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "attribute_docs.md's expansion names {missing:?}, which no snapshot in tests/expand/ \
         holds: make the sketch say what expand() emits"
    );
}

/// A reader of this crate finds the expansion from its README and its crate docs: both
/// point to the snapshots and to the attribute docs' sketch of them.
#[test]
fn the_readme_and_crate_docs_point_to_the_expansion() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for file in ["README.md", "src/lib.rs"] {
        let text = std::fs::read_to_string(root.join(file)).expect("read the file");
        for pointer in ["tests/expand/", "What the expansion looks like"] {
            assert!(text.contains(pointer), "{file} lacks {pointer:?}");
        }
    }
}
