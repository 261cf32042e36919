//! Parsing: the attribute's tokens into a list of `key = value` pairs, nothing more. What
//! the keys mean and whether the values are valid is `validate`'s job.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{Expr, Ident, Token};

/// One `key = value` of `#[circuit_breaker(...)]`.
pub(crate) struct KeyValue {
    /// The key as written (`crate` included, as an identifier).
    pub(crate) key: Ident,
    /// The value, parsed as an expression: literals, paths and store/config expressions alike.
    pub(crate) value: Expr,
}

/// Every `key = value` of the attribute, in order, duplicates included.
pub(crate) struct AttributeArgs {
    pub(crate) pairs: Vec<KeyValue>,
}

impl Parse for AttributeArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut pairs = Vec::new();
        while !input.is_empty() {
            pairs.push(input.parse()?);
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(Self { pairs })
    }
}

impl Parse for KeyValue {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        // `parse_any` also accepts `crate`, the key of the path override.
        let key = if input.peek(Ident::peek_any) {
            input.call(Ident::parse_any)?
        } else {
            return Err(input.error("expected `key = value`, e.g. `name = \"payment-backend\"`"));
        };
        if !input.peek(Token![=]) {
            return Err(syn::Error::new_spanned(
                &key,
                format!("expected `=` and a value after `{key}`"),
            ));
        }
        input.parse::<Token![=]>()?;
        if input.is_empty() || input.peek(Token![,]) {
            return Err(syn::Error::new(
                input.span(),
                format!("expected a value for `{key}`"),
            ));
        }
        let value = input.parse()?;
        Ok(Self { key, value })
    }
}

/// The span to blame for something missing from the attribute as a whole.
pub(crate) fn attribute_span() -> Span {
    Span::call_site()
}
