//! The `#[circuit_breaker]` attribute. Use it through `breaker_runtime::circuit_breaker`,
//! which documents every key.
//!
//! Three steps, one module each: `parse` reads `key = value` pairs, `validate` checks
//! them against the attribute's documented rules, `expand` wraps the fn body. On any error the
//! original item is emitted unchanged next to the error, so the rest of the crate (and the
//! IDE) keeps working.
//!
//! What it expands to: `tests/expand/` holds the exact output for each form (async, sync,
//! `config`, inline tunables, `on_circuit_open`, keyed), checked by `expand::snapshots`;
//! the attribute's docs sketch it under "What the expansion looks like"
//! (`breaker-runtime/src/attribute_docs.md`), checked against those files.
#![forbid(unsafe_code)]

mod expand;
mod parse;
mod shape;
mod validate;

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::ToTokens;

use crate::expand::Expansion;
use crate::parse::AttributeArgs;
use crate::shape::{Shape, callback_arguments};
use crate::validate::Options;

// Documented on its re-export, `breaker_runtime::circuit_breaker`.
#[proc_macro_attribute]
pub fn circuit_breaker(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = TokenStream2::from(item);
    match guard(args.into(), item.clone()) {
        Ok(expanded) => expanded.into(),
        Err(error) => {
            let mut output = item;
            output.extend(error.into_compile_error());
            output.into()
        }
    }
}

fn guard(args: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
    let options = Options::from_args(syn::parse2::<AttributeArgs>(args)?)?;
    let item = parse_fn(item)?;
    validate::guardable(&item.sig)?;
    let callback_args = match &options.on_circuit_open {
        Some(_) => callback_arguments(&item.sig)?,
        None => Vec::new(),
    };
    let shape = Shape::of(&item.sig, &item.block);
    let expansion = Expansion {
        options: &options,
        shape,
        callback_args,
    };
    Ok(expansion.expand(item))
}

/// The item as a fn with a body, or an error at the item's keyword.
fn parse_fn(item: TokenStream2) -> syn::Result<syn::ItemFn> {
    if let Ok(item_fn) = syn::parse2::<syn::ItemFn>(item.clone()) {
        return Ok(item_fn);
    }
    let message = "expected a fn with a body: `#[circuit_breaker]` guards functions and methods";
    match syn::parse2::<syn::Item>(item.clone()) {
        Ok(item) => Err(syn::Error::new_spanned(item_keyword(&item), message)),
        // A trait method without a body, or something else that is not an item.
        Err(_) => match syn::parse2::<syn::TraitItemFn>(item.clone()) {
            Ok(method) => Err(syn::Error::new_spanned(method.sig, message)),
            Err(_) => Err(syn::Error::new_spanned(item, message)),
        },
    }
}

/// The tokens naming what kind of item this is (`struct Foo`, `mod m`...), to point at.
fn item_keyword(item: &syn::Item) -> TokenStream2 {
    use quote::quote;
    match item {
        syn::Item::Struct(s) => {
            let (kw, ident) = (&s.struct_token, &s.ident);
            quote!(#kw #ident)
        }
        syn::Item::Enum(e) => {
            let (kw, ident) = (&e.enum_token, &e.ident);
            quote!(#kw #ident)
        }
        syn::Item::Const(c) => {
            let (kw, ident) = (&c.const_token, &c.ident);
            quote!(#kw #ident)
        }
        syn::Item::Static(s) => {
            let (kw, ident) = (&s.static_token, &s.ident);
            quote!(#kw #ident)
        }
        syn::Item::Mod(m) => {
            let (kw, ident) = (&m.mod_token, &m.ident);
            quote!(#kw #ident)
        }
        syn::Item::Trait(t) => {
            let (kw, ident) = (&t.trait_token, &t.ident);
            quote!(#kw #ident)
        }
        syn::Item::Type(t) => {
            let (kw, ident) = (&t.type_token, &t.ident);
            quote!(#kw #ident)
        }
        syn::Item::Impl(i) => {
            let (kw, ty) = (&i.impl_token, &i.self_ty);
            quote!(#kw #ty)
        }
        other => other.to_token_stream(),
    }
}
