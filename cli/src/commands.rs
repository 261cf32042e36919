//! The subcommands. Every write is one conditional write of the protocol
//! (`RecordWrite::Override`, `Release`, `Reset`) on the item as just read, strongly
//! consistently; a write that loses to someone else's is reported, not retried.

use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use breaker_runtime::store::{Override, OverrideKind, RecordWrite, StateStore as _, WriteOutcome};
use breaker_runtime::unstable::{OperatorReads as _, StoredCircuit};

use crate::args::{CircuitArgs, Output, OverrideArgs, ShowArgs};
use crate::identity;
use crate::keyed;
use crate::now::now;
use crate::printable::printable;
use crate::table::Table;
use crate::target::Target;
use crate::view;

/// Seconds an item keeps after an operator's close or release (the breaker's own writes
/// set their TTL from the recovery timeout, which the CLI does not know).
const TTL_AFTER_OPERATOR_WRITE: u64 = 24 * 3600;

pub(crate) async fn list(table: &Table, output: &Output) -> anyhow::Result<()> {
    let listing = table.store.listing().await?;
    let rows = view::rows(&listing);
    let now = now();
    if output.json {
        let all: Vec<_> = rows.iter().map(|row| row.json(now)).collect();
        println!("{}", serde_json::to_string_pretty(&all)?);
    } else if rows.is_empty() {
        println!("no circuits in table '{}'", table.store.table_name());
    } else {
        println!("{}", view::table(&rows, now, None));
    }
    Ok(())
}

pub(crate) async fn show(table: &Table, args: &ShowArgs) -> anyhow::Result<()> {
    if args.keys {
        let name = Target::new(&args.circuit.name, None)?.id;
        return keyed::show_keys(table, &name, &args.circuit.output).await;
    }
    let target = Target::new(&args.circuit.name, args.circuit.key.as_deref())?;
    let circuit = existing(table, &target).await?;
    print(&circuit, &target, &args.circuit.output);
    Ok(())
}

/// `open`, `disable` and `shadow`: sets the override, replacing the one the item holds (if any).
pub(crate) async fn set_override(
    table: &Table,
    kind: OverrideKind,
    args: &OverrideArgs,
) -> anyhow::Result<()> {
    let target = Target::new(&args.name, args.key.as_deref())?;
    let name = target.label();
    if args.by.as_ref().is_some_and(|by| by.trim().is_empty()) {
        bail!("--by must not be empty");
    }
    let command = match kind {
        OverrideKind::ForcedOpen => "open",
        OverrideKind::Disabled => "disable",
        OverrideKind::Shadow => "shadow",
    };
    keyed::refuse_whole_circuit(table, &target, command).await?;
    let before = table.store.inspect(&target.id).await?;
    let replaces = match before.as_ref().map(|c| &c.record) {
        Some(Ok(record)) => record.operator_override.clone(),
        // An override on top would leave it malformed, and the fleet reading it as closed.
        Some(Err(problem)) => bail!(
            "circuit '{name}' has a malformed item ({}), which the breaker reads as \
             closed; replace it with a closed one first: breaker close {}",
            printable(problem),
            target.args()
        ),
        None if !args.create => bail!("{}", missing(table, &target, true)),
        None => None,
    };
    table.check_clock()?;
    let by = match &args.by {
        Some(by) => by.clone(),
        None => identity::caller(&table.sdk).await,
    };
    let now = now();
    let mut set = Override::new(kind, by, now);
    if let Some(duration) = args.duration {
        set = set.until(now.saturating_add(whole_secs(duration)));
    }
    if let Some(reason) = args.reason.as_deref().filter(|r| !r.trim().is_empty()) {
        set = set.reason(reason);
    }
    // Kept past the end for a recovery timeout and the grace of the breaker's own writes:
    // deleted sooner, the circuit would close without the probe the end is owed.
    let expiration = set.until.map(|until| {
        until
            .saturating_add(whole_secs(args.recovery))
            .saturating_add(breaker_rules::TTL_GRACE_SECS)
    });
    let transition = RecordWrite::Override {
        set,
        replaces: replaces.clone(),
        expiration,
    };
    write(table, &target, &transition).await?;
    if let Some(key) = &target.key {
        // Named after the override has landed: an environment removes an entry only once
        // a consistent read of the key's item shows nothing to read, which it then cannot
        // (whatever the CLI's clock wrote into the entry's token).
        keyed::name_in_index(table, key).await.with_context(|| {
            format!(
                "the override of key '{}' is written, but the index does not name it yet, so \
                 no environment reads it: run the command again",
                key.shown()
            )
        })?;
    }
    let after = existing(table, &target).await?;
    if !args.output.json {
        let replaced = replaces
            .map(|o| format!(" (replaces: {} by {})", o.kind, printable(&o.by)))
            .unwrap_or_default();
        let created = if before.is_none() { " (new item)" } else { "" };
        println!("{name}: {kind} fleet-wide{replaced}{created}");
    }
    print(&after, &target, &args.output);
    Ok(())
}

