//! What to believe after a write: the written record if it won, the one that beat it if
//! it lost, or the write applied locally when the store did not answer.

use super::{Admission, Local, Settled, Thresholds, admit};
use crate::protocol::record::CircuitRecord;
use crate::protocol::write::{RecordWrite, WriteOutcome};

/// What to believe after writing `transition` from `base`: the written record if it won,
/// the one that beat it if it lost. `None` (the store did not answer): an election is not
/// won (the store may still answer others); any other write is applied locally and the
/// environment carries on alone.
pub fn settle(
    base: &CircuitRecord,
    transition: &RecordWrite,
    reply: Option<WriteOutcome>,
    me: &str,
    now_millis: u64,
    thresholds: &Thresholds,
) -> Settled {
    match reply {
        Some(WriteOutcome::Won) => Settled {
            record: transition.applied_to(Some(base)),
            committed: true,
            won: true,
        },
        Some(WriteOutcome::Lost(current)) => {
            let record = current.unwrap_or_default();
            match transition {
                // Lost to a record naming this environment the owner: an election of ours
                // landed earlier but its reply never came back (a cancelled call, a timeout).
                RecordWrite::Elect { .. } => Settled {
                    committed: admit(&record, me, now_millis, thresholds, &Local::default())
                        == Admission::Probe,
                    record,
                    won: false,
                },
                // A trip or reopen lost to the very record it writes: its first attempt
                // landed and the SDK's retry met it. A reopen needs this environment's lease,
                // and a trip names its writer (`opened_by`), so no other environment's write
                // leaves that record (a busy fleet's trips in the same second with the same
                // count differ in it). The store returned the record: as fresh as a read.
                RecordWrite::Trip { .. } | RecordWrite::Reopen { .. }
                    if record == transition.applied_to(Some(base)) =>
                {
                    Settled {
                        record,
                        committed: true,
                        won: true,
                    }
                }
                _ => Settled {
                    record,
                    committed: false,
                    won: false,
                },
            }
        }
        None if matches!(transition, RecordWrite::Elect { .. }) => Settled {
            record: base.clone(),
            committed: false,
            won: false,
        },
        None => settle_alone(base, transition),
    }
}

/// A transition this environment applies on its own, without the store.
pub fn settle_alone(base: &CircuitRecord, transition: &RecordWrite) -> Settled {
    Settled {
        record: transition.applied_to(Some(base)),
        committed: true,
        won: false,
    }
}

/// The opening a committed transition gives this environment the first right to probe.
pub fn committed_opening(transition: &RecordWrite, settled: &Settled) -> Option<u64> {
    match transition {
        RecordWrite::Trip { .. } | RecordWrite::Reopen { .. } if settled.committed => {
            settled.record.opened_at
        }
        _ => None,
    }
}
