//! The future of recording a call's outcome: done at once unless the outcome is a
//! transition to write.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The future of [`Permit::record`](super::Permit::record): done at once unless the outcome is a transition.
#[doc(hidden)]
#[must_use = "futures do nothing unless awaited"]
pub enum Recording<'a> {
    /// Recorded inline.
    Done,
    /// A trip or a probe outcome being written.
    Writing(Pin<Box<dyn Future<Output = ()> + Send + 'a>>),
}

impl fmt::Debug for Recording<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Done => "Recording::Done",
            Self::Writing(_) => "Recording::Writing",
        })
    }
}

impl Future for Recording<'_> {
    type Output = ();

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.get_mut() {
            Self::Done => Poll::Ready(()),
            Self::Writing(writing) => writing.as_mut().poll(cx),
        }
    }
}
