//! `breaker watch`: the table (or one circuit), re-read every interval. A circuit whose
//! state the fleet acts on changed since the last refresh is marked `*` (and highlighted on
//! a terminal), and the change is logged under the table.

use std::collections::BTreeMap;
use std::io::IsTerminal as _;

use anyhow::Context as _;
use breaker_runtime::unstable::{OperatorReads as _, StoredCircuit};
use tokio::time::{Instant, sleep};

use crate::args::WatchArgs;
use crate::commands::now;
use crate::table::Table;
use crate::view;

/// Changes kept in the log under the table.
const LOG_LINES: usize = 20;

pub(crate) async fn run(table: &Table, args: &WatchArgs) -> anyhow::Result<()> {
    let terminal = std::io::stdout().is_terminal();
    let deadline = args.duration.map(|d| Instant::now() + d);
    let mut last: Option<BTreeMap<String, String>> = None;
    let mut log: Vec<String> = Vec::new();
    loop {
        let circuits = read(table, args.name.as_deref()).await?;
        let now = now();
        let states: BTreeMap<String, String> = circuits
            .iter()
            .map(|c| (c.name.clone(), label(c, now)))
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
        print(table, &circuits, now, &marked, &log, terminal);
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

async fn read(table: &Table, name: Option<&str>) -> anyhow::Result<Vec<StoredCircuit>> {
    match name {
        None => Ok(table.store.list().await?),
        Some(name) => {
            let circuit = table.store.inspect(name).await?.with_context(|| {
                format!(
                    "no circuit '{name}' in table '{}'",
                    table.store.table_name()
                )
            })?;
            Ok(vec![circuit])
        }
    }
}

/// What a change is: the state the fleet acts on, and who probes.
fn label(circuit: &StoredCircuit, now: u64) -> String {
    let probe = circuit
        .record
        .as_ref()
        .ok()
        .and_then(|r| r.half_open_owner.as_deref())
        .map(|owner| format!(" (probe: {owner})"))
        .unwrap_or_default();
    format!("{}{probe}", view::effective(circuit, now))
}

fn print(
    table: &Table,
    circuits: &[StoredCircuit],
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
    let rendered = view::table(circuits, now, Some(marked));
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
