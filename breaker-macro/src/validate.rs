//! Validation: turns the parsed `key = value` pairs into [`Options`], checking every rule of
//! breaker-runtime's `attribute_docs.md` ("Compile-time checks"), each error at the user's
//! token. The keys, what each takes and its limits come from breaker-rules' table of
//! settings ([`breaker_rules::knobs`](mod@breaker_rules::knobs)); the call site's keys are read here, the config's in
//! [`settings`].

use breaker_rules::knobs::{Group, keys, knob};
use breaker_rules::one_trip_policy;
use syn::{Expr, ExprPath, Ident, LitStr, Path};

use crate::parse::{AttributeArgs, KeyValue, attribute_span};

mod backoff;
mod conflicts;
mod literals;
mod settings;
mod signature;

use conflicts::{
    handled_with_ignored, rate_with_adaptive, rate_with_threshold, tunable_with_config,
};
use literals::{at_least_one, circuit_name, crate_path, fn_path};
pub(crate) use settings::Setting;
use settings::Settings;
pub(crate) use signature::guardable;

/// What the attribute asked for, validated.
pub(crate) struct Options {
    pub(crate) name: LitStr,
    pub(crate) krate: Path,
    pub(crate) store: Option<Expr>,
    /// `config = expr`.
    pub(crate) config: Option<Expr>,
    /// The config keys given (inline tunables, `shadow`), in the table's order.
    pub(crate) settings: Vec<Setting>,
    pub(crate) on_circuit_open: Option<ExprPath>,
    pub(crate) on_transition: Option<ExprPath>,
    pub(crate) counts: Counts,
    /// `keyed_by = expr`: a circuit per key.
    pub(crate) keyed: Option<Keyed>,
}

/// A keyed circuit: the key expression and the cap on open keys.
pub(crate) struct Keyed {
    pub(crate) key: Expr,
    /// `max_open_keys = n`.
    pub(crate) max_open_keys: Option<u32>,
}

/// Which `Err`s count as failures.
pub(crate) enum Counts {
    Every,
    Handled(ExprPath),
    Ignored(ExprPath),
}

fn valid_keys() -> String {
    keys().collect::<Vec<_>>().join(", ")
}

impl Options {
    pub(crate) fn from_args(args: AttributeArgs) -> syn::Result<Self> {
        let mut seen: Vec<Ident> = Vec::new();
        for KeyValue { key, .. } in &args.pairs {
            let text = key.to_string();
            if knob(&text).is_none() {
                return Err(syn::Error::new_spanned(
                    key,
                    format!("unknown key `{text}`; expected one of: {}", valid_keys()),
                ));
            }
            if seen.iter().any(|k| *k == text) {
                return Err(syn::Error::new_spanned(
                    key,
                    format!(
                        "duplicate key `{text}`; each key may be given once (valid keys: {})",
                        valid_keys()
                    ),
                ));
            }
            seen.push(key.clone());
        }

        let mut name = None;
        let mut krate = None;
        let mut store = None;
        let mut config_expr: Option<(Ident, Expr)> = None;
        let mut settings = Settings::default();
        let mut first_tunable: Option<Ident> = None;
        let mut on_circuit_open = None;
        let mut on_transition = None;
        let mut handled: Option<(Ident, ExprPath)> = None;
        let mut ignored: Option<(Ident, ExprPath)> = None;
        let mut keyed_by = None;
        let mut max_open_keys: Option<(Ident, u32)> = None;

        for KeyValue { key, value } in args.pairs {
            let text = key.to_string();
            let knob = knob(&text).expect("keys were checked against the table");
            if knob.group.is_tunable() {
                if let Some((config_key, _)) = &config_expr {
                    return Err(tunable_with_config(&key, config_key));
                }
                first_tunable.get_or_insert_with(|| key.clone());
            }
            let threshold = settings.key("failure_threshold");
            if knob.group == Group::Rate
                && !one_trip_policy(threshold.is_some(), true)
                && let Some(threshold) = threshold
            {
                return Err(rate_with_threshold(&key, threshold));
            }
            if knob.group.sets_config() {
                settings.add(key, &value, knob)?;
                if let Some((second, first)) = settings.adaptive_conflict() {
                    return Err(rate_with_adaptive(second, first));
                }
                continue;
            }
            match text.as_str() {
                "name" => name = Some(circuit_name(value)?),
                "crate" => krate = Some(crate_path(value)?),
                "persistence_store" => store = Some(value),
                "keyed_by" => keyed_by = Some(value),
                "max_open_keys" => max_open_keys = Some((key.clone(), at_least_one(&key, &value)?)),
                "config" => {
                    if let Some(tunable) = &first_tunable {
                        return Err(syn::Error::new_spanned(
                            &key,
                            format!(
                                "`config` cannot be combined with the inline tunable `{tunable}`; \
                                 set every value on the `CircuitBreakerConfig` builder instead"
                            ),
                        ));
                    }
                    config_expr = Some((key, value));
                }
                "on_circuit_open" => on_circuit_open = Some(fn_path(&key, value)?),
                "on_transition" => on_transition = Some(fn_path(&key, value)?),
                "handled" => {
                    if let Some((other, _)) = &ignored {
                        return Err(handled_with_ignored(&key, other));
                    }
                    handled = Some((key.clone(), fn_path(&key, value)?));
                }
                "ignored" => {
                    if let Some((other, _)) = &handled {
                        return Err(handled_with_ignored(&key, other));
                    }
                    ignored = Some((key.clone(), fn_path(&key, value)?));
                }
                _ => unreachable!("a call site's key of the table without a reading here"),
            }
        }

        let name = name.ok_or_else(|| {
            syn::Error::new(
                attribute_span(),
                "missing `name`: expected `#[circuit_breaker(name = \"circuit-id\")]`",
            )
        })?;
        let settings = settings.finish()?;
        let keyed = match (keyed_by, max_open_keys) {
            (None, Some((key, _))) => {
                return Err(syn::Error::new_spanned(
                    &key,
                    "`max_open_keys` needs `keyed_by`: it caps how many keys of a keyed \
                     circuit may be open at once (add `keyed_by = <an argument>`, or remove it)",
                ));
            }
            (None, None) => None,
            (Some(key), cap) => Some(Keyed {
                key,
                max_open_keys: cap.map(|(_, n)| n),
            }),
        };
        let counts = match (handled, ignored) {
            (Some((_, path)), _) => Counts::Handled(path),
            (_, Some((_, path))) => Counts::Ignored(path),
            _ => Counts::Every,
        };
        Ok(Self {
            name,
            krate: krate.unwrap_or_else(|| syn::parse_quote!(::breaker_runtime)),
            store,
            config: config_expr.map(|(_, expr)| expr),
            settings,
            on_circuit_open,
            on_transition,
            counts,
            keyed,
        })
    }
}
