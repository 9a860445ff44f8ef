//! Outside text — a name a user or a server gave, a server's own words —
//! as a message shows it: whole when it is short, else cut, so that a
//! megabyte someone sent never fills an error message.

use std::borrow::Cow;

/// Most characters of an outside name an error message shows.
pub const SHOWN_NAME_CHARS: usize = 64;

/// `text` whole when it has at most `max_chars` characters; else its first
/// `max_chars` characters, `…` and its whole length in bytes
/// (`aaaa… (100000 bytes)`). The one rule for showing outside text cut;
/// escaping what must not reach a terminal is the front end's.
pub fn cut(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => Cow::Borrowed(text),
        Some((end, _)) => Cow::Owned(format!("{}… ({} bytes)", &text[..end], text.len())),
    }
}

/// An outside name as an error message shows it: [`cut`] to
/// [`SHOWN_NAME_CHARS`].
pub fn shown_name(name: &str) -> Cow<'_, str> {
    cut(name, SHOWN_NAME_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_whole_and_long_text_is_cut_on_a_character() {
        assert_eq!(cut("abc", 3), "abc");
        assert!(matches!(cut("abc", 3), Cow::Borrowed(_)));
        assert_eq!(cut("abcd", 3), "abc… (4 bytes)");
        assert_eq!(cut("ééé", 2), "éé… (6 bytes)");
        assert_eq!(cut("", 0), "");
        let long = "x".repeat(100_000);
        let shown = shown_name(&long);
        assert_eq!(shown, format!("{}… (100000 bytes)", "x".repeat(64)));
    }
}
