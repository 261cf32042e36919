//! The `tracing` span of one async guarded call: a real span with the feature
//! `call-spans`, nothing without it (so the closed path is what it was).

#[cfg(feature = "call-spans")]
pub(crate) use traced::CallSpan;
#[cfg(not(feature = "call-spans"))]
pub(crate) use untraced::CallSpan;

/// The `tracing` span of one async guarded call (feature `call-spans`, config `trace_calls`).
#[cfg(feature = "call-spans")]
mod traced {
    use crate::config::CircuitBreakerConfig;

    /// The span of one guarded call, opened at its first poll if its circuit traces calls.
    #[derive(Debug, Default)]
    pub(crate) struct CallSpan(Option<tracing::Span>);

    impl CallSpan {
        /// Enters the call's span (opened now if this is the first poll) for one poll.
        #[inline]
        pub(crate) fn enter(
            &mut self,
            config: &CircuitBreakerConfig,
            name: &str,
        ) -> Option<tracing::span::Entered<'_>> {
            match config.trace_calls {
                true => Some(self.open(name).enter()),
                false => None,
            }
        }

        #[cold]
        fn open(&mut self, name: &str) -> &tracing::Span {
            self.0.get_or_insert_with(|| {
                tracing::info_span!("circuitbreaker.call", "circuitbreaker.name" = name)
            })
        }
    }
}

/// Nothing: the feature `call-spans` is off.
#[cfg(not(feature = "call-spans"))]
mod untraced {
    use crate::config::CircuitBreakerConfig;

    /// Nothing: the feature `call-spans` is off.
    #[derive(Debug, Default)]
    pub(crate) struct CallSpan(());

    /// Nothing entered.
    pub(crate) struct NoSpan;

    impl CallSpan {
        #[inline(always)]
        pub(crate) fn enter(&mut self, _config: &CircuitBreakerConfig, _name: &str) -> NoSpan {
            NoSpan
        }
    }
}
