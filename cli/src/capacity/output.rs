//! `breaker capacity`'s flags (defaults: the breaker's own) and what it prints: a table,
//! or one JSON object.

use std::time::Duration;

use anyhow::bail;
use breaker_runtime::{CircuitBreakerConfig, FleetPolicy};
use clap::Args;
use comfy_table::Table;
use comfy_table::presets::UTF8_FULL_CONDENSED;
use serde_json::json;

use super::keyed::{self, KeyedEstimate, Keys};
use super::{
    ADVISED_READ_SHARE, Estimate, Fleet, ITEM_READ_UNITS_PER_S, ITEM_WRITE_UNITS_PER_S, Load,
    Settings, estimate,
};

fn breaker_default(pick: fn(&CircuitBreakerConfig) -> Duration) -> humantime::Duration {
    pick(&CircuitBreakerConfig::default()).into()
}

#[derive(Debug, Args)]
#[command(next_help_heading = "The fleet and the circuit")]
pub(crate) struct CapacityArgs {
    /// Warm execution environments calling through the circuit.
    #[arg(long, value_name = "N")]
    pub(crate) envs: u32,
    /// Calls a second through the circuit over the whole fleet (all environments
    /// together, e.g. the function's invocations per second).
    #[arg(long, value_name = "RATE")]
    pub(crate) calls_per_second: f64,
    /// The circuit's `local_cache_max_age` (0s: every call reads).
    #[arg(long, value_name = "DURATION", default_value_t = breaker_default(CircuitBreakerConfig::local_cache_max_age))]
    pub(crate) local_cache_max_age: humantime::Duration,
    /// The circuit's `recovery_timeout`.
    #[arg(long, value_name = "DURATION", default_value_t = breaker_default(CircuitBreakerConfig::recovery_timeout))]
    pub(crate) recovery_timeout: humantime::Duration,
    /// The circuit's `failure_threshold`.
    #[arg(long, value_name = "N", default_value_t = CircuitBreakerConfig::default().failure_threshold())]
    pub(crate) failure_threshold: u32,
    /// The fleet policy's `report_interval`.
    #[arg(long, value_name = "DURATION", default_value_t = FleetPolicy::default().report_interval().into())]
    pub(crate) report_interval: humantime::Duration,
    /// The circuit has no fleet-wide detection (`fleet_detection = false`).
    #[arg(long)]
    pub(crate) no_fleet_detection: bool,
    /// A keyed circuit: the keys its calls name (spread evenly). Adds its index item's
    /// reads and the key items' (read only while the index names them).
    #[arg(long, value_name = "N")]
    pub(crate) keys: Option<u32>,
    /// With `--keys`: keys down at once.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "keys")]
    pub(crate) open_keys: u32,
    /// With `--keys`: a key's length in bytes once encoded (at most 64).
    #[arg(long, value_name = "BYTES", default_value_t = 16, requires = "keys")]
    pub(crate) key_bytes: u32,
    /// With `--keys`: the circuit's `max_open_keys`.
    #[arg(long, value_name = "N", default_value_t = 1_000, requires = "keys")]
    pub(crate) max_open_keys: u32,
    /// With `--keys`: the circuit's name, for the index's size.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "webhooks",
        requires = "keys"
    )]
    pub(crate) name: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

impl CapacityArgs {
    /// The fleet and settings, or an error naming the flag that is out of range.
    pub(crate) fn checked(&self) -> anyhow::Result<(Fleet, Settings)> {
        if self.envs == 0 {
            bail!("--envs must be at least 1");
        }
        if !(self.calls_per_second.is_finite() && self.calls_per_second > 0.0) {
            bail!("--calls-per-second must be a number above 0");
        }
        if self.failure_threshold == 0 {
            bail!("--failure-threshold must be at least 1");
        }
        let recovery = self.recovery_timeout.as_secs_f64();
        if recovery < 1.0 {
            bail!("--recovery-timeout must be at least 1s");
        }
        let interval = self.report_interval.as_secs_f64();
        if !self.no_fleet_detection && interval <= 0.0 {
            bail!("--report-interval must be above 0s");
        }
        let fleet = Fleet {
            environments: self.envs,
            calls_per_second: self.calls_per_second,
        };
        let settings = Settings {
            local_cache_max_age_s: self.local_cache_max_age.as_secs_f64(),
            recovery_timeout_s: recovery,
            failure_threshold: self.failure_threshold,
            report_interval_s: (!self.no_fleet_detection).then_some(interval),
        };
        Ok((fleet, settings))
    }

    /// The keyed circuit's shape, with `--keys`; an error names the flag out of range.
    pub(crate) fn keyed(&self) -> anyhow::Result<Option<Keys>> {
        let Some(keys) = self.keys else {
            return Ok(None);
        };
        if keys == 0 {
            bail!("--keys must be at least 1");
        }
        if self.open_keys > keys {
            bail!("--open-keys must be at most --keys ({keys})");
        }
        let most = breaker_runtime::__protocol::MAX_KEY_BYTES;
        if self.key_bytes as usize > most {
            bail!("--key-bytes must be at most {most}: a longer key's id holds a hash of it");
        }
        if self.max_open_keys == 0 {
            bail!("--max-open-keys must be at least 1");
        }
        Ok(Some(Keys {
            keys,
            open_keys: self.open_keys,
            key_bytes: self.key_bytes,
            max_open_keys: self.max_open_keys,
            name_bytes: u32::try_from(self.name.len()).unwrap_or(u32::MAX),
        }))
    }
}

