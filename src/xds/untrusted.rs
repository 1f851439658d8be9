//! Strings a client controls (node ids, `node.cluster`, a NACK's `error_detail`, resource names), made
//! safe to log and to show: control characters escaped — a newline in a NACK message must not forge a
//! log line — and the length bounded, saying how much was cut.

use std::fmt::Write;

/// The most characters of one client string kept in logs and `/debug/clients`.
pub const MAX_CHARS: usize = 512;

/// `s` with every control character (and the escape character itself) escaped, cut to `max` characters.
pub fn text(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max) + 16);
    for (kept, (i, c)) in s.char_indices().enumerate() {
        if kept == max {
            let _ = write!(out, "…(+{} bytes)", s.len() - i);
            break;
        }
        if c.is_control()
            || c == '\\'
            || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}')
        {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// [`text`] at the default bound.
pub fn short(s: &str) -> String {
    text(s, MAX_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_length_is_bounded() {
        assert_eq!(short("plain id-1/gw"), "plain id-1/gw");
        assert_eq!(
            short("bad\n2026-11-24T00:00:00Z INFO forged line"),
            r"bad\n2026-11-24T00:00:00Z INFO forged line"
        );
        assert_eq!(short("a\r\tb\u{1b}[31m"), r"a\r\tb\u{1b}[31m");
        assert_eq!(short("back\\slash"), r"back\\slash");
        assert_eq!(short("rtl\u{202e}txt"), r"rtl\u{202e}txt");
        assert_eq!(text("abcdef", 3), "abc…(+3 bytes)");
        assert_eq!(text("ééé", 1), "é…(+4 bytes)");
        assert_eq!(
            short(&"x".repeat(15 << 20)).len(),
            MAX_CHARS + "…(+15728128 bytes)".len()
        );
    }
}
