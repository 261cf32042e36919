//! The config keys (inline tunables and `shadow`): each value checked against the limits
//! its row of the table of settings gives, then against the keys it depends on. The result
//! is one [`Setting`] per key, which the expansion turns into one builder call.

use breaker_rules::knobs::{Group, Knob, Value};
use breaker_rules::{DEFAULT_RECOVERY_TIMEOUT_SECS, default_jitter_fits, one_trip_policy};
use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{Expr, Ident, LitStr};

use super::backoff::{cap_without_backoff, check_cap_against_recovery};
use super::conflicts::{
    check_call_timeout_fits_lease, check_rate_policy, fleet_key_without_detection, jitter_too_long,
    rate_with_threshold,
};
use super::literals::{at_least_one, boolean, bounded, choice, percentage, whole_seconds};

/// One config key as given, its value checked.
pub(crate) struct Setting {
    pub(crate) key: Ident,
    pub(crate) knob: &'static Knob,
    pub(crate) value: Checked,
    /// Where the value was written, for the errors of the keys it depends on.
    expr: Expr,
}

/// A checked value, emitted as the literal of the type the config's setter takes.
pub(crate) enum Checked {
    Count(u32),
    Percent(u8),
    Int(u64),
    Flag(bool),
    Choice(LitStr),
}

impl Checked {
    fn int(&self) -> Option<u64> {
        match self {
            Checked::Count(n) => Some(u64::from(*n)),
            Checked::Percent(p) => Some(u64::from(*p)),
            Checked::Int(n) => Some(*n),
            Checked::Flag(_) | Checked::Choice(_) => None,
        }
    }
}