/// `breaker capacity`: arithmetic only, no table or AWS configuration.
pub(crate) fn run(args: &CapacityArgs) -> anyhow::Result<()> {
    let (fleet, settings) = args.checked()?;
    let keys = args.keyed()?;
    let estimate = estimate(&fleet, &settings);
    let keyed = keys.map(|keys| (keys, keyed::estimate(&fleet, &settings, &keys)));
    if args.json {
        let mut json = to_json(&fleet, &settings, &estimate);
        if let Some((keys, keyed)) = &keyed {
            json["keyed"] = keyed_json(keys, keyed);
        }
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        println!("{}", to_text(&fleet, &settings, &estimate));
        if let Some((keys, keyed)) = &keyed {
            println!("{}", keyed_text(keys, keyed));
        }
    }
    Ok(())
}

fn load_json(load: &Load) -> serde_json::Value {
    json!({
        "reads_per_s": load.reads_per_s,
        "read_units_per_s": load.read_units_per_s,
        "write_units_per_s": load.write_units_per_s,
        "usd_per_million_calls": load.usd_per_million_calls,
    })
}

pub(crate) fn to_json(fleet: &Fleet, settings: &Settings, e: &Estimate) -> serde_json::Value {
    json!({
        "environments": fleet.environments,
        "calls_per_second": fleet.calls_per_second,
        "calls_per_second_per_environment": e.calls_per_environment,
        "settings": {
            "local_cache_max_age_s": settings.local_cache_max_age_s,
            "recovery_timeout_s": settings.recovery_timeout_s,
            "failure_threshold": settings.failure_threshold,
            "report_interval_s": settings.report_interval_s,
        },
        "healthy": load_json(&e.healthy),
        "open": load_json(&e.open),
        "recovery_window_s": e.recovery_window_s,
        "trip_writes": e.trip_writes,
        "trip_writes_throttled": e.trip_writes_throttled,
        "fleet_counter_write_units_per_s_max": e.counter_write_units_per_s,
        "fleet_reports_held_back": e.reports_held_back,
        "item_limits": {
            "read_units_per_s": ITEM_READ_UNITS_PER_S,
            "write_units_per_s": ITEM_WRITE_UNITS_PER_S,
        },
        "local_cache_max_age_s_for_half_the_read_limit": e.cache_age_for_advised_s,
        "local_cache_max_age_s_for_the_read_limit": e.cache_age_for_limit_s,
    })
}

fn row(table: &mut Table, name: &str, load: &Load) {
    table.add_row(vec![
        name.to_owned(),
        format!("{:.1}", load.reads_per_s),
        format!("{:.1}", load.read_units_per_s),
        format!("{:.3}", load.write_units_per_s),
        format!("${:.5}", load.usd_per_million_calls),
    ]);
}

fn verdict(e: &Estimate, settings: &Settings) -> String {
    let units = e.healthy.read_units_per_s;
    let advised = ITEM_READ_UNITS_PER_S * ADVISED_READ_SHARE;
    if units <= advised {
        format!(
            "reads take {:.0} % of the item's {ITEM_READ_UNITS_PER_S} RCU/s: within half of it",
            units / ITEM_READ_UNITS_PER_S * 100.0
        )
    } else {
        let over = if units > ITEM_READ_UNITS_PER_S {
            "above the item's limit: reads will be throttled"
        } else {
            "above half the item's limit"
        };
        format!(
            "reads take {units:.0} RCU/s, {over}; set local_cache_max_age to at least {:.1} s \
             ({:.1} s for the limit itself; now {} s)",
            ceil_tenth(e.cache_age_for_advised_s),
            ceil_tenth(e.cache_age_for_limit_s),
            settings.local_cache_max_age_s
        )
    }
}

/// Rounds up to a tenth, so the advice keeps to its limit.
fn ceil_tenth(secs: f64) -> f64 {
    (secs * 10.0).ceil() / 10.0
}

