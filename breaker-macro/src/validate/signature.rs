//! Which functions the attribute can guard.

use syn::spanned::Spanned;

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
