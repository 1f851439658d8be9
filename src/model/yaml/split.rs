//! A YAML stream cut into its documents, counted the way a reader counts them: every `---` starts a
//! document (an empty one too), a `...` ends one, and text before the first `---` is a document only if
//! it holds more than comments and directives.
//!
//! Cutting at lines is exact: YAML forbids a line that starts with `---` or `...` followed by a space
//! or the end of the line anywhere inside a document's content (`c-forbidden`), so such a line is
//! always a marker. Each document knows the line it starts on ([`Doc::padded`] puts it back in place),
//! so parse errors point into the file, not into the document.
//!
//! Documents are cut without that padding: a file of N documents padded each one with every line
//! before it, which made parsing one large file quadratic in its length (a 4,000-object manifest
//! took 2.6× as long per document as the same objects split over 24 files). The reader parses the
//! bare text, and pays for the padding only to report an error.

/// The documents of `text`, each with the line it starts on.
pub(super) fn documents(text: &str) -> Vec<Doc> {
    let mut out = Vec::new();
    let mut current = Doc::implicit(0);
    for (n, line) in text.split_inclusive('\n').enumerate() {
        if let Some(rest) = marker(line, "---") {
            std::mem::replace(&mut current, Doc::explicit(n, rest)).close(&mut out);
        } else if marker(line, "...").is_some() {
            std::mem::replace(&mut current, Doc::implicit(n + 1)).close(&mut out);
        } else {
            current.push(line);
        }
    }
    current.close(&mut out);
    out
}

/// A marker line's remainder (what follows `---` on it), if `line` is that marker.
fn marker<'a>(line: &'a str, mark: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(mark)?;
    (rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n'])).then_some(rest)
}

/// One document's text, and how many lines of the file come before it.
pub(super) struct Doc {
    /// Lines of the file before the document's first line.
    pub pad: usize,
    /// The document, from its first line (a `---` marker line keeps what follows the marker, with
    /// spaces in place of the marker so columns stay right).
    pub text: String,
    /// Started by `---`: a document even when empty.
    explicit: bool,
    /// Holds something besides blank lines, comments and directives.
    content: bool,
}

impl Doc {
    fn implicit(line: usize) -> Doc {
        Doc {
            pad: line,
            text: String::new(),
            explicit: false,
            content: false,
        }
    }

    fn explicit(line: usize, rest: &str) -> Doc {
        let mut d = Doc {
            pad: line,
            text: String::new(),
            explicit: true,
            content: false,
        };
        // What follows the marker on its line (`--- |`, `--- {a: 1}`) is the document's first line;
        // spaces keep its columns.
        d.push(&format!("   {rest}"));
        d
    }

    fn push(&mut self, line: &str) {
        let t = line.trim_start();
        if !(t.is_empty() || t.starts_with('#') || (!self.explicit && line.starts_with('%'))) {
            self.content = true;
        }
        if !self.explicit && line.starts_with('%') {
            // A directive (`%YAML 1.2`) belongs to the stream, not to a document's content.
            self.text.push('\n');
            return;
        }
        self.text.push_str(line);
        if !line.ends_with('\n') {
            self.text.push('\n');
        }
    }

    fn close(self, out: &mut Vec<Doc>) {
        if self.explicit || self.content {
            out.push(self);
        }
    }

    /// The text preceded by as many empty lines as the file has before it: parsed, it gives the
    /// file's own line numbers.
    pub fn padded(&self) -> String {
        let mut text = "\n".repeat(self.pad);
        text.push_str(&self.text);
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(text: &str) -> usize {
        documents(text).len()
    }

    #[test]
    fn counts_documents_as_a_reader_does() {
        assert_eq!(count(""), 0);
        assert_eq!(count("# just a comment\n"), 0);
        assert_eq!(count("a: 1\n"), 1);
        assert_eq!(count("# header\n---\na: 1\n"), 1);
        assert_eq!(count("a: 1\n---\nb: 2\n"), 2);
        assert_eq!(
            count("a: 1\n---\n---\nb: 2\n"),
            3,
            "an empty document between markers counts"
        );
        assert_eq!(
            count("---\na: 1\n---\n"),
            2,
            "a trailing marker starts an empty document"
        );
        assert_eq!(count("a: 1\n...\nb: 2\n"), 2);
        assert_eq!(count("a: 1\n...\n---\nb: 2\n"), 2);
        assert_eq!(count("%YAML 1.2\n---\na: 1\n"), 1);
        // Not markers: indented, or followed by more than whitespace.
        assert_eq!(count("a: |\n  ---\n  x\nb: ----\n"), 1);
    }

    #[test]
    fn keeps_line_numbers_and_marker_line_content() {
        let docs = documents("a: 1\n--- |\n  text\n");
        assert_eq!((docs[1].pad, docs[1].text.as_str()), (1, "    |\n  text\n"));
        assert_eq!(docs[1].padded(), "\n    |\n  text\n");
        let docs = documents("a: 1\n...\n\nb: 2\n");
        assert_eq!((docs[1].pad, docs[1].text.as_str()), (2, "\nb: 2\n"));
    }
}
