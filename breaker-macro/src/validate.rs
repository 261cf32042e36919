//! Validation: turns the parsed `key = value` pairs into [`Options`], checking every rule of
//! breaker-runtime's `attribute_docs.md` ("Compile-time checks"), each error at the user's token.

use syn::spanned::Spanned;
use syn::{Expr, ExprLit, ExprPath, Ident, Lit, LitInt, LitStr, Path, UnOp};

use crate::parse::{AttributeArgs, KeyValue, attribute_span};

/// Every key the attribute accepts, in the order the docs list them.
const KEYS: &[&str] = &[
    "name",
    "persistence_store",
    "config",
    "failure_threshold",
    "success_threshold",
    "recovery_timeout",
    "local_cache_max_age",
    "on_circuit_open",
    "on_transition",
    "handled",
    "ignored",
    "crate",
];

const INLINE_TUNABLES: &[&str] = &[
    "failure_threshold",
    "success_threshold",
    "recovery_timeout",
    "local_cache_max_age",
];

/// What the attribute asked for, validated.
pub(crate) struct Options {
    pub(crate) name: LitStr,
    pub(crate) krate: Path,
    pub(crate) store: Option<Expr>,
    pub(crate) config: ConfigSource,
    pub(crate) on_circuit_open: Option<ExprPath>,
    pub(crate) on_transition: Option<ExprPath>,
    pub(crate) counts: Counts,
}

/// Where the circuit's config comes from.
pub(crate) enum ConfigSource {
    Default,
    Expr(Expr),
    Inline(Tunables),
}

/// Inline tunables; `None` keeps the default.
#[derive(Default)]
pub(crate) struct Tunables {
    pub(crate) failure_threshold: Option<u32>,
    pub(crate) success_threshold: Option<u32>,
    pub(crate) recovery_timeout_secs: Option<u64>,
    pub(crate) local_cache_max_age_secs: Option<u64>,
}

/// Which `Err`s count as failures.
pub(crate) enum Counts {
    Every,
    Handled(ExprPath),
    Ignored(ExprPath),
}

fn valid_keys() -> String {
    KEYS.join(", ")
}

impl Options {
    pub(crate) fn from_args(args: AttributeArgs) -> syn::Result<Self> {
        let mut seen: Vec<Ident> = Vec::new();
        for KeyValue { key, .. } in &args.pairs {
            let text = key.to_string();
            if !KEYS.contains(&text.as_str()) {
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
        let mut tunables = Tunables::default();
        let mut first_tunable: Option<Ident> = None;
        let mut on_circuit_open = None;
        let mut on_transition = None;
        let mut handled: Option<(Ident, ExprPath)> = None;
        let mut ignored: Option<(Ident, ExprPath)> = None;

        for KeyValue { key, value } in args.pairs {
            let text = key.to_string();
            if INLINE_TUNABLES.contains(&text.as_str()) {
                if let Some((config_key, _)) = &config_expr {
                    return Err(tunable_with_config(&key, config_key));
                }
                first_tunable.get_or_insert_with(|| key.clone());
            }
            match text.as_str() {
                "name" => name = Some(circuit_name(value)?),
                "crate" => krate = Some(crate_path(value)?),
                "persistence_store" => store = Some(value),
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
                "failure_threshold" => {
                    tunables.failure_threshold = Some(at_least_one(&key, &value)?);
                }
                "success_threshold" => {
                    tunables.success_threshold = Some(at_least_one(&key, &value)?);
                }
                "recovery_timeout" => {
                    tunables.recovery_timeout_secs = Some(whole_seconds(&key, &value, 1)?);
                }
                "local_cache_max_age" => {
                    tunables.local_cache_max_age_secs = Some(whole_seconds(&key, &value, 0)?);
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
                _ => unreachable!("keys were checked against KEYS"),
            }
        }

        let name = name.ok_or_else(|| {
            syn::Error::new(
                attribute_span(),
                "missing `name`: expected `#[circuit_breaker(name = \"circuit-id\")]`",
            )
        })?;
        let config = match (config_expr, first_tunable) {
            (Some((_, expr)), _) => ConfigSource::Expr(expr),
            (None, Some(_)) => ConfigSource::Inline(tunables),
            (None, None) => ConfigSource::Default,
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
            config,
            on_circuit_open,
            on_transition,
            counts,
        })
    }
}

fn tunable_with_config(tunable: &Ident, config: &Ident) -> syn::Error {
    syn::Error::new_spanned(
        tunable,
        format!(
            "`{tunable}` cannot be combined with `{config}`; set it on the \
             `CircuitBreakerConfig` builder instead"
        ),
    )
}

fn handled_with_ignored(second: &Ident, first: &Ident) -> syn::Error {
    syn::Error::new_spanned(
        second,
        format!(
            "`{second}` cannot be combined with `{first}`; expected one predicate: \
             `handled` (errors that count) or `ignored` (errors that don't)"
        ),
    )
}

fn circuit_name(value: Expr) -> syn::Result<LitStr> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(name),
            ..
        }) => {
            if name.value().trim().is_empty() {
                Err(syn::Error::new_spanned(
                    name,
                    "expected a non-empty circuit name, e.g. `name = \"payment-backend\"`",
                ))
            } else {
                Ok(name)
            }
        }
        other => Err(syn::Error::new_spanned(
            other,
            "expected a string literal, e.g. `name = \"payment-backend\"`",
        )),
    }
}