pub(crate) fn to_text(fleet: &Fleet, settings: &Settings, e: &Estimate) -> String {
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED);
    table.set_header(vec![
        "one circuit's item",
        "reads/s",
        "RCU/s",
        "WCU/s",
        "cost per million calls",
    ]);
    row(&mut table, "healthy", &e.healthy);
    row(&mut table, "open (downstream down)", &e.open);
    let held_back = match e.reports_held_back {
        true => {
            "; far fewer here: each environment's own policy trips within the report \
                 interval, so it holds its failures back"
        }
        false => "",
    };
    let reports = match settings.report_interval_s {
        Some(_) => format!(
            "fleet counters, while failing until the trip reaches each environment: at most \
             {:.0} WCU/s on one window's item (limit {ITEM_WRITE_UNITS_PER_S}, the rest \
             throttled){held_back}",
            e.counter_write_units_per_s
        ),
        None => "fleet counters: none (no fleet-wide detection)".to_owned(),
    };
    format!(
        "{} environments, {} calls/s over the fleet ({:.3} per environment); \
         local_cache_max_age {} s, recovery_timeout {} s, failure_threshold {}\n{table}\n\
         open: one election and one reopen per recovery window of {:.1} s (the first \
         windows'; with the default recovery backoff each reopen lengthens the next wait, up \
         to 10 x the recovery timeout, so a long outage writes less: an upper bound)\n\
         trip burst: about {:.0} trip writes in the second the downstream goes down, \
         {:.0} of them throttled (free: each environment opens on its own count anyway)\n\
         {reports}\n{}",
        fleet.environments,
        fleet.calls_per_second,
        e.calls_per_environment,
        settings.local_cache_max_age_s,
        settings.recovery_timeout_s,
        settings.failure_threshold,
        e.recovery_window_s,
        e.trip_writes,
        e.trip_writes_throttled,
        verdict(e, settings),
    )
}

fn keyed_json(keys: &Keys, e: &KeyedEstimate) -> serde_json::Value {
    json!({
        "keys": keys.keys,
        "open_keys": keys.open_keys,
        "key_bytes": keys.key_bytes,
        "max_open_keys": keys.max_open_keys,
        "named_keys": e.named_keys,
        "index_reads_per_s": e.index_reads_per_s,
        "index_bytes_healthy": e.index_bytes_healthy,
        "index_read_units_per_s_healthy": e.index_read_units_healthy,
        "index_bytes_open": e.index_bytes_open,
        "index_read_units_per_s_open": e.index_read_units_open,
        "key_item_reads_per_s_healthy": 0.0,
        "key_item_reads_per_s_open": e.key_item_reads_per_s,
        "key_item_read_units_per_s_open": e.key_item_read_units_per_s,
        "without_index_reads_per_s": e.without_index_reads_per_s,
        "without_index_read_units_per_s": e.without_index_read_units_per_s,
        "index_write_units_per_write_open": e.index_write_units_per_write,
        "index_bytes_at_cap": e.index_bytes_at_cap,
        "index_write_units_per_write_at_cap": e.index_write_units_at_cap,
        "local_cache_max_age_s_for_the_index_read_limit": e.cache_age_for_limit_s,
    })
}

/// The keyed circuit's section: the index and the key items, healthy and with the open
/// keys, against every key's item read as a plain circuit's.
fn keyed_text(keys: &Keys, e: &KeyedEstimate) -> String {
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED);
    table.set_header(vec!["keyed circuit's items", "reads/s", "RCU/s"]);
    let mut add = |what: String, reads: f64, units: f64| {
        table.add_row(vec![what, format!("{reads:.1}"), format!("{units:.1}")]);
    };
    let kb = |bytes: f64| bytes / 1024.0;
    add(
        format!("index, no key open ({:.1} KB)", kb(e.index_bytes_healthy)),
        e.index_reads_per_s,
        e.index_read_units_healthy,
    );
    add("healthy keys' items".to_owned(), 0.0, 0.0);
    add(
        format!(
            "index, {} keys named ({:.1} KB)",
            e.named_keys,
            kb(e.index_bytes_open)
        ),
        e.index_reads_per_s,
        e.index_read_units_open,
    );
    add(
        format!("the {} named keys' items", e.named_keys),
        e.key_item_reads_per_s,
        e.key_item_read_units_per_s,
    );
    add(
        format!("without an index: all {} keys' items", keys.keys),
        e.without_index_reads_per_s,
        e.without_index_read_units_per_s,
    );
    let capped = match keys.open_keys > keys.max_open_keys {
        true => format!(
            "; {} of the {} keys down are refused by the cap and keep running",
            keys.open_keys - keys.max_open_keys,
            keys.open_keys
        ),
        false => String::new(),
    };
    format!(
        "keyed: {} keys (calls spread evenly), {} down at once{capped}, keys of {} bytes, \
         max_open_keys {}\n{table}\n\
         the index is read once per environment per cache age, however many keys; a key's \
         item is read only while the index names it (open, half-open or lately so): healthy \
         keys cost no reads\n\
         index writes: one per key's trip (more when environments trip it together: each \
         adds or refreshes) and one per close, {:.0} WCU each with {} keys named; at the cap \
         ({} keys) the index is {:.1} KB and each write {:.0} WCU (one item takes \
         {ITEM_WRITE_UNITS_PER_S} WCU/s: a mass trip is throttled there, and a throttled \
         key keeps running)\n\
         index reads stay within the item's {ITEM_READ_UNITS_PER_S} RCU/s with \
         local_cache_max_age of at least {:.1} s at {} keys named",
        keys.keys,
        keys.open_keys,
        keys.key_bytes,
        keys.max_open_keys,
        e.index_write_units_per_write,
        e.named_keys,
        keys.max_open_keys,
        kb(e.index_bytes_at_cap),
        e.index_write_units_at_cap,
        ceil_tenth(e.cache_age_for_limit_s),
        e.named_keys,
    )
}
