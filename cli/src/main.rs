//! `breaker`: the operator's command line for breaker's circuit table.
//!
//! ```text
//! breaker list                                        # every circuit
//! breaker show payment-backend --json                 # one, for scripts
//! breaker open payment-backend --for 30m --reason "INC-42: provider down"
//! breaker disable payment-backend --for 10m           # calls run, nothing trips
//! breaker shadow payment-backend --for 24h            # calls run, verdicts reported
//! breaker release payment-backend                     # back to normal operation
//! breaker close payment-backend                       # closed now
//! breaker open webhooks --key shop-17 --for 10m       # one key of a keyed circuit
//! breaker show webhooks --keys                        # a keyed circuit's open keys
//! breaker reconcile webhooks                          # its open_keys count = its entries
//! breaker watch                                       # live view during an incident
//! breaker capacity --envs 10000 --calls-per-second 100000   # the item's load and cost
//! ```
//!
//! Exit status: 0 done, 1 the command failed (unknown circuit, no table, a write that
//! lost a race, AWS errors), 2 bad usage (flags, durations).
#![forbid(unsafe_code)]

use std::process::ExitCode;

use breaker_runtime::store::OverrideKind;
use clap::Parser;

mod args;
mod capacity;
mod commands;
mod identity;
mod keyed;
mod now;
mod printable;
mod store_clock;
mod table;
mod target;
mod view;
mod watch;

use args::{Cli, Command};
use table::Table;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // One line, even for SDK errors that span several (the credential chain).
            let message = format!("{error:#}");
            let one_line = message
                .lines()
                .map(str::trim)
                .fold(String::new(), |line, next| {
                    match line.is_empty() || line.ends_with(':') {
                        true => format!("{line} {next}").trim_start().to_owned(),
                        false => format!("{line}; {next}"),
                    }
                });
            eprintln!("error: {one_line}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    if let Command::Capacity(args) = &cli.command {
        return capacity::output::run(args);
    }
    let table = Table::open(&cli.table).await?;
    let done = match &cli.command {
        Command::List(output) => commands::list(&table, output).await,
        Command::Show(circuit) => commands::show(&table, circuit).await,
        Command::Open(args) => commands::set_override(&table, OverrideKind::ForcedOpen, args).await,
        Command::Disable(args) => {
            commands::set_override(&table, OverrideKind::Disabled, args).await
        }
        Command::Close(circuit) => commands::close(&table, circuit).await,
        Command::Shadow(args) => commands::set_override(&table, OverrideKind::Shadow, args).await,
        Command::Release(circuit) => commands::release(&table, circuit).await,
        Command::Reconcile(args) => keyed::reconcile(&table, args).await,
        Command::Watch(args) => watch::run(&table, args).await,
        Command::Capacity(_) => unreachable!("answered without a table"),
    };
    done.map_err(|error| table.explain(error))
}
