//! Text from the table, made safe to print.

/// `text` as a terminal may print it: control characters (escape sequences among them,
/// which could rewrite the screen or hide a line) shown escaped. Names, owners, reasons and
/// malformed-item text all come from the table, written by anyone with access to it.
pub(crate) fn printable(text: &str) -> String {
    text.chars()
        .map(|c| match c.is_control() {
            true => c.escape_default().to_string(),
            false => c.to_string(),
        })
        .collect()
}
