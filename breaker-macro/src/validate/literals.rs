//! The values of the attribute's keys: literals and paths, each error at the user's token.

use breaker_rules::{MAX_DURATION_SECS, MAX_PERCENT, MIN_COUNT, MIN_PERCENT, count_ok};
use syn::{Expr, ExprLit, ExprPath, Ident, Lit, LitInt, LitStr, Path, UnOp};

pub(super) fn circuit_name(value: Expr) -> syn::Result<LitStr> {
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

pub(super) fn crate_path(value: Expr) -> syn::Result<Path> {
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

pub(super) fn fn_path(key: &Ident, value: Expr) -> syn::Result<ExprPath> {
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

pub(super) fn at_least_one(key: &Ident, value: &Expr) -> syn::Result<u32> {
    let expected = format!("an integer literal of at least {MIN_COUNT}");
    let int = integer(key, value, &expected)?;
    match int.base10_parse::<u32>() {
        Ok(n) if count_ok(u64::from(n)) => Ok(n),
        Ok(n) => Err(syn::Error::new_spanned(
            int,
            format!("expected {expected} for `{key}`, got {n}"),
        )),
        Err(_) => Err(syn::Error::new(
            int.span(),
            format!("expected {expected} for `{key}` that fits in a u32"),
        )),
    }
}

/// A `true` or `false` literal.
pub(super) fn boolean(key: &Ident, value: &Expr) -> syn::Result<bool> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(flag),
            ..
        }) => Ok(flag.value),
        other => Err(syn::Error::new_spanned(
            other,
            format!("expected `true` or `false` for `{key}`"),
        )),
    }
}

/// One of `choices`, a string literal.
pub(super) fn choice(key: &Ident, value: &Expr, choices: &[&str]) -> syn::Result<LitStr> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(kind),
            ..
        }) if choices.contains(&kind.value().as_str()) => Ok(kind.clone()),
        other => {
            let expected: Vec<String> = (choices.iter())
                .map(|choice| format!("`{key} = \"{choice}\"`"))
                .collect();
            Err(syn::Error::new_spanned(
                other,
                format!("expected {}", expected.join(" or ")),
            ))
        }
    }
}

/// A percentage from 1 to 100.
pub(super) fn percentage(key: &Ident, value: &Expr) -> syn::Result<u8> {
    let (least, most) = (u64::from(MIN_PERCENT), u64::from(MAX_PERCENT));
    Ok(bounded(key, value, least, most, "percent")? as u8)
}

/// An integer literal from `minimum` to `maximum`, in `unit`.
pub(super) fn bounded(
    key: &Ident,
    value: &Expr,
    minimum: u64,
    maximum: u64,
    unit: &str,
) -> syn::Result<u64> {
    let expected = format!("an integer from {minimum} to {maximum} ({unit})");
    let int = integer(key, value, &expected)?;
    match int.base10_parse::<u64>() {
        Ok(n) if (minimum..=maximum).contains(&n) => Ok(n),
        Ok(n) => Err(syn::Error::new_spanned(
            int,
            format!("expected {expected} for `{key}`, got {n}"),
        )),
        Err(_) => Err(syn::Error::new(
            int.span(),
            format!("expected {expected} for `{key}`"),
        )),
    }
}

pub(super) fn whole_seconds(key: &Ident, value: &Expr, minimum: u64) -> syn::Result<u64> {
    let expected = format!("a whole number of seconds of at least {minimum}");
    let int = integer(key, value, &expected)?;
    match int.base10_parse::<u64>() {
        Ok(n) if n > MAX_DURATION_SECS => Err(syn::Error::new_spanned(
            int,
            format!("expected at most {MAX_DURATION_SECS} seconds (365 days) for `{key}`, got {n}"),
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
