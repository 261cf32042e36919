//! `breaker watch`: the table (or one circuit), re-read every interval. A circuit whose
//! state the fleet acts on changed since the last refresh is marked `*` (and highlighted on
//! a terminal), and the change is logged under the table.

use std::collections::BTreeMap;
use std::io::IsTerminal as _;

use breaker_runtime::unstable::{Listing, OperatorReads as _};
use tokio::time::{Instant, sleep};

use crate::args::WatchArgs;
use crate::commands::existing;
use crate::now::now;
use crate::table::Table;
use crate::target::Target;
use crate::view::{self, Row};

/// Changes kept in the log under the table.
const LOG_LINES: usize = 20;

pub(crate) async fn run(table: &Table, args: &WatchArgs) -> anyhow::Result<()> {
    let terminal = std::io::stdout().is_terminal();
    let deadline = args.duration.map(|d| Instant::now() + d);
    let mut last: Option<BTreeMap<String, String>> = None;
    let mut log: Vec<String> = Vec::new();
    let target = match &args.name {
        Some(name) => Some(Target::new(name, args.key.as_deref())?),
        None => None,
    };
    loop {
        let listing = read(table, target.as_ref()).await?;
        let rows = view::rows(&listing);
        let now = now();
        let states: BTreeMap<String, String> = rows
            .iter()
            .map(|row| (row.label(), label(row, now)))
            .collect();
        let mut marked = Vec::new();
        if let Some(last) = &last {
            for (name, state) in &states {
                let before = last.get(name).map_or("(no item)", String::as_str);
                if before != state {
                    marked.push(name.clone());
                    log.push(format!(
                        "{} {name}: {before} -> {state}",
                        view::timestamp(now)
                    ));
                }
            }
            for (name, before) in last {
                if !states.contains_key(name) {
                    marked.push(name.clone());
                    log.push(format!(
                        "{} {name}: {before} -> (no item)",
                        view::timestamp(now)
                    ));
                }
            }
        }
        let excess = log.len().saturating_sub(LOG_LINES);
        log.drain(..excess);
        print(table, &rows, now, &marked, &log, terminal);
        last = Some(states);
        if args.once {
            return Ok(());
        }
        let next = Instant::now() + args.interval;
        match deadline {
            Some(deadline) if next >= deadline => {
                sleep_until_or_interrupt(deadline).await;
                return Ok(());
            }
            _ => {
                if sleep_until_or_interrupt(next).await {
                    return Ok(());
                }
            }
        }
    }
}

/// Sleeps until `at`; `true` if interrupted (Ctrl-C) first.
async fn sleep_until_or_interrupt(at: Instant) -> bool {
    tokio::select! {
        () = sleep(at.saturating_duration_since(Instant::now())) => false,
        _ = tokio::signal::ctrl_c() => true,
    }
}

/// The whole table; one circuit's (or key's) item; or a keyed circuit's index and the items
/// of the keys it names.
async fn read(table: &Table, target: Option<&Target>) -> anyhow::Result<Listing> {
    let Some(target) = target else {
        return Ok(table.store.listing().await?);
    };
    let mut listing = Listing::default();
    if let Some(circuit) = table.store.inspect(&target.id).await? {
        listing.circuits.push(circuit);
        return Ok(listing);
    }
    let index = match target.key {
        None => table.store.inspect_key_index(&target.id).await?,
        Some(_) => None,
    };
    let Some(index) = index else {
        // No item: the error names the circuit (or the key).
        listing.circuits.push(existing(table, target).await?);
        return Ok(listing);
    };
    for (encoded, _) in &index.entries {
        let id = Target::of_entry(&target.id, encoded).id;
        listing.circuits.extend(table.store.inspect(&id).await?);
    }
    listing.key_indexes.push(index);
    Ok(listing)
}

/// What a change is: the state the fleet acts on, and who probes.
fn label(row: &Row<'_>, now: u64) -> String {
    let probe = match row {
        Row::Circuit { circuit, .. } => circuit.record.as_ref().ok(),
        Row::Keyed(_) => None,
    }
    .and_then(|r| r.half_open_owner.as_deref())
    .map(|owner| format!(" (probe: {owner})"))
    .unwrap_or_default();
    format!("{}{probe}", row.state(now))
}

fn print(
    table: &Table,
    rows: &[Row<'_>],
    now: u64,
    marked: &[String],
    log: &[String],
    terminal: bool,
) {
    let mut out = String::new();
    if terminal {
        // Clear the screen and go home: one view at a time.
        out.push_str("\x1b[2J\x1b[H");
    }
    out.push_str(&format!(
        "breaker watch: table '{}' at {}\n",
        table.store.table_name(),
        view::timestamp(now)
    ));
    let rendered = view::table(rows, now, Some(marked));
    for line in rendered.lines() {
        let changed = line.starts_with("│ *") || line.starts_with("| *");
        match terminal && changed {
            true => out.push_str(&format!("\x1b[1;33m{line}\x1b[0m\n")),
            false => out.push_str(&format!("{line}\n")),
        }
    }
    if !log.is_empty() {
        out.push_str("changes:\n");
        for line in log {
            out.push_str(&format!("  {line}\n"));
        }
    }
    print!("{out}");
    if !terminal {
        println!();
    }
}
