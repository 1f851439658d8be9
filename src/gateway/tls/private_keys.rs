//! PEM private-key blocks found anywhere in a text, whatever their label (`PRIVATE KEY`, `RSA PRIVATE
//! KEY`, `EC PRIVATE KEY`, `ENCRYPTED PRIVATE KEY`, `OPENSSH PRIVATE KEY`, ...) and whatever surrounds
//! them. Certificate fields are refused when they hold one, and the admin API redacts every one it
//! would show: a key pasted into `tls.crt` or a CA bundle must not travel as if it were public.
//!
//! Found by their markers, not by parsing: a block with broken base64, cut short, or quoted inside an
//! error message is as secret as a well-formed one. Markers are matched without regard to case.

use std::borrow::Cow;
use std::ops::Range;

const BEGIN: &str = "-----BEGIN ";
const END: &str = "-----END ";
const DASHES: &str = "-----";
/// Longer labels are not PEM labels (the longest standard one is ~30 characters).
const MAX_LABEL: usize = 64;

/// What replaces a block.
pub const REDACTED: &str = "[redacted private key]";

/// The byte ranges of the private-key blocks in `text`, in order: from the `-----BEGIN ...PRIVATE
/// KEY-----` marker through its `-----END ...PRIVATE KEY-----` marker, or to the end of the text when
/// no end marker follows.
pub fn blocks(text: &str) -> Vec<Range<usize>> {
    if !text.contains(DASHES) {
        return Vec::new();
    }
    // ASCII upper-casing keeps every byte where it was, so positions carry over to `text`.
    let upper = text.to_ascii_uppercase();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some((start, after)) = marker(&upper, BEGIN, from) {
        if after == usize::MAX {
            from = start + BEGIN.len();
            continue;
        }
        let mut end = upper.len();
        let mut search = after;
        while let Some((at, after_end)) = marker(&upper, END, search) {
            if after_end != usize::MAX {
                end = after_end;
                break;
            }
            search = at + END.len();
        }
        out.push(start..end);
        from = end;
    }
    out
}

/// The label of the first private-key block in `text`, upper-cased (`RSA PRIVATE KEY`), if there is one.
pub fn first_label(text: &str) -> Option<String> {
    let block = blocks(text).into_iter().next()?;
    let rest = &text[block.start + BEGIN.len()..];
    rest.find(DASHES).map(|n| rest[..n].trim().to_ascii_uppercase())
}

/// `text` with every private-key block replaced by [`REDACTED`].
pub fn redact(text: &str) -> Cow<'_, str> {
    let found = blocks(text);
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut kept = 0;
    for b in found {
        out.push_str(&text[kept..b.start]);
        out.push_str(REDACTED);
        kept = b.end;
    }
    out.push_str(&text[kept..]);
    Cow::Owned(out)
}

/// The next `mark` (`BEGIN`/`END` with its dashes) at or after `from` in the upper-cased text: where it
/// starts, and where its closing dashes end if its label names a private key (else `usize::MAX`).
fn marker(upper: &str, mark: &str, from: usize) -> Option<(usize, usize)> {
    let start = from + upper.get(from..)?.find(mark)?;
    let label_start = start + mark.len();
    let rest = &upper[label_start..];
    let private = rest
        .find(DASHES)
        .filter(|&n| n <= MAX_LABEL)
        .map(|n| (n, &rest[..n]))
        .filter(|(_, label)| !label.contains('\n') && label.trim_end().ends_with("PRIVATE KEY"));
    Some(match private {
        Some((n, _)) => (start, label_start + n + DASHES.len()),
        None => (start, usize::MAX),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = "MIIBVAIBADANBgkqhkiG9w0BAQEFAASCAT4wggE6AgEAAkEA\n";

    fn block(label: &str) -> String {
        format!("-----BEGIN {label}-----\n{BODY}-----END {label}-----")
    }

    #[test]
    fn every_private_key_label_is_found_and_redacted_anywhere() {
        for label in [
            "PRIVATE KEY",
            "RSA PRIVATE KEY",
            "EC PRIVATE KEY",
            "DSA PRIVATE KEY",
            "ENCRYPTED PRIVATE KEY",
            "OPENSSH PRIVATE KEY",
        ] {
            let cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
            let text = format!("{cert}{}\ntrailer", block(label));
            assert_eq!(first_label(&text).as_deref(), Some(label));
            let redacted = redact(&text);
            assert_eq!(redacted, format!("{cert}{REDACTED}\ntrailer"), "{label}");
            assert!(!redacted.contains("MIIBVAIBA"));
        }
    }

    #[test]
    fn lower_case_quoted_and_unterminated_blocks_are_redacted_too() {
        // Inside an error message, newlines escaped.
        let quoted = format!("invalid value: {:?}, expected", block("rsa private key"));
        assert_eq!(redact(&quoted), format!("invalid value: \"{REDACTED}\", expected"));
        // Cut short: everything after the marker goes.
        let cut = format!("key: -----BEGIN PRIVATE KEY-----\n{BODY}");
        assert_eq!(redact(&cut), format!("key: {REDACTED}"));
        // Two blocks, text between them kept.
        let two = format!("{} and {}", block("EC PRIVATE KEY"), block("PRIVATE KEY"));
        assert_eq!(redact(&two), format!("{REDACTED} and {REDACTED}"));
    }

    #[test]
    fn certificates_and_public_keys_are_left_alone() {
        for text in [
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
            "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----\n",
            "-----BEGIN x\nPRIVATE KEY-----",
            "no markers at all",
            "-----",
        ] {
            assert!(blocks(text).is_empty(), "{text}");
            assert!(matches!(redact(text), Cow::Borrowed(_)));
        }
    }
}
