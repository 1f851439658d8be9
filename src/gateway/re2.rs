//! Checks for user-written regular expressions before they reach Envoy, which would reject the whole
//! route configuration over one bad pattern — every tenant's routes with it.
//!
//! - Syntax: Rust's `regex` crate accepts RE2's syntax (it was designed after it), so what it refuses
//!   Envoy's RE2 would refuse too; RE2 also caps repetition counts at 1000.
//! - Size: Envoy refuses a regex whose RE2 program is over 100 instructions (`re2.max_program_size.
//!   error_level`). [`program_size_at_least`] is a lower bound on that size, from the parsed pattern;
//!   a pattern whose lower bound is over the limit is refused. Being a lower bound it never refuses what
//!   Envoy accepts (`tests/it/re2_size.rs` holds it to Envoy's own figures); a pattern just over the
//!   limit can still pass it and be rejected by Envoy.
//!
//! The costs were measured with `envoy --mode validate` (1.40): a literal costs at least one instruction
//! per character;
//! a class at least one, and one per maximal range below 256 (RE2 merges an ASCII letter range with its
//! other case, so the fewer of the two counts; its `\w`, `\d`, `\s` are ASCII); `x{n,m}` costs n·c + (m−n)·(c+1); a capture adds 2; an alternation
//! at least its largest branch (RE2 factors common prefixes); a program at least 2 more.

use regex_syntax::hir::{Class, Hir, HirKind};

/// The limit Envoy enforces by default.
pub const MAX_PROGRAM_SIZE: usize = 100;
/// RE2's largest repetition count.
const MAX_REPEAT: u32 = 1000;

/// Why `re` would be refused by Envoy's RE2, on one line (for a status message), if it would be.
pub fn problem(re: &str) -> Option<String> {
    if let Err(e) = regex::Regex::new(re) {
        let e = e.to_string();
        // The crate's message draws a caret under the pattern over several lines; its last line says why.
        let why = e
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or_default();
        let why = why.strip_prefix("error: ").unwrap_or(why);
        return Some(format!("regular expression {re:?} is not valid RE2 syntax: {why}"));
    }
    if let Some(flag) = unsupported_flag(re) {
        return Some(format!(
            "regular expression {re:?} is not valid RE2 syntax: RE2 has no flag `{flag}` (it has i, m, s and U)"
        ));
    }
    let hir = parse(re)?;
    if max_repeat(&hir) > MAX_REPEAT {
        return Some(format!(
            "regular expression {re:?} repeats more than {MAX_REPEAT} times, RE2's limit"
        ));
    }
    let size = cost(&hir).saturating_add(2);
    (size > MAX_PROGRAM_SIZE).then(|| {
        format!(
            "regular expression {re:?} compiles to an RE2 program of at least {size} instructions; Envoy refuses \
             more than {MAX_PROGRAM_SIZE} (use fewer or smaller bounded repetitions: `+` instead of `{{1,200}}`)"
        )
    })
}

/// A flag Rust's parser takes and RE2 does not (`x`, `R`, `u`), in a `(?flags)` or `(?flags:…)` group
/// outside a class.
fn unsupported_flag(re: &str) -> Option<char> {
    let mut chars = re.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '[' if !in_class => {
                in_class = true;
                // A `]` first (after an optional `^`) is a member, not the end.
                chars.next_if_eq(&'^');
                chars.next_if_eq(&']');
            }
            ']' if in_class => in_class = false,
            '(' if !in_class && chars.next_if_eq(&'?').is_some() => {
                let flags: String = chars
                    .clone()
                    .take_while(|c| c.is_ascii_alphabetic() || *c == '-')
                    .collect();
                if let Some(bad) = flags.chars().find(|f| matches!(f, 'x' | 'R' | 'u')) {
                    return Some(bad);
                }
            }
            _ => {}
        }
    }
    None
}

/// A lower bound on the RE2 program size of `re` (`None` if it does not parse).
pub fn program_size_at_least(re: &str) -> Option<usize> {
    Some(cost(&parse(re)?).saturating_add(2))
}

/// The pattern as RE2 reads it: Perl classes (`\w`, `\d`, `\s`) are ASCII in RE2, so it is parsed with
/// Unicode off first; patterns that need Unicode (`\pL`) are parsed with it on.
fn parse(re: &str) -> Option<Hir> {
    let ascii = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(re)
        .ok();
    ascii.or_else(|| regex_syntax::ParserBuilder::new().build().parse(re).ok())
}

fn cost(h: &Hir) -> usize {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => 0,
        // One per character: RE2 shares the continuation bytes of repeated multi-byte characters.
        HirKind::Literal(l) => l.0.iter().filter(|b| *b & 0xc0 != 0x80).count(),
        HirKind::Class(Class::Unicode(c)) => {
            class_cost(c.ranges().iter().map(|r| (u32::from(r.start()), u32::from(r.end()))))
        }
        HirKind::Class(Class::Bytes(c)) => {
            class_cost(c.ranges().iter().map(|r| (u32::from(r.start()), u32::from(r.end()))))
        }
        HirKind::Repetition(r) => {
            let c = cost(&r.sub);
            let min = r.min as usize;
            match r.max {
                Some(max) => (min.saturating_mul(c)).saturating_add((max as usize - min).saturating_mul(c + 1)),
                None => min.max(1).saturating_mul(c),
            }
        }
        HirKind::Capture(cap) => cost(&cap.sub) + 2,
        HirKind::Concat(subs) => subs.iter().map(cost).fold(0, usize::saturating_add),
        HirKind::Alternation(subs) => alternation_cost(subs),
    }
}

