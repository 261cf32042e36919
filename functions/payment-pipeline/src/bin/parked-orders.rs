//! `parked-orders`: the operator's tool for orders parked as `unknown` in the ledger (a
//! charge whose outcome no answer told). List them, ask the payment provider about each
//! (by its order id, the idempotency key it was sent with), then settle it:
//!
//! ```text
//! parked-orders list
//! parked-orders settle <order_id> charged|not-charged <note>
//! ```
//!
//! `charged`: the item becomes `charged` (later copies are duplicates). `not-charged`: the
//! item is deleted; redrive the order (docs/functions.md) to charge it. Reads `LEDGER_TABLE`
//! and the usual AWS settings (`AWS_REGION`, `AWS_PROFILE`, `AWS_ENDPOINT_URL`). Exit 0 on
//! success, 1 when the ledger failed or the order is not parked, 2 on a usage error.
#![forbid(unsafe_code)]

use std::process::ExitCode;
use std::time::Duration;

use payment_pipeline::{Ledger, Resolution, SettleError};

const USAGE: &str =
    "usage: parked-orders list | parked-orders settle <order_id> charged|not-charged <note>";

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = match parse(&args) {
        Ok(command) => command,
        Err(error) => {
            eprintln!("{error}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let Ok(table) = std::env::var("LEDGER_TABLE") else {
        eprintln!("LEDGER_TABLE is not set: the ledger table's name\n{USAGE}");
        return ExitCode::from(2);
    };
    let aws = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let second = Duration::from_secs(1);
    let ledger = Ledger::new(&aws, table, second * 60, second * 60 * 86_400, second * 10);
    match command {
        Command::List => match ledger.parked().await {
            Ok(parked) => {
                println!("order_id\tparked_at\tcontents\tdetail");
                for order in &parked {
                    println!(
                        "{}\t{}\t{}\t{}",
                        printable(&order.order_id),
                        order.parked_at,
                        printable(&order.contents),
                        printable(&order.detail)
                    );
                }
                eprintln!("{} parked order(s)", parked.len());
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("{error}");
                ExitCode::FAILURE
            }
        },
        Command::Settle {
            order_id,
            resolution,
            note,
        } => match ledger.settle_parked(&order_id, resolution, &note).await {
            Ok(()) => {
                println!("{} settled as {resolution:?}", printable(&order_id));
                ExitCode::SUCCESS
            }
            Err(error @ (SettleError::NotParked(_) | SettleError::Ledger(_))) => {
                eprintln!("{}", printable(&error.to_string()));
                ExitCode::FAILURE
            }
        },
    }
}

enum Command {
    List,
    Settle {
        order_id: String,
        resolution: Resolution,
        note: String,
    },
}

fn parse(args: &[String]) -> Result<Command, String> {
    match args {
        [list] if list == "list" => Ok(Command::List),
        [settle, order_id, resolution, note] if settle == "settle" => {
            let resolution = match resolution.as_str() {
                "charged" => Resolution::Charged,
                "not-charged" => Resolution::NotCharged,
                other => {
                    return Err(format!(
                        "{other:?}: say what the payment provider answered, charged or not-charged"
                    ));
                }
            };
            if note.trim().is_empty() || note.len() > 256 {
                return Err(
                    "the note (who settles it, and on what evidence) must be 1 to 256 bytes".into(),
                );
            }
            Ok(Command::Settle {
                order_id: order_id.clone(),
                resolution,
                note: note.clone(),
            })
        }
        _ => Err("unknown command".into()),
    }
}

/// `text` with control characters (terminal escapes among them) shown escaped.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}
