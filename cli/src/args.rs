//! The command line: global options that locate the table, and one subcommand per action.

use std::time::Duration;

use clap::{Args, Parser, Subcommand};

/// Operate breaker's circuit table: see every circuit, force one open, disable or shadow
/// it fleet-wide, close it, release an override, watch an incident.
///
/// The table and its key layout come from flags or the environment the functions use
/// (`CIRCUIT_BREAKER_TABLE`); credentials, region and endpoint from the standard AWS
/// configuration (`AWS_PROFILE`, `AWS_REGION`, `AWS_ENDPOINT_URL_DYNAMODB`, ...).
#[derive(Debug, Parser)]
#[command(name = "breaker", version)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) table: TableArgs,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Where the circuits are, and how their items are laid out (as configured on the
/// functions' `DynamoDbStore`).
#[derive(Debug, Args)]
pub(crate) struct TableArgs {
    /// The circuit table.
    #[arg(long, global = true, env = "CIRCUIT_BREAKER_TABLE")]
    pub(crate) table: Option<String>,
    /// DynamoDB endpoint (default: the AWS configuration's).
    #[arg(long, global = true, value_name = "URL")]
    pub(crate) endpoint_url: Option<String>,
    /// AWS region (default: the AWS configuration's).
    #[arg(long, global = true)]
    pub(crate) region: Option<String>,
    /// Composite keys: the partition key value that holds the circuits (needs
    /// `--sort-key-attr`).
    #[arg(long, global = true, value_name = "VALUE", requires = "sort_key_attr")]
    pub(crate) pk: Option<String>,
    /// Composite keys: the sort key attribute, which holds the circuit's name (needs `--pk`).
    #[arg(long, global = true, value_name = "NAME", requires = "pk")]
    pub(crate) sort_key_attr: Option<String>,
    /// Refuse to write when this machine's clock and the store's (its answers' `Date`)
    /// differ by more than this: an override's end and the checks of `close` and
    /// `release` are computed from this clock.
    #[arg(long, global = true, default_value = "30s", value_name = "DURATION", value_parser = positive_duration)]
    pub(crate) max_clock_skew: Duration,
    #[command(flatten)]
    pub(crate) renamed: RenamedAttributes,
}

/// Attribute names other than the defaults, as renamed on the functions' store (each
/// flag's default is the name it renames).
#[derive(Debug, Args)]
#[command(next_help_heading = "Renamed attributes")]
pub(crate) struct RenamedAttributes {
    /// Partition key attribute (`id`).
    #[arg(long, global = true, value_name = "NAME")]
    pub(crate) key_attr: Option<String>,
    /// `state` attribute.
    #[arg(long, global = true, value_name = "NAME")]
    pub(crate) state_attr: Option<String>,
    /// `failure_count` attribute.
    #[arg(long, global = true, value_name = "NAME")]
    pub(crate) failure_count_attr: Option<String>,
    /// `opened_at` attribute.
    #[arg(long, global = true, value_name = "NAME")]
    pub(crate) opened_at_attr: Option<String>,
    /// `half_open_owner` attribute.
    #[arg(long, global = true, value_name = "NAME")]
    pub(crate) half_open_owner_attr: Option<String>,
    /// `probe_lease_expiry` attribute.
    #[arg(long, global = true, value_name = "NAME")]
    pub(crate) probe_lease_expiry_attr: Option<String>,
    /// TTL attribute (`expiration`).
    #[arg(long, global = true, value_name = "NAME")]
    pub(crate) expiry_attr: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Every circuit in the table: state, since when, failures, probe, override, TTL. A
    /// keyed circuit is one row with its open-key count, its keys' items under it as
    /// `NAME[KEY]`.
    List(Output),
    /// One circuit in full; with `--key`, one key's circuit; with `--keys`, a keyed
    /// circuit's open keys.
    Show(ShowArgs),
    /// Force a circuit open fleet-wide: every call is rejected and nobody probes, until
    /// released or until `--for` ends.
    Open(OverrideArgs),
    /// Disable a circuit fleet-wide: every call runs and failures never trip it, until
    /// released or until `--for` ends.
    Disable(OverrideArgs),
    /// Shadow a circuit fleet-wide: every call runs, and every breaker reports what it
    /// would have done (rejected, opened, probed) without tripping the circuit, until
    /// released or until `--for` ends.
    Shadow(OverrideArgs),
    /// Close a circuit now, as a successful probe would (refused while an override holds).
    Close(CircuitArgs),
    /// End a circuit's override: back to normal operation.
    Release(CircuitArgs),
    /// Set a keyed circuit's open-key count to the entries its index holds, after a hand edit.
    ///
    /// The count (`open_keys`, which the cap compares) drifts from the entries only when an
    /// entry is added or deleted by hand; the write is conditional on the count as read.
    Reconcile(ReconcileArgs),
    /// A live view, refreshed every `--interval`; changes are marked and logged.
    Watch(WatchArgs),
    /// The read and write units one circuit's item takes from a fleet, healthy and open,
    /// their cost, and the cache age that keeps it within DynamoDB's per-item limits (no
    /// table needed).
    Capacity(crate::capacity::output::CapacityArgs),
}