/// `close`: as a successful probe would; refused while an override holds.
pub(crate) async fn close(table: &Table, args: &CircuitArgs) -> anyhow::Result<()> {
    let target = Target::new(&args.name, args.key.as_deref())?;
    let (name, output) = (target.label(), &args.output);
    keyed::refuse_whole_circuit(table, &target, "close").await?;
    let circuit = existing(table, &target).await?;
    if let Err(problem) = &circuit.record
        && let Some(flag) = table.renamed_attribute_missing(problem)
    {
        // Unreadable because of the flag, not the table: a close would overwrite the item
        // and erase the override it may hold, for the whole fleet.
        bail!(
            "circuit '{name}' cannot be read with {flag} ({}): is the name mistyped? \
             Nothing was written: a close would overwrite the item, and any override on it \
             for the whole fleet",
            printable(problem)
        );
    }
    table.check_clock()?;
    let now = now();
    if let Ok(record) = &circuit.record
        && record.live_override(now).is_some()
    {
        bail!(
            "circuit '{name}' is {}; release it first: breaker release {}",
            view::override_summary(record, now),
            target.args()
        );
    }
    let reset = RecordWrite::Reset {
        now,
        expiration: now.saturating_add(TTL_AFTER_OPERATOR_WRITE),
    };
    write(table, &target, &reset).await?;
    if !output.json {
        println!("{name}: closed");
    }
    print(&existing(table, &target).await?, &target, output);
    Ok(())
}

/// `release`: ends the override the item holds.
pub(crate) async fn release(table: &Table, args: &CircuitArgs) -> anyhow::Result<()> {
    let target = Target::new(&args.name, args.key.as_deref())?;
    let (name, output) = (target.label(), &args.output);
    keyed::refuse_whole_circuit(table, &target, "release").await?;
    let circuit = existing(table, &target).await?;
    let record = circuit
        .record
        .as_ref()
        .map_err(|problem| anyhow!("circuit '{name}' cannot be read ({})", printable(problem)))?;
    let Some(released) = record.operator_override.clone() else {
        bail!("circuit '{name}' has no override to release");
    };
    table.check_clock()?;
    let now = now();
    let transition = RecordWrite::Release {
        released: released.clone(),
        now,
        expiration: now.saturating_add(TTL_AFTER_OPERATOR_WRITE),
    };
    write(table, &target, &transition).await?;
    if !output.json {
        let next = match (released.kind, released.holds_at(now)) {
            (OverrideKind::ForcedOpen, true) => {
                "; it is OPEN as of now, so one probe decides after the recovery timeout \
                 (breaker close closes it at once)"
            }
            (OverrideKind::ForcedOpen, false) => {
                "; it had already ended, so the circuit's state is unchanged"
            }
            (OverrideKind::Disabled, _) => "; failures count and trip it again",
            (OverrideKind::Shadow, _) => {
                "; the breakers act on their verdicts again: failures trip it"
            }
        };
        println!(
            "{name}: released ({} by {}){next}",
            released.kind,
            printable(&released.by)
        );
    }
    print(&existing(table, &target).await?, &target, output);
    Ok(())
}

/// Applies an operator's transition; a lost write names what beat it.
async fn write(table: &Table, target: &Target, transition: &RecordWrite) -> anyhow::Result<()> {
    let name = target.label();
    match table.store.apply(&target.id, transition).await? {
        WriteOutcome::Won => Ok(()),
        WriteOutcome::Lost(current) => {
            let now = now();
            let what = match current {
                None => "it has no item any more".to_owned(),
                Some(record) => format!(
                    "it is now {} with override: {}",
                    record.state,
                    view::override_summary(&record, now)
                ),
            };
            bail!(
                "circuit '{name}' changed while writing ({what}); nothing was written, run the command again"
            )
        }
    }
}

/// The target's item; an unknown name is an error.
pub(crate) async fn existing(table: &Table, target: &Target) -> anyhow::Result<StoredCircuit> {
    let circuit = table.store.inspect(&target.id).await?;
    circuit.with_context(|| missing(table, target, false))
}

/// Why a command found no item to act on; with `create`, how to create it anyway.
fn missing(table: &Table, target: &Target, create: bool) -> String {
    let table_name = table.store.table_name();
    let mut text = match &target.key {
        None if create => format!(
            "no circuit '{}' in table '{table_name}': a circuit that never failed has no \
             item, and neither has a mistyped name (breaker list shows every circuit)",
            target.label()
        ),
        None => format!(
            "no circuit '{}' in table '{table_name}' (breaker list shows every circuit)",
            target.label()
        ),
        Some(key) => format!(
            "no item for key '{}' of circuit '{}' in table '{table_name}': a key that \
             never failed has none (breaker show {} --keys lists the open keys)",
            key.shown(),
            printable(&key.circuit),
            Target::new(&key.circuit, None).map_or_else(|_| String::new(), |t| t.args())
        ),
    };
    if create {
        text.push_str(
            "; nothing was written. Pass --create to create its item and set the override \
             anyway",
        );
    }
    text
}

fn print(circuit: &StoredCircuit, target: &Target, output: &Output) {
    let now = now();
    let row = view::Row::circuit(circuit, target.key.clone());
    match output.json {
        true => println!("{:#}", row.json(now)),
        false => println!("{}", view::details(circuit, target, now)),
    }
}

/// A duration in whole seconds, rounded up: an override lasts at least what was asked.
fn whole_secs(duration: Duration) -> u64 {
    duration.as_secs() + u64::from(duration.subsec_nanos() > 0)
}
