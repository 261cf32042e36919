//! A keyed circuit as a whole: `breaker show NAME --keys` reads its index item (the keys
//! the fleet reads, because they are or were lately not closed) and each named key's item;
//! an override of one key names it in the index, so that every environment reads it.

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use breaker_runtime::__protocol::decode_key;
use breaker_runtime::store::{KeyIndexOutcome, KeyIndexWrite, StateStore as _};
use breaker_runtime::unstable::{
    OperatorReads as _, OperatorWrites as _, StoredCircuit, StoredKeyIndex,
};
use comfy_table::Table as TextTable;
use comfy_table::presets::UTF8_FULL_CONDENSED;
use serde_json::json;

use crate::args::{Output, ReconcileArgs};
use crate::now::now;
use crate::printable::printable;
use crate::table::Table;
use crate::target::{KeyOf, Target};
use crate::view::{self, Row};

/// The index item's count of its entries.
const OPEN_KEYS: &str = "open_keys";

/// Adds and refreshes tried before giving up, when other writers keep changing the entry.
const INDEX_ATTEMPTS: usize = 3;

/// Refuses a whole-circuit `command` (no `--key`) on a keyed circuit's name: its keys'
/// circuits read their own items and never one named after the circuit, so the write would
/// print a fleet-wide override that no key obeys. A name is a keyed circuit's when its
/// index item (`{name}#keys`) exists.
pub(crate) async fn refuse_whole_circuit(
    table: &Table,
    target: &Target,
    command: &str,
) -> anyhow::Result<()> {
    if target.key.is_some() {
        return Ok(());
    }
    let index = table
        .store
        .inspect_key_index(&target.id)
        .await
        .with_context(|| format!("checking whether '{}' is a keyed circuit", target.label()))?;
    if index.is_none() {
        return Ok(());
    }
    let name = Target::new(&target.id, None)?.args();
    bail!(
        "'{}' is a keyed circuit: each key has a circuit of its own, and none of them reads \
         an item named '{}', so a whole-circuit {command} would reach no key; nothing was \
         written. Name the key: breaker {command} {name} --key KEY (breaker show {name} \
         --keys lists the open keys)",
        target.label(),
        target.label()
    )
}

/// Names `key` in its circuit's index (an add, or a refresh of its entry if it has one),
/// without the cap: an operator's override of a key must reach every environment, and
/// environments read only the keys the index names. Called once the override is written:
/// a reader removes an entry only after a consistent read of the key's item shows nothing
/// to read, which an override written first rules out, whatever the CLI's clock put in the
/// entry's token. Never removes an entry. The index keeps no TTL (the store takes one off).
pub(crate) async fn name_in_index(table: &Table, key: &KeyOf) -> anyhow::Result<()> {
    for _ in 0..INDEX_ATTEMPTS {
        let add = KeyIndexWrite::Add {
            key: key.encoded.clone(),
            token: token(),
            cap: None,
        };
        let refresh = match table.store.apply_key_index(&key.circuit, &add).await? {
            KeyIndexOutcome::Won => return Ok(()),
            KeyIndexOutcome::Exists(_) => KeyIndexWrite::Refresh {
                key: key.encoded.clone(),
                token: token(),
            },
            other => bail!(
                "the index of '{}' answered {other:?} to an add without a cap",
                key.circuit
            ),
        };
        match table.store.apply_key_index(&key.circuit, &refresh).await? {
            KeyIndexOutcome::Won => return Ok(()),
            // Removed since the add met it: add it again.
            KeyIndexOutcome::Lost(_) => continue,
            other => bail!(
                "the index of '{}' answered {other:?} to a refresh",
                key.circuit
            ),
        }
    }
    bail!(
        "the index of '{}' kept changing while naming key '{}' in it; nothing was written, \
         run the command again",
        printable(&key.circuit),
        key.shown()
    )
}

