//! A tracing subscriber for unit tests that check what the crate logs: it keeps every
//! event's level and fields, as text.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata, Subscriber, span};

/// Every event seen, with its level and its fields as `name=value` text; clones share them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Logs(Arc<Mutex<Vec<(Level, String)>>>);

impl Logs {
    /// The fields of the events seen at `level`, oldest first.
    pub(crate) fn at(&self, level: Level) -> Vec<String> {
        let logs = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        logs.iter()
            .filter(|(seen, _)| *seen == level)
            .map(|(_, text)| text.clone())
            .collect()
    }
}

/// An event's fields, as text.
struct Text(String);

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, "{}={:?} ", field.name(), value);
    }
}

impl Subscriber for Logs {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }
    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut text = Text(String::new());
        event.record(&mut text);
        let level = *event.metadata().level();
        let mut logs = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        logs.push((level, text.0));
    }
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
}
