//! Prints what a function's IAM policy must allow on the circuit table for the circuits
//! named on the command line: the actions, then each circuit's `dynamodb:LeadingKeys`
//! values (for `ForAllValues:StringLike`), one per line, as the runtime forms them.
//! `scripts/check-template.sh` checks template.yaml against this output.
//!
//! ```text
//! cargo run -q -p breaker-runtime --example iam_policy -- payment-backend
//! action dynamodb:GetItem
//! ...
//! key payment-backend payment-backend#fleet@*
//! ```
//!
//! `-- --keyed webhooks` prints a keyed circuit's (`webhooks#keys webhooks#key=*`).

use breaker_runtime::store::DynamoDbStore;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Building does no I/O: no credentials or region are needed.
    let store = DynamoDbStore::builder().table_name("circuits").build()?;
    for action in DynamoDbStore::IAM_ACTIONS {
        println!("action {action}");
    }
    // `--keyed` makes the circuits after it keyed circuits (`KeyedCircuitBreaker`).
    let mut keyed = false;
    for circuit in std::env::args().skip(1) {
        if circuit == "--keyed" {
            keyed = true;
            continue;
        }
        let keys = match keyed {
            true => store.iam_leading_keys_keyed(&circuit),
            false => store.iam_leading_keys(&circuit),
        };
        println!("key {circuit} {}", keys.join(" "));
    }
    Ok(())
}
