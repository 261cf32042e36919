//! What kind of function is guarded: how its body runs (sync, async, returning a future),
//! the type its calls produce, and how to hand its arguments to `on_circuit_open`.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::spanned::Spanned;
use syn::{
    Expr, ExprAsync, FnArg, GenericArgument, Pat, PathArguments, ReturnType, Signature, Stmt, Type,
    TypeParamBound,
};

/// How the guarded body runs.
pub(crate) enum Kind {
    /// A plain fn: the body runs on the calling thread.
    Sync,
    /// An `async fn`.
    Async,
    /// A fn returning `impl Future<Output = X>` or `Pin<Box<dyn Future<Output = X>>>`: the
    /// guard runs inside the returned future.
    ReturnsFuture {
        /// The fn returns a boxed future (also what `#[async_trait]` produces).
        boxed: bool,
        /// The `async move` block of an `#[async_trait]` body (`Box::pin(async move {..})`),
        /// guarded in place so the future is boxed once.
        async_block: Option<ExprAsync>,
    },
}

/// The guarded fn as the expansion needs it.
pub(crate) struct Shape {
    pub(crate) kind: Kind,
    /// The type one call produces (the future's output for async kinds), when it can be
    /// written inside the body (no `impl Trait` in it). Guides inference of `?` in the body.
    pub(crate) output: Option<Type>,
    /// Where to blame a return type that cannot carry `CircuitBreakerOpenError`.
    pub(crate) output_span: Span,
}

impl Shape {
    pub(crate) fn of(sig: &Signature, block: &syn::Block) -> Self {
        let output_span = match &sig.output {
            ReturnType::Default => sig.ident.span(),
            ReturnType::Type(_, ty) => ty.span(),
        };
        let returned: Type = match &sig.output {
            ReturnType::Default => syn::parse_quote!(()),
            ReturnType::Type(_, ty) => (**ty).clone(),
        };
        let (kind, output) = if sig.asyncness.is_some() {
            (Kind::Async, Some(returned))
        } else if let Some(output) = impl_future_output(&returned) {
            let kind = Kind::ReturnsFuture {
                boxed: false,
                async_block: None,
            };
            (kind, output)
        } else if let Some(output) = boxed_future_output(&returned) {
            let kind = Kind::ReturnsFuture {
                boxed: true,
                async_block: boxed_async_block(block),
            };
            (kind, output)
        } else {
            (Kind::Sync, Some(returned))
        };
        Self {
            kind,
            output: output.filter(|ty| !mentions_impl(ty.to_token_stream())),
            output_span,
        }
    }
}

/// `X` of `impl Future<Output = X> + ..`; `Some(None)` when the output is not written.
fn impl_future_output(ty: &Type) -> Option<Option<Type>> {
    let Type::ImplTrait(imp) = ty else {
        return None;
    };
    future_output(imp.bounds.iter())
}

/// `X` of `Pin<Box<dyn Future<Output = X> + ..>>`.
fn boxed_future_output(ty: &Type) -> Option<Option<Type>> {
    let pinned = single_type_argument(ty, "Pin")?;
    let boxed = single_type_argument(pinned, "Box")?;
    let Type::TraitObject(object) = boxed else {
        return None;
    };
    future_output(object.bounds.iter())
}

fn single_type_argument<'a>(ty: &'a Type, wrapper: &str) -> Option<&'a Type> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != wrapper {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        GenericArgument::Type(inner) if args.args.len() == 1 => Some(inner),
        _ => None,
    }
}

fn future_output<'a>(mut bounds: impl Iterator<Item = &'a TypeParamBound>) -> Option<Option<Type>> {
    bounds.find_map(|bound| {
        let TypeParamBound::Trait(bound) = bound else {
            return None;
        };
        let last = bound.path.segments.last()?;
        if last.ident != "Future" {
            return None;
        }
        let output = match &last.arguments {
            PathArguments::AngleBracketed(args) => args.args.iter().find_map(|arg| match arg {
                GenericArgument::AssocType(assoc) if assoc.ident == "Output" => {
                    Some(assoc.ty.clone())
                }
                _ => None,
            }),
            _ => None,
        };
        Some(output)
    })
}

/// The `async move {..}` of a body that is exactly `Box::pin(async move {..})`.
fn boxed_async_block(block: &syn::Block) -> Option<ExprAsync> {
    let [Stmt::Expr(Expr::Call(call), None)] = block.stmts.as_slice() else {
        return None;
    };
    let Expr::Path(func) = &*call.func else {
        return None;
    };
    if func.path.segments.last()?.ident != "pin" || call.args.len() != 1 {
        return None;
    }
    match call.args.first()? {
        Expr::Async(block) if block.capture.is_some() => Some(block.clone()),
        _ => None,
    }
}