/// RE2 spends no instruction on an alternation itself (`aaa|bbb` is 6), factors branches with a common
/// leading piece (`abc|abd` is `ab[cd]`) and merges branches of one character into a class. Branches
/// whose first literal bytes differ are never factored together, so each such group costs at least its
/// costliest branch; branches of one character cost at least one together, and any other branch (a
/// class, a group, an anchor first) at least the costliest of them.
fn alternation_cost(subs: &[Hir]) -> usize {
    let mut groups: std::collections::BTreeMap<u8, usize> = std::collections::BTreeMap::new();
    let (mut singles, mut other) = (false, 0);
    for sub in subs {
        let c = cost(sub);
        match sub.kind() {
            HirKind::Class(_) => singles = true,
            HirKind::Literal(l) if l.0.iter().filter(|b| *b & 0xc0 != 0x80).count() <= 1 => singles = true,
            _ => match first_literal_byte(sub) {
                Some(b) => {
                    let g = groups.entry(b).or_default();
                    *g = (*g).max(c);
                }
                None => other = other.max(c),
            },
        }
    }
    // A one-character branch may be factored into a longer branch's group (`a|abc` is `a(?:|bc)`).
    let singles = usize::from(singles && groups.is_empty());
    groups
        .values()
        .fold(0usize, |sum, c| sum.saturating_add(*c))
        .saturating_add(singles)
        .max(other)
}

fn first_literal_byte(h: &Hir) -> Option<u8> {
    match h.kind() {
        HirKind::Literal(l) => l.0.first().copied(),
        HirKind::Concat(subs) => subs.first().and_then(|s| match s.kind() {
            HirKind::Literal(l) => l.0.first().copied(),
            _ => None,
        }),
        _ => None,
    }
}

/// At least one instruction, and at least the number of maximal ranges below 256, with an ASCII letter
/// range and its other case counted once when that gives fewer.
fn class_cost(ranges: impl Iterator<Item = (u32, u32)>) -> usize {
    let mut ascii = [false; 256];
    for (lo, hi) in ranges {
        for c in lo..=hi.min(255) {
            ascii[c as usize] = true;
        }
    }
    let runs = |set: &[bool; 256]| (0..256).filter(|&i| set[i] && (i == 0 || !set[i - 1])).count();
    let mut folded = ascii;
    for upper in b'A'..=b'Z' {
        if ascii[usize::from(upper.to_ascii_lowercase())] {
            folded[usize::from(upper)] = false;
        }
    }
    runs(&ascii).min(runs(&folded)).max(1)
}

fn max_repeat(h: &Hir) -> u32 {
    match h.kind() {
        HirKind::Repetition(r) => r.min.max(r.max.unwrap_or(0)).max(max_repeat(&r.sub)),
        HirKind::Capture(c) => max_repeat(&c.sub),
        HirKind::Concat(subs) | HirKind::Alternation(subs) => subs.iter().map(max_repeat).max().unwrap_or(0),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_reasons() {
        assert_eq!(
            problem("(unclosed").as_deref(),
            Some(r#"regular expression "(unclosed" is not valid RE2 syntax: unclosed group"#)
        );
        assert_eq!(problem("/v[0-9]+/.*"), None);
        assert!(problem("a{1001}").unwrap().contains("1000"));
        assert!(
            problem("/a/[a-z0-9]{1,200}/x")
                .unwrap()
                .contains("at least 606 instructions")
        );
    }

    /// Envoy 1.40's figures (each measured after a `z{120}` prefix costing 124, so the difference is
    /// the construct's cost): the bound never exceeds them.
    #[test]
    fn costs_stay_at_or_under_envoys() {
        let measured = [
            ("a", 1),
            ("ab", 2),
            ("[a-z]", 1),
            ("[a-z0-9]", 2),
            ("[a-z0-9_-]", 4),
            ("[^a]", 2),
            (".", 2),
            ("(a|b)", 3),
            ("(?:a|b)", 1),
            ("a*", 1),
            ("a+", 2),
            ("a?", 2),
            ("a{2}", 2),
            ("a{1,3}", 5),
            ("a{2,}", 3),
            ("[a-z]{5}", 5),
            ("[a-z]{1,5}", 9),
            (r"\d", 1),
            (r"\w", 3),
            (r"\s", 3),
            ("é", 2),
            ("(?i)a", 1),
            ("[[:alpha:]]", 1),
            (".*", 2),
            (".+", 3),
            ("(a)", 3),
            (r"\S", 4),
            (r"\W", 5),
            (r"\D", 2),
            ("[^/]+", 3),
            (r"\pL", 7),
            ("[α-ω]", 2),
            ("[^/]{5}", 10),
            (".{5}", 10),
            ("(?:abc|abd)", 3),
            ("(?:foo|bar|baz)", 7),
            ("aaa|bbb", 6),
            ("(?:ab|cd|ef|gh)", 8),
            ("(ab|cd)", 6),
            ("(abc|abd)", 5),
            ("(a|b|c)", 3),
            ("(ab|c)", 5),
            ("(foo|bar|baz)", 9),
            ("(a|bc|def)", 8),
        ];
        for (re, envoy) in measured {
            let hir = parse(re).unwrap();
            assert!(cost(&hir) <= envoy, "{re}: bound {} over Envoy's {envoy}", cost(&hir));
        }
        assert_eq!(program_size_at_least("/a/[a-z0-9]{1,200}/x"), Some(606), "Envoy: 608");
    }
}
