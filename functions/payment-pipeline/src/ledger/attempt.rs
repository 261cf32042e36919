//! One attempt at charging an order, and how it ended.

/// One attempt at charging an order: what the conditional writes after the call check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The order.
    pub order_id: String,
    /// This attempt's id.
    pub attempt_id: String,
    /// When its claim's lease runs out (Unix seconds): the attempt must be settled by then,
    /// or a later copy takes it for a dead one and parks the order as `unknown`.
    pub lease_until: u64,
}

/// How an attempt ended, as the ledger records it: what became of the order, not whether
/// the call counts against the circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settlement {
    /// The payment API charged the order.
    Charged,
    /// The payment API declined it: final.
    Declined,
    /// Not charged, and known not to be: the item is deleted so a later copy may charge.
    NotCharged,
    /// Maybe charged: parked as `unknown`, with an alarm.
    Unknown,
}
