//! The recovery backoff's keys: `recovery_backoff = "exponential" | "none"` and
//! `recovery_backoff_max_secs = N` (the cap of the exponential backoff), each error at the
//! user's token.

use breaker_rules::{
    DEFAULT_BACKOFF_CAP_FACTOR, MAX_RECOVERY_BACKOFF_SECS, MIN_RECOVERY_TIMEOUT_SECS,
    backoff_cap_fits,
};
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Ident, Lit};

use super::literals::bounded;

/// The backoff's inline keys; all `None`: the default (exponential, 10 × the recovery).
#[derive(Default)]
pub(crate) struct BackoffTunables {
    /// `Some(true)`: `"exponential"`; `Some(false)`: `"none"`.
    pub(crate) exponential: Option<bool>,
    pub(crate) max_secs: Option<u64>,
    /// The `recovery_backoff = "none"` key, which no cap may join.
    none_key: Option<Ident>,
    /// The cap's key and where its value is, for the errors that point at it.
    max: Option<(Ident, Span)>,
}

impl BackoffTunables {
    pub(crate) fn any(&self) -> bool {
        self.exponential.is_some() || self.max_secs.is_some()
    }

    /// `recovery_backoff = "exponential" | "none"`.
    pub(super) fn kind(&mut self, key: &Ident, value: &Expr) -> syn::Result<()> {
        let kind = match value {
            Expr::Lit(ExprLit {
                lit: Lit::Str(kind),
                ..
            }) => kind.value(),
            other => return Err(not_a_kind(key, other)),
        };
        let exponential = match kind.as_str() {
            "exponential" => true,
            "none" => false,
            _ => return Err(not_a_kind(key, value)),
        };
        if !exponential {
            if let Some((max_key, _)) = &self.max {
                return Err(cap_without_backoff(key, max_key));
            }
            self.none_key = Some(key.clone());
        }
        self.exponential = Some(exponential);
        Ok(())
    }

    /// `recovery_backoff_max_secs = N`, from the shortest recovery timeout to a day.
    pub(super) fn max(&mut self, key: &Ident, value: &Expr) -> syn::Result<()> {
        if let Some(none) = &self.none_key {
            return Err(cap_without_backoff(key, none));
        }
        let least = MIN_RECOVERY_TIMEOUT_SECS;
        let secs = bounded(key, value, least, MAX_RECOVERY_BACKOFF_SECS, "seconds")?;
        self.max_secs = Some(secs);
        self.max = Some((key.clone(), value.span()));
        Ok(())
    }

    /// The cap is no shorter than the recovery timeout (given, or the default 30 s).
    pub(super) fn check_against_recovery(&self, recovery_secs: Option<u64>) -> syn::Result<()> {
        let (Some((key, value_span)), Some(cap)) = (&self.max, self.max_secs) else {
            return Ok(());
        };
        let recovery = recovery_secs.unwrap_or(DEFAULT_RECOVERY_SECS);
        if backoff_cap_fits(recovery, cap) {
            return Ok(());
        }
        Err(syn::Error::new(
            *value_span,
            format!(
                "expected at least {recovery} seconds for `{key}` (the recovery timeout), got \
                 {cap}: the cap is the longest wait, and the first wait is the recovery \
                 timeout (by default the cap is {DEFAULT_BACKOFF_CAP_FACTOR} × the timeout)"
            ),
        ))
    }
}

/// The recovery timeout of a circuit that sets none, in seconds.
const DEFAULT_RECOVERY_SECS: u64 = 30;

fn not_a_kind(key: &Ident, value: &Expr) -> syn::Error {
    syn::Error::new_spanned(
        value,
        format!("expected `{key} = \"exponential\"` or `{key} = \"none\"`"),
    )
}

fn cap_without_backoff(key: &Ident, other: &Ident) -> syn::Error {
    syn::Error::new_spanned(
        key,
        format!(
            "`{key}` cannot be combined with `{other}`: `recovery_backoff_max_secs` caps the \
             exponential backoff, and `recovery_backoff = \"none\"` turns it off"
        ),
    )
}
