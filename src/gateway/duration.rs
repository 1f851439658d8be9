//! Gateway API durations (GEP-2257), the one parser for every duration pier reads: route timeouts and
//! retry backoff, and the draft Backend's outlier-detection extension.
//!
//! A duration is one to four `<1-5 digits><unit>` parts, units `h`, `m`, `s`, `ms` (`10s`, `500ms`,
//! `1h30m`): no sign, no fractions, no spaces, no other units — exactly what the Gateway API's CRD
//! validation (`^([0-9]{1,5}(h|m|s|ms)){1,4}$`) admits, so a file read in directory mode is held to the
//! same rule the API server would apply.

/// A GEP-2257 duration in milliseconds.
pub fn duration_ms(s: &str) -> Result<u64, String> {
    let bad = |why: &str| format!("duration {s:?} {why} (GEP-2257: e.g. 10s, 500ms, 1h30m)");
    if s.is_empty() {
        return Err(bad("is empty"));
    }
    let mut total: u64 = 0;
    let mut parts = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 5 {
            return Err(bad("needs 1 to 5 digits before each unit"));
        }
        let value: u64 = rest[..digits].parse().map_err(|_| bad("has a bad number"))?;
        rest = &rest[digits..];
        // `ms` before `m`: `5ms` is milliseconds, not minutes followed by garbage.
        let (unit_ms, len) = if rest.starts_with("ms") {
            (1, 2)
        } else if rest.starts_with('h') {
            (3_600_000, 1)
        } else if rest.starts_with('m') {
            (60_000, 1)
        } else if rest.starts_with('s') {
            (1_000, 1)
        } else {
            return Err(bad("has a unit other than h, m, s, ms"));
        };
        rest = &rest[len..];
        parts += 1;
        if parts > 4 {
            return Err(bad("has more than 4 parts"));
        }
        total += value * unit_ms;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        for (s, ms) in [
            ("0s", 0),
            ("10s", 10_000),
            ("500ms", 500),
            ("1h", 3_600_000),
            ("1h30m", 5_400_000),
            ("1m1s1ms", 61_001),
            ("99999ms", 99_999),
            ("1h1m1s1ms", 3_661_001),
        ] {
            assert_eq!(duration_ms(s), Ok(ms), "{s}");
        }
        for s in [
            "",
            "10",
            "s",
            "1.5s",
            "-1s",
            "1d",
            "100000s",
            "1h1m1s1ms1ms",
            " 1s",
            "1s ",
            "1S",
            "1us",
        ] {
            assert!(duration_ms(s).is_err(), "{s:?} should be refused");
        }
    }
}
