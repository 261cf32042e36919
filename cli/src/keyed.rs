//! A keyed circuit as a whole: `breaker show NAME --keys` reads its index item (the keys
//! the fleet reads, because they are or were lately not closed) and each named key's item.

use anyhow::Context as _;
use breaker_runtime::unstable::{OperatorReads as _, StoredCircuit, StoredKeyIndex};
use comfy_table::Table as TextTable;
use comfy_table::presets::UTF8_FULL_CONDENSED;
use serde_json::json;

use crate::args::Output;
use crate::commands::now;
use crate::table::Table;
use crate::target::Target;
use crate::view::{self, Row};

/// One key the index names, with its item as read (`None`: it has none).
struct NamedKey {
    target: Target,
    /// When the entry was written, unix milliseconds.
    indexed_at_ms: u64,
    item: Option<StoredCircuit>,
}

/// `breaker show NAME --keys`.
pub(crate) async fn show_keys(table: &Table, name: &str, output: &Output) -> anyhow::Result<()> {
    let index = table.store.inspect_key_index(name).await?;
    let Some(index) = index else {
        let none = format!(
            "no key index for '{}' in table '{}': no key of it is open, or it is not a keyed \
             circuit's name (breaker list shows every circuit)",
            view::printable(name),
            table.store.table_name()
        );
        match output.json {
            true => println!(
                "{:#}",
                json!({ "name": name, "keyed": true, "open_keys": 0, "keys": [] })
            ),
            false => println!("{none}"),
        }
        return Ok(());
    };
    let mut keys = Vec::with_capacity(index.entries.len());
    for (encoded, indexed_at_ms) in &index.entries {
        let target = Target::new(&format!("{name}#key={encoded}"), None)?;
        let item = table
            .store
            .inspect(&target.id)
            .await
            .with_context(|| format!("reading {}", target.label()))?;
        keys.push(NamedKey {
            target,
            indexed_at_ms: *indexed_at_ms,
            item,
        });
    }
    let now = now();
    match output.json {
        true => println!("{:#}", to_json(&index, &keys, now)),
        false => println!("{}", to_text(&index, &keys, now)),
    }
    Ok(())
}

fn to_json(index: &StoredKeyIndex, keys: &[NamedKey], now: u64) -> serde_json::Value {
    let keys: Vec<_> = keys
        .iter()
        .map(|named| {
            let key = named.target.key.as_ref().expect("a key's target");
            let item = named
                .item
                .as_ref()
                .map(|item| Row::circuit(item, named.target.key.clone()).json(now));
            json!({
                "key": key.key,
                "id": named.target.id,
                "indexed_at_ms": named.indexed_at_ms,
                "item": item,
            })
        })
        .collect();
    json!({
        "name": index.circuit,
        "keyed": true,
        "open_keys": index.open_keys,
        "expiration": index.expiration,
        "keys": keys,
    })
}

fn to_text(index: &StoredKeyIndex, keys: &[NamedKey], now: u64) -> String {
    let head = format!(
        "{:<13}{}\n{:<13}{}\n{:<13}{}",
        "circuit",
        view::printable(&index.circuit),
        "state",
        view::keyed_state(index),
        "index ttl",
        view::ttl(index.expiration, now),
    );
    if keys.is_empty() {
        return format!("{head}\nno key is named in its index");
    }
    let mut table = TextTable::new();
    table.load_style(UTF8_FULL_CONDENSED);
    table.set_header(["KEY", "STATE", "SINCE", "FAILURES", "OVERRIDE", "IN INDEX"]);
    for named in keys {
        let key = named.target.key.as_ref().expect("a key's target");
        let record = named.item.as_ref().and_then(|c| c.record.as_ref().ok());
        let state = match &named.item {
            // The fleet reads a named key without an item as closed; a reader drops it.
            None => "CLOSED (no item)".to_owned(),
            Some(item) => view::effective(item, now),
        };
        let indexed_secs = named.indexed_at_ms / 1000;
        table.add_row([
            view::printable(&key.key),
            state,
            record.map_or("-".into(), |r| view::since(r, now)),
            record.map_or("-".into(), |r| r.failure_count.to_string()),
            record.map_or("-".into(), |r| view::override_summary(r, now)),
            format!("{} ago", view::span(now.saturating_sub(indexed_secs))),
        ]);
    }
    format!("{head}\n{table}")
}
