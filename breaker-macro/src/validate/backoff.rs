//! The recovery backoff's keys: `recovery_backoff = "doubling" | "none"` (the name of
//! `RecoveryBackoff::doubling()` and of `CIRCUIT_RECOVERY_BACKOFF=doubling`) and
//! `recovery_backoff_max_secs = N` (the cap of the doubling backoff), each error at the
//! user's token.

use breaker_rules::{DEFAULT_BACKOFF_CAP_FACTOR, backoff_cap_fits};
use syn::spanned::Spanned;
use syn::{Expr, Ident};

/// The cap is no shorter than the recovery timeout (given, or the default), at the cap's
/// value.
pub(super) fn check_cap_against_recovery(
    key: &Ident,
    value: &Expr,
    cap: u64,
    recovery: u64,
) -> syn::Result<()> {
    if backoff_cap_fits(recovery, cap) {
        return Ok(());
    }
    Err(syn::Error::new(
        value.span(),
        format!(
            "expected at least {recovery} seconds for `{key}` (the recovery timeout), got \
             {cap}: the cap is the longest wait, and the first wait is the recovery \
             timeout (by default the cap is {DEFAULT_BACKOFF_CAP_FACTOR} × the timeout)"
        ),
    ))
}

pub(super) fn cap_without_backoff(key: &Ident, other: &Ident) -> syn::Error {
    syn::Error::new_spanned(
        key,
        format!(
            "`{key}` cannot be combined with `{other}`: `recovery_backoff_max_secs` caps the \
             doubling backoff, and `recovery_backoff = \"none\"` turns it off"
        ),
    )
}
