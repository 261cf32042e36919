//! Expansion: the guarded fn with its signature untouched and its body wrapped in the
//! circuit. The generated code names only `<crate>::__private` (plus `core`/`std`), and
//! every name it introduces starts with `__breaker_`.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ItemFn, Type};

use crate::shape::{Kind, Shape};
use crate::validate::{Counts, Options};

#[cfg(test)]
mod snapshots;

/// Everything the expansion of one fn needs.
pub(crate) struct Expansion<'a> {
    pub(crate) options: &'a Options,
    pub(crate) shape: Shape,
    /// The arguments to pass to `on_circuit_open`, when it is set.
    pub(crate) callback_args: Vec<TokenStream>,
}

impl Expansion<'_> {
    pub(crate) fn expand(self, item: ItemFn) -> TokenStream {
        let ItemFn {
            attrs,
            vis,
            sig,
            block,
        } = item;
        let private = self.private();
        let output = self.shape.output.as_ref();
        let body = match &self.shape.kind {
            Kind::Sync => {
                let circuit = self.circuit();
                let admit = self.admit(false);
                let run = self.run_sync(quote!(#block));
                quote!({ #circuit #admit #run })
            }
            Kind::Async => {
                let circuit = self.circuit();
                let future = typed_future(&private, output, quote!(async move #block));
                let call = self.call_async(future);
                quote!({ #circuit #call })
            }
            Kind::ReturnsFuture { boxed, async_block } => {
                let circuit = self.circuit();
                let inner = match async_block {
                    Some(async_block) => quote!(#async_block),
                    None => quote!(#private::lazy_future(move || #block)),
                };
                let call = self.call_async(typed_future(&private, output, inner));
                let guarded = typed_future(&private, output, quote!(async move { #circuit #call }));
                if *boxed {
                    quote!({ ::std::boxed::Box::pin(#guarded) })
                } else {
                    quote!({ #guarded })
                }
            }
        };
        quote! {
            #(#attrs)*
            #vis #sig #body
        }
    }

    fn private(&self) -> TokenStream {
        let krate = &self.options.krate;
        quote!(#krate::__private)
    }

    /// The call site's circuit: created on first use, kept in a `static`; with `keyed_by`,
    /// the call site's keyed circuit in the `static`, and the key's circuit for this call.
    fn circuit(&self) -> TokenStream {
        let private = self.private();
        let name = &self.options.name;
        let store = match &self.options.store {
            Some(expr) => quote_spanned! {expr.span()=> {
                let __breaker_store = #expr;
                #[allow(unused_imports)]
                use #private::{StoreIsArc as _, StoreIsValue as _};
                (&__breaker_store).__breaker_store_kind().into_store(__breaker_store)
            }},
            None => quote!(#private::default_store()),
        };
        let config = self.config();
        let hook = match &self.options.on_transition {
            Some(path) => quote_spanned!(path.span()=> #private::transition_hook(#path)),
            None => quote!(::core::option::Option::None),
        };
        let Some(keyed) = &self.options.keyed else {
            return quote! {
                static __BREAKER_CIRCUIT: ::std::sync::OnceLock<#private::CircuitBreaker> =
                    ::std::sync::OnceLock::new();
                let __breaker_circuit = __BREAKER_CIRCUIT
                    .get_or_init(|| #private::shared_breaker(#name, #store, #config, #hook));
            };
        };
        // A keyed circuit: the call site's keyed circuit, then the key's circuit, which
        // the rest of the expansion guards the call with as it would a plain one.
        let cap = match keyed.max_open_keys {
            Some(cap) => quote!(::core::option::Option::Some(#cap)),
            None => quote!(::core::option::Option::None),
        };
        let key_expr = &keyed.key;
        let key = quote_spanned!(key_expr.span()=> #private::key_str(&(#key_expr)));
        quote! {
            static __BREAKER_KEYED: ::std::sync::OnceLock<#private::KeyedCircuitBreaker> =
                ::std::sync::OnceLock::new();
            let __breaker_keyed_circuit = __BREAKER_KEYED
                .get_or_init(|| {
                    #private::shared_keyed_breaker(#name, #store, #config, #hook, #cap)
                })
                .breaker(#key);
            let __breaker_circuit = &__breaker_keyed_circuit;
        }
    }

    /// The circuit's config: the default, `config = expr`, or either with the config keys
    /// as builder calls, one per key in the table's order.
    fn config(&self) -> TokenStream {
        let private = self.private();
        let base = self
            .options
            .config
            .as_ref()
            .map(|expr| quote_spanned!(expr.span()=> #private::config(#expr)));
        let settings = &self.options.settings;
        if settings.is_empty() {
            return base.unwrap_or_else(
                || quote!(<#private::CircuitBreakerConfig as ::core::default::Default>::default()),
            );
        }
        let start = match base {
            Some(config) => quote!(#private::InlineConfig::over(#config)),
            None => quote!(#private::inline_config()),
        };
        let calls = settings.iter().map(|setting| {
            let (key, value) = (&setting.key, &setting.value);
            quote!(.#key(#value))
        });
        quote!(#start #(#calls)* .build())
    }

    /// The async call of `future` under the circuit.
    fn call_async(&self, future: TokenStream) -> TokenStream {
        if self.options.on_circuit_open.is_some() {
            // The callback takes the fn's arguments, so they must outlive a rejection: admit
            // first, and only then move them into the body's future. A call abandoned at its
            // deadline may have reached the downstream and its arguments are gone with its
            // future: the return type's error answers it, not the callback.
            let admit = self.admit(true);
            let run = self.run_async(future);
            return quote!(#admit #run);
        }
        // Without a callback: one future admits and runs, with the closed path inline.
        let private = self.private();
        let outcome = self.outcome(true);
        // Every token at the return type, so a type that cannot carry the open error is
        // blamed there.
        let stopped = respan(
            quote!(return #private::stop(__breaker_stopped)),
            self.shape.output_span,
        );
        quote! {
            match #private::guarded_call(
                __breaker_circuit,
                move || #future,
                |__breaker_result| #outcome,
            ).await {
                ::core::result::Result::Ok(__breaker_output) => __breaker_output,
                ::core::result::Result::Err(__breaker_stopped) => #stopped,
            }
        }
    }

    /// Asks the circuit for a permit; a rejection returns the callback's value or the error.
    fn admit(&self, is_async: bool) -> TokenStream {
        let private = self.private();
        let acquire = if is_async {
            // The closed path is decided inline; only the rest awaits the slow path.
            quote!(match #private::fast_permit(__breaker_circuit) {
                ::core::option::Option::Some(__breaker_permit) => {
                    ::core::result::Result::Ok(__breaker_permit)
                }
                ::core::option::Option::None => #private::request_permit(__breaker_circuit).await,
            })
        } else {
            quote!(#private::request_permit_blocking(__breaker_circuit))
        };
        let rejected = self.rejected(is_async);
        quote! {
            let __breaker_permit = match #acquire {
                ::core::result::Result::Ok(__breaker_permit) => __breaker_permit,
                ::core::result::Result::Err(__breaker_info) => #rejected,
            };
        }
    }

    /// What a rejection returns, given `__breaker_info`: the callback's value (awaited when
    /// `resolve` and it is a future) or the open error.
    fn rejected(&self, resolve: bool) -> TokenStream {
        let private = self.private();
        match &self.options.on_circuit_open {
            Some(callback) => {
                let args = &self.callback_args;
                let call = quote_spanned!(callback.span()=> #callback(#(#args,)* __breaker_info));
                if resolve {
                    quote!({
                        let __breaker_fallback = #call;
                        #[allow(unused_imports)]
                        use #private::{FallbackIsFuture as _, FallbackIsValue as _};
                        return (&__breaker_fallback)
                            .__breaker_fallback_kind()
                            .resolve(__breaker_fallback)
                            .await;
                    })
                } else {
                    quote!(return #call)
                }
            }
            None => {
                // Every token at the return type, so a type that cannot carry the open
                // error is blamed there.
                let span = self.shape.output_span;
                respan(quote!(return #private::reject(__breaker_info)), span)
            }
        }
    }

    /// The outcome of `__breaker_result` as the circuit counts it; `by_ref` when
    /// `__breaker_result` is already a reference to the output.
    fn outcome(&self, by_ref: bool) -> TokenStream {
        let private = self.private();
        let result = if by_ref {
            quote!(__breaker_result)
        } else {
            quote!(&__breaker_result)
        };
        match &self.options.counts {
            Counts::Every => quote!({
                #[allow(unused_imports)]
                use #private::{ResultOutcome as _, OtherOutcome as _};
                (#result).__breaker_outcome()
            }),
            Counts::Handled(path) => {
                quote_spanned!(path.span()=> #private::classify(#result, #path))
            }
            Counts::Ignored(path) => quote_spanned!(path.span()=>
                #private::classify(#result, #private::not(#path))),
        }
    }

    fn run_sync(&self, block: TokenStream) -> TokenStream {
        let private = self.private();
        let outcome = self.outcome(false);
        let caught = match &self.shape.output {
            Some(output) => quote!(#private::catch_unwind_sync::<#output, _>(move || #block)),
            None => quote!(#private::catch_unwind_sync(move || #block)),
        };
        quote! {
            match #caught {
                ::core::result::Result::Ok(__breaker_result) => {
                    __breaker_permit.record_blocking(#outcome);
                    __breaker_result
                }
                ::core::result::Result::Err(__breaker_panic) => {
                    __breaker_permit.record_blocking(#private::Outcome::Failure);
                    ::std::panic::resume_unwind(__breaker_panic)
                }
            }
        }
    }

    fn run_async(&self, future: TokenStream) -> TokenStream {
        let private = self.private();
        let outcome = self.outcome(true);
        // Every token at the return type, so a type that cannot carry the abandonment is
        // blamed there.
        let abandoned = respan(
            quote!(return #private::abandon(__breaker_abandoned)),
            self.shape.output_span,
        );
        quote! {
            match #private::run_admitted(__breaker_permit, #future, |__breaker_result| #outcome)
                .await
            {
                ::core::result::Result::Ok(__breaker_output) => __breaker_output,
                ::core::result::Result::Err(__breaker_abandoned) => #abandoned,
            }
        }
    }
}

/// `future`, with its output type pinned when it can be written, so `?` in the body infers.
fn typed_future(private: &TokenStream, output: Option<&Type>, future: TokenStream) -> TokenStream {
    match output {
        Some(output) => quote!(#private::output_is::<#output, _>(#future)),
        None => future,
    }
}

/// `tokens` with every span set to `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tree| {
            if let TokenTree::Group(group) = &tree {
                let mut inner = Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                tree = TokenTree::Group(inner);
            } else {
                tree.set_span(span);
            }
            tree
        })
        .collect()
}