fn crate_path(value: Expr) -> syn::Result<Path> {
    match value {
        Expr::Path(ExprPath {
            path, qself: None, ..
        }) if path.segments.iter().all(|s| s.arguments.is_none()) => Ok(path),
        other => Err(syn::Error::new_spanned(
            other,
            "expected the path of the renamed breaker-runtime crate, e.g. `crate = ::my_breaker`",
        )),
    }
}

fn fn_path(key: &Ident, value: Expr) -> syn::Result<ExprPath> {
    match value {
        Expr::Path(path) => Ok(path),
        other => Err(syn::Error::new_spanned(
            other,
            format!(
                "expected the path of a function for `{key}`, e.g. `{key} = {}`",
                example_fn(key)
            ),
        )),
    }
}

fn example_fn(key: &Ident) -> &'static str {
    match key.to_string().as_str() {
        "on_circuit_open" => "serve_cached",
        "on_transition" => "log_transition",
        "handled" => "is_server_error",
        _ => "is_client_error",
    }
}

/// An unsuffixed integer literal, or the error for what was written instead.
fn integer<'a>(key: &Ident, value: &'a Expr, expected: &str) -> syn::Result<&'a LitInt> {
    let wrong = |token: &dyn quote::ToTokens| {
        Err(syn::Error::new_spanned(
            token,
            format!("expected {expected} for `{key}`"),
        ))
    };
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) if int.suffix().is_empty() => Ok(int),
        Expr::Unary(unary) if matches!(unary.op, UnOp::Neg(_)) => wrong(unary),
        other => wrong(other),
    }
}

fn at_least_one(key: &Ident, value: &Expr) -> syn::Result<u32> {
    let expected = "an integer literal of at least 1";
    let int = integer(key, value, expected)?;
    match int.base10_parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        Ok(_) => Err(syn::Error::new_spanned(
            int,
            format!("expected {expected} for `{key}`, got 0"),
        )),
        Err(_) => Err(syn::Error::new(
            int.span(),
            format!("expected {expected} for `{key}` that fits in a u32"),
        )),
    }
}

/// The longest duration the runtime's config accepts: 365 days, in seconds.
const MAX_SECONDS: u64 = 365 * 24 * 3600;

fn whole_seconds(key: &Ident, value: &Expr, minimum: u64) -> syn::Result<u64> {
    let expected = format!("a whole number of seconds of at least {minimum}");
    let int = integer(key, value, &expected)?;
    match int.base10_parse::<u64>() {
        Ok(n) if n > MAX_SECONDS => Err(syn::Error::new_spanned(
            int,
            format!("expected at most {MAX_SECONDS} seconds (365 days) for `{key}`, got {n}"),
        )),
        Ok(n) if n >= minimum => Ok(n),
        Ok(n) => Err(syn::Error::new_spanned(
            int,
            format!("expected {expected} for `{key}`, got {n}"),
        )),
        Err(_) => Err(syn::Error::new(
            int.span(),
            format!("expected {expected} for `{key}` that fits in a u64"),
        )),
    }
}

/// Checks the item is a function the attribute can guard.
pub(crate) fn guardable(sig: &syn::Signature) -> syn::Result<()> {
    if let Some(constness) = &sig.constness {
        return Err(syn::Error::new_spanned(
            constness,
            "expected a non-`const` fn: `#[circuit_breaker]` guards calls at run time",
        ));
    }
    if let Some(abi) = &sig.abi {
        return Err(syn::Error::new_spanned(
            abi,
            "expected a Rust fn: `#[circuit_breaker]` cannot guard an `extern` fn",
        ));
    }
    if let Some(variadic) = &sig.variadic {
        return Err(syn::Error::new(
            variadic.span(),
            "expected a fn without variadic arguments",
        ));
    }
    Ok(())
}
