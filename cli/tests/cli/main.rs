//! The `breaker` binary against dynalite: every subcommand's output and exit status, bad
//! input, the live view; breaker environments honouring an operator's override within their
//! cache age and never erasing it, and running every call under a shadow; Powertools for
//! AWS Lambda (Python) rejecting a circuit forced open; and the fleet's failure counters
//! kept out of every command.

mod bad_input;
mod clock;
mod commands;
mod credentials;
mod fleet_counters;
mod keyed;
mod layouts;
mod powertools;
mod protocol;
mod shadow;
mod support;
mod watch;