impl ToTokens for Checked {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.extend(match self {
            Checked::Count(n) => quote!(#n),
            Checked::Percent(p) => quote!(#p),
            Checked::Int(n) => quote!(#n),
            Checked::Flag(b) => quote!(#b),
            Checked::Choice(s) => quote!(#s),
        });
    }
}

/// The config keys read so far.
#[derive(Default)]
pub(super) struct Settings {
    given: Vec<Setting>,
}

impl Settings {
    /// `adaptive = true` and a key of another trip policy (a rate's, `failure_threshold`),
    /// the later of the two first.
    pub(super) fn adaptive_conflict(&self) -> Option<(&Ident, &Ident)> {
        let adaptive = self
            .given
            .iter()
            .position(|s| s.knob.key == "adaptive" && matches!(s.value, Checked::Flag(true)))?;
        let other = self
            .given
            .iter()
            .position(|s| s.knob.group == Group::Rate || s.knob.key == "failure_threshold")?;
        let (first, second) = (adaptive.min(other), adaptive.max(other));
        Some((&self.given[second].key, &self.given[first].key))
    }

    /// The key as given, if it was.
    pub(super) fn key(&self, key: &str) -> Option<&Ident> {
        self.setting(key).map(|setting| &setting.key)
    }

    fn setting(&self, key: &str) -> Option<&Setting> {
        self.given.iter().find(|setting| setting.key == key)
    }

    fn int(&self, key: &str) -> Option<u64> {
        self.setting(key).and_then(|setting| setting.value.int())
    }

    /// Checks one key's value, and the keys given before it that it contradicts: the
    /// contradiction is reported at the second key of the pair.
    pub(super) fn add(&mut self, key: Ident, value: &Expr, knob: &'static Knob) -> syn::Result<()> {
        let text = key.to_string();
        self.before(&key, &text)?;
        let checked = check_value(&key, value, knob.value)?;
        self.after(&key, &text, value, &checked)?;
        self.given.push(Setting {
            key,
            knob,
            value: checked,
            expr: value.clone(),
        });
        Ok(())
    }

    /// The rules a key breaks by being given at all, beside an earlier one.
    fn before(&self, key: &Ident, text: &str) -> syn::Result<()> {
        let earlier = |other: &str| self.key(other);
        match text {
            "failure_threshold" => {
                let rate = self.given.iter().find(|s| s.knob.group == Group::Rate);
                if !one_trip_policy(true, rate.is_some())
                    && let Some(rate) = rate
                {
                    return Err(rate_with_threshold(key, &rate.key));
                }
            }
            "window_calls" | "window_secs" => {
                let other = if text == "window_calls" {
                    "window_secs"
                } else {
                    "window_calls"
                };
                if let Some(first) = earlier(other) {
                    return Err(syn::Error::new_spanned(
                        key,
                        format!(
                            "`{key}` cannot be combined with `{first}`; a sliding window \
                             counts either the last calls or the last seconds"
                        ),
                    ));
                }
            }
            "recovery_backoff_max_secs" => {
                if let Some(none) = self.backoff_off() {
                    return Err(cap_without_backoff(key, none));
                }
            }
            "call_timeout" | "call_timeout_ms" => {
                let first = earlier("call_timeout").or_else(|| earlier("call_timeout_ms"));
                if let Some(first) = first {
                    return Err(syn::Error::new_spanned(
                        key,
                        format!(
                            "`{key}` cannot be combined with `{first}`; give the call \
                             timeout once, in seconds or in milliseconds"
                        ),
                    ));
                }
            }
            "fleet_failure_threshold" | "fleet_failure_rate" => {
                if let Some(off) = self.fleet_off() {
                    return Err(fleet_key_without_detection(key, off));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The rules a key's value breaks, alone or beside an earlier key.
    fn after(&self, key: &Ident, text: &str, value: &Expr, checked: &Checked) -> syn::Result<()> {
        match (text, checked) {
            ("recovery_timeout", Checked::Int(secs)) if !default_jitter_fits(*secs) => {
                Err(jitter_too_long(key, value, *secs))
            }
            ("recovery_backoff", Checked::Choice(kind)) if kind.value() == "none" => {
                match self.key("recovery_backoff_max_secs") {
                    Some(max) => Err(cap_without_backoff(key, max)),
                    None => Ok(()),
                }
            }
            ("call_timeout", Checked::Int(secs)) => {
                check_call_timeout_fits_lease(key, value, secs * 1000)
            }
            ("call_timeout_ms", Checked::Int(millis)) => {
                check_call_timeout_fits_lease(key, value, *millis)
            }
            ("fleet_detection", Checked::Flag(false)) => {
                let fleet = self
                    .given
                    .iter()
                    .find(|s| s.key.to_string().starts_with("fleet_"));
                match fleet {
                    Some(first) => Err(fleet_key_without_detection(&first.key, key)),
                    None => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }

    /// `recovery_backoff = "none"`, if given.
    fn backoff_off(&self) -> Option<&Ident> {
        let setting = self.setting("recovery_backoff")?;
        matches!(&setting.value, Checked::Choice(kind) if kind.value() == "none")
            .then_some(&setting.key)
    }

    /// `fleet_detection = false`, if given.
    fn fleet_off(&self) -> Option<&Ident> {
        let setting = self.setting("fleet_detection")?;
        matches!(setting.value, Checked::Flag(false)).then_some(&setting.key)
    }

    /// The rules of the keys taken together (a whole rate policy, a cap no shorter than the
    /// recovery timeout); the settings in the table's order, the order of the builder calls.
    pub(super) fn finish(mut self) -> syn::Result<Vec<Setting>> {
        let rate_keys: Vec<Ident> = (self.given.iter())
            .filter(|s| s.knob.group == Group::Rate)
            .map(|s| s.key.clone())
            .collect();
        let minimum = self.setting("minimum_calls").map(|s| &s.expr);
        let window_calls = self.int("window_calls").map(|calls| calls as u32);
        let minimum_calls = self.int("minimum_calls").map(|calls| calls as u32);
        check_rate_policy(&rate_keys, minimum_calls.zip(minimum), window_calls)?;
        if let Some(cap) = self.setting("recovery_backoff_max_secs") {
            let recovery = self.int("recovery_timeout");
            let recovery = recovery.unwrap_or(DEFAULT_RECOVERY_TIMEOUT_SECS);
            let secs = cap.value.int().expect("a cap is seconds");
            check_cap_against_recovery(&cap.key, &cap.expr, secs, recovery)?;
        }
        self.given.sort_by_key(|s| position(s.knob));
        Ok(self.given)
    }
}

/// The row's place in the table.
fn position(knob: &Knob) -> usize {
    (breaker_rules::knobs::KNOBS.iter())
        .position(|row| row.key == knob.key)
        .expect("a row of the table")
}

/// The value, checked against what the key's row of the table says it takes.
fn check_value(key: &Ident, value: &Expr, kind: Value) -> syn::Result<Checked> {
    Ok(match kind {
        Value::Count => Checked::Count(at_least_one(key, value)?),
        Value::Percent => Checked::Percent(percentage(key, value)?),
        Value::Seconds { min } => Checked::Int(whole_seconds(key, value, min)?),
        Value::Range { min, max, unit } => Checked::Int(bounded(key, value, min, max, unit)?),
        Value::Flag => Checked::Flag(boolean(key, value)?),
        Value::Choice(choices) => Checked::Choice(choice(key, value, choices)?),
        Value::Name | Value::Expr | Value::FnPath | Value::CratePath | Value::NoKey => {
            unreachable!("`{key}` does not set the config")
        }
    })
}
