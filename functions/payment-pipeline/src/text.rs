//! Bounding what the pipeline writes down: a ledger item's detail, a metric line, an error
//! quoting the payment API's answer.

/// `text` cut at a character boundary within `max` bytes, with `…` where it was cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