fn mentions_impl(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|tree| match tree {
        TokenTree::Ident(ident) => ident == "impl",
        TokenTree::Group(group) => mentions_impl(group.stream()),
        _ => false,
    })
}

/// The expressions that pass the guarded fn's arguments, by value and unchanged, to
/// `on_circuit_open`: `self`, names, and tuple/struct patterns rebuilt from their names.
pub(crate) fn callback_arguments(sig: &Signature) -> syn::Result<Vec<TokenStream>> {
    sig.inputs
        .iter()
        .map(|input| match input {
            FnArg::Receiver(receiver) => Ok(receiver.self_token.to_token_stream()),
            FnArg::Typed(typed) => rebuild(&typed.pat),
        })
        .collect()
}

fn rebuild(pat: &Pat) -> syn::Result<TokenStream> {
    match pat {
        Pat::Ident(ident) if ident.by_ref.is_none() && ident.subpat.is_none() => {
            Ok(ident.ident.to_token_stream())
        }
        Pat::Tuple(tuple) => {
            let elems = tuple
                .elems
                .iter()
                .map(rebuild)
                .collect::<syn::Result<Vec<_>>>()?;
            Ok(quote!((#(#elems,)*)))
        }
        Pat::TupleStruct(tuple) if tuple.qself.is_none() => {
            let path = &tuple.path;
            let elems = tuple
                .elems
                .iter()
                .map(rebuild)
                .collect::<syn::Result<Vec<_>>>()?;
            Ok(quote!(#path(#(#elems),*)))
        }
        Pat::Struct(strukt) if strukt.qself.is_none() && strukt.rest.is_none() => {
            let path = &strukt.path;
            let fields = strukt
                .fields
                .iter()
                .map(|field| {
                    let member = &field.member;
                    let value = rebuild(&field.pat)?;
                    Ok(quote!(#member: #value))
                })
                .collect::<syn::Result<Vec<_>>>()?;
            Ok(quote!(#path { #(#fields),* }))
        }
        Pat::Paren(paren) => rebuild(&paren.pat),
        other => Err(syn::Error::new_spanned(
            other,
            "expected a named argument (or a tuple/struct pattern of names): \
             `on_circuit_open` receives every argument unchanged, and this pattern \
             cannot be rebuilt into one",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(item: &str) -> Shape {
        let item: syn::ItemFn = syn::parse_str(item).unwrap();
        Shape::of(&item.sig, &item.block)
    }

    #[test]
    fn async_trait_bodies_are_guarded_inside_their_single_box() {
        let shape = shape(
            "fn charge<'life0, 'async_trait>(&'life0 self, cents: u64) -> ::core::pin::Pin<Box<dyn ::core::future::Future<Output = Result<u64, Error>> + ::core::marker::Send + 'async_trait>> where 'life0: 'async_trait { Box::pin(async move { let __self = self; Ok(cents) }) }",
        );
        assert!(matches!(
            shape.kind,
            Kind::ReturnsFuture {
                boxed: true,
                async_block: Some(_)
            }
        ));
        let output = shape.output.unwrap();
        assert_eq!(quote!(#output).to_string(), "Result < u64 , Error >");
    }

    #[test]
    fn impl_future_returns_are_guarded_when_polled() {
        let shape =
            shape("fn f() -> impl std::future::Future<Output = Result<(), E>> + Send { async {} }");
        assert!(matches!(
            shape.kind,
            Kind::ReturnsFuture {
                boxed: false,
                async_block: None
            }
        ));
        assert!(shape.output.is_some());
    }

    #[test]
    fn outputs_with_impl_trait_are_left_to_inference() {
        let shape = shape("fn f() -> Result<impl Display, E> { todo!() }");
        assert!(matches!(shape.kind, Kind::Sync));
        assert!(shape.output.is_none());
        let unit = self::shape("async fn f() {}");
        assert!(matches!(unit.kind, Kind::Async));
        let output = unit.output.unwrap();
        assert_eq!(quote!(#output).to_string(), "()");
    }

    #[test]
    fn patterns_are_rebuilt_and_unrebuildable_ones_rejected() {
        let sig: Signature =
            syn::parse_str("fn f(&self, (a, mut b): (u8, u8), P { x, y: Q(z) }: P, n: u8)")
                .unwrap();
        let args: Vec<String> = callback_arguments(&sig)
            .unwrap()
            .iter()
            .map(|a| a.to_string())
            .collect();
        assert_eq!(args, ["self", "(a , b ,)", "P { x : x , y : Q (z) }", "n"]);
        for bad in [
            "fn f(_: u8)",
            "fn f(&x: &u8)",
            "fn f(ref x: u8)",
            "fn f(P { x, .. }: P)",
        ] {
            let sig: Signature = syn::parse_str(bad).unwrap();
            assert!(callback_arguments(&sig).is_err(), "{bad}");
        }
    }
}