/// One existing circuit.
#[derive(Debug, Args)]
pub(crate) struct CircuitArgs {
    /// The circuit's name, or a key's item id (`NAME#key=...`, as `list` shows a key too
    /// long to be in its id).
    pub(crate) name: String,
    /// A keyed circuit's key: act on that key's circuit only.
    #[arg(long, value_name = "KEY")]
    pub(crate) key: Option<String>,
    #[command(flatten)]
    pub(crate) output: Output,
}

/// `show`: one circuit, one key's circuit, or a keyed circuit's open keys.
#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    #[command(flatten)]
    pub(crate) circuit: CircuitArgs,
    /// A keyed circuit's open keys: the keys its index names, each with its state.
    #[arg(long, conflicts_with = "key")]
    pub(crate) keys: bool,
}

/// `reconcile`: one keyed circuit.
#[derive(Debug, Args)]
pub(crate) struct ReconcileArgs {
    /// The keyed circuit's name.
    pub(crate) name: String,
    #[command(flatten)]
    pub(crate) output: Output,
}

#[derive(Debug, Args)]
pub(crate) struct Output {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct OverrideArgs {
    /// The circuit's name, or a key's item id (`NAME#key=...`, as `list` shows a key too
    /// long to be in its id).
    pub(crate) name: String,
    /// A keyed circuit's key: override that key's circuit only (its item, and an entry in
    /// the circuit's index so every environment reads it; the index's cap does not apply
    /// to an operator).
    #[arg(long, value_name = "KEY")]
    pub(crate) key: Option<String>,
    /// Create the circuit's (or the key's) item if it has none. A circuit or key that
    /// never failed has no item; without this flag such a name (or a mistyped one) is
    /// refused.
    #[arg(long)]
    pub(crate) create: bool,
    /// How long the override holds (`30m`, `2h`, `1h 30m`); without it, until released.
    #[arg(long = "for", value_name = "DURATION", value_parser = positive_duration)]
    pub(crate) duration: Option<Duration>,
    /// With `--for`: the circuit's recovery timeout, if longer than the default. The item
    /// is kept (TTL) until the override's end plus this plus an hour, so that a circuit
    /// forced open still probes before it closes.
    #[arg(long, default_value = "24h", value_name = "DURATION", value_parser = positive_duration, requires = "duration")]
    pub(crate) recovery: Duration,
    /// Why, recorded on the item: at most 256 bytes (every environment reads the item; a
    /// pasted log would make each read expensive). Link a ticket for the rest.
    #[arg(long, value_parser = bounded::<MAX_REASON_BYTES>)]
    pub(crate) reason: Option<String>,
    /// Who, recorded on the item (default: the caller's AWS identity, else `$USER`); at
    /// most 128 bytes.
    #[arg(long, value_parser = bounded::<MAX_BY_BYTES>)]
    pub(crate) by: Option<String>,
    #[command(flatten)]
    pub(crate) output: Output,
}

#[derive(Debug, Args)]
pub(crate) struct WatchArgs {
    /// Watch one circuit only.
    pub(crate) name: Option<String>,
    /// With a name: watch that keyed circuit's key only.
    #[arg(long, value_name = "KEY", requires = "name")]
    pub(crate) key: Option<String>,
    /// Print one view and exit.
    #[arg(long, conflicts_with = "duration")]
    pub(crate) once: bool,
    /// Stop after this long (`30s`, `5m`).
    #[arg(long = "for", value_name = "DURATION", value_parser = positive_duration)]
    pub(crate) duration: Option<Duration>,
    /// Time between refreshes.
    #[arg(long, default_value = "2s", value_name = "DURATION", value_parser = positive_duration)]
    pub(crate) interval: Duration,
}

/// Longest `--reason`, in bytes.
pub(crate) const MAX_REASON_BYTES: usize = 256;
/// Longest `--by`, in bytes.
pub(crate) const MAX_BY_BYTES: usize = 128;

/// Text of at most `MAX` bytes.
fn bounded<const MAX: usize>(text: &str) -> Result<String, String> {
    match text.len() <= MAX {
        true => Ok(text.to_owned()),
        false => Err(format!(
            "{} bytes; at most {MAX} are recorded (link a ticket for the rest)",
            text.len()
        )),
    }
}

/// A duration in humantime's words, at least one second.
fn positive_duration(text: &str) -> Result<Duration, String> {
    let duration = humantime::parse_duration(text)
        .map_err(|e| format!("{e} (examples: 30s, 15m, 2h, 1h 30m)"))?;
    if duration < Duration::from_secs(1) {
        return Err("must be at least 1s".into());
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_humantime_and_at_least_a_second() {
        assert_eq!(positive_duration("1h 30m"), Ok(Duration::from_secs(5400)));
        assert!(positive_duration("0s").unwrap_err().contains("at least 1s"));
        assert!(positive_duration("soon").unwrap_err().contains("examples"));
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