/// A new entry token: unix milliseconds, then three digits that tell apart two writes of
/// one millisecond.
fn token() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let millis = u64::try_from(since.as_millis()).unwrap_or(u64::MAX / 1000);
    millis.saturating_mul(1000) + u64::from(since.subsec_nanos() % 1000)
}

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
            printable(name),
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
        let target = Target::of_entry(name, encoded);
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
    let malformed: Vec<_> = (index.malformed.iter())
        .map(|m| json!({ "attribute": m.attribute, "problem": m.problem, "unreadable": m.unreadable }))
        .collect();
    let suspected: Vec<_> = (index.suspected.iter())
        .map(|(encoded, at)| json!({ "key": decode_key(encoded), "named_at_ms": at }))
        .collect();
    json!({
        "name": index.circuit,
        "keyed": true,
        "open_keys": index.open_keys,
        "entries": index.entry_attributes,
        "suspected_keys": index.suspected_keys,
        "suspected": suspected,
        "malformed": malformed,
        "warnings": view::index_warnings(index),
        "keys": keys,
    })
}

fn to_text(index: &StoredKeyIndex, keys: &[NamedKey], now: u64) -> String {
    // No TTL line: the index keeps none (one an older version set is a warning).
    let head = format!(
        "{:<13}{}\n{:<13}{}",
        "circuit",
        printable(&index.circuit),
        "state",
        view::keyed_state(index),
    );
    let head = match index.suspected.len() {
        0 => head,
        n => {
            let shown: Vec<_> = (index.suspected.iter().take(10))
                .map(|(encoded, _)| printable(&decode_key(encoded)))
                .collect();
            let more = if n > 10 { ", …" } else { "" };
            format!(
                "{head}\n{:<13}{n} (named apart from the cap, each until its suspicion ends): {}{more}",
                "suspected",
                shown.join(", ")
            )
        }
    };
    let warnings: String = (view::index_warnings(index).iter())
        .map(|warning| format!("\nwarning: {warning}"))
        .collect();
    if keys.is_empty() {
        return format!("{head}\nno key is named in its index{warnings}");
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
            key.shown(),
            state,
            record.map_or("-".into(), |r| view::since(r, now)),
            record.map_or("-".into(), |r| r.failure_count.to_string()),
            record.map_or("-".into(), |r| view::override_summary(r, now)),
            format!("{} ago", view::span(now.saturating_sub(indexed_secs))),
        ]);
    }
    format!("{head}\n{table}{warnings}")
}

/// `breaker reconcile NAME`: sets the index's count to its entries, if it disagrees and
/// nobody changed the count since it was read.
pub(crate) async fn reconcile(table: &Table, args: &ReconcileArgs) -> anyhow::Result<()> {
    let name = &args.name;
    let Some(index) = table.store.inspect_key_index(name).await? else {
        bail!(
            "no key index for '{}' in table '{}' (breaker list shows every circuit)",
            printable(name),
            table.store.table_name()
        );
    };
    if let Some(problem) = index.malformed.iter().find(|p| p.attribute == OPEN_KEYS) {
        bail!(
            "the index of '{}' has no count to reconcile ({}); nothing was written: set \
             open_keys to {} by hand",
            printable(name),
            printable(&problem.problem),
            index.entry_attributes
        );
    }
    let (seen, entries) = (index.open_keys, index.entry_attributes);
    let summary = json!({ "name": name, "open_keys_before": seen, "open_keys": entries });
    if seen == entries {
        match args.output.json {
            true => println!("{summary:#}"),
            false => println!(
                "{}: open_keys {seen} matches its {entries} entries; nothing to do",
                printable(name)
            ),
        }
        return Ok(());
    }
    if !table.store.reconcile_key_index(name, seen, entries).await? {
        bail!(
            "the index of '{}' changed while reconciling (a key was added or removed); \
             nothing was written, run the command again",
            printable(name)
        );
    }
    match args.output.json {
        true => println!("{summary:#}"),
        false => println!(
            "{}: open_keys {seen} -> {entries} (the index's entries)",
            printable(name)
        ),
    }
    Ok(())
}
