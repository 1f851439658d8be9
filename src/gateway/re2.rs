//! Syntax checks for user-written regular expressions before they reach Envoy, which would reject the
//! whole route configuration over one bad pattern. Rust's `regex` crate accepts RE2's syntax (it was
//! designed after it), so what it refuses Envoy's RE2 would refuse too.

/// Why `re` is not a valid regular expression, on one line (for a status message), if it is not.
pub fn problem(re: &str) -> Option<String> {
    let e = regex::Regex::new(re).err()?.to_string();
    // The crate's message draws a caret under the pattern over several lines; its last line says why.
    let why = e
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    let why = why.strip_prefix("error: ").unwrap_or(why);
    Some(format!("regular expression {re:?} is not valid RE2 syntax: {why}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_line_reasons() {
        assert_eq!(
            super::problem("(unclosed").as_deref(),
            Some(r#"regular expression "(unclosed" is not valid RE2 syntax: unclosed group"#)
        );
        assert_eq!(super::problem("/v[0-9]+/.*"), None);
    }
}
