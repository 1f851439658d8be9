//! The `RequestMirror` filter: which backend gets a copy of the request, and how often.
//!
//! `percent` (0–100) or `fraction` (`numerator` / `denominator`, denominator default 100, numerator ≤
//! denominator), never both; neither means every request. The backendRef is resolved like any other
//! (`gateway::routes`), so Services, XBackends and Backends, ReferenceGrants and the guardrails all apply;
//! one that does not resolve makes the route's `ResolvedRefs` false and leaves just that mirror out: the
//! request itself is still served.

use crate::gateway::spec;
use crate::ir;

/// One mirror: the backend it copies requests to, and its share validated.
#[derive(Debug, Clone, PartialEq)]
pub struct MirrorSpec {
    pub backend: spec::Ref,
    /// `None`: every request.
    pub fraction: Option<ir::Fraction>,
}

pub fn parse(m: &spec::Mirror) -> Result<MirrorSpec, String> {
    let spec::Mirror {
        backend,
        percent,
        fraction,
    } = m;
    let fraction = match (percent, fraction) {
        (Some(_), Some(_)) => return Err("requestMirror: percent and fraction are mutually exclusive".into()),
        (Some(p), None) => Some(percent_share(*p)?),
        (None, Some((numerator, denominator))) => Some(fraction_share(*numerator, denominator.unwrap_or(100))?),
        (None, None) => None,
    };
    // All of the requests is the same as no fraction at all.
    let fraction = fraction.filter(|f| f.numerator != f.denominator);
    Ok(MirrorSpec {
        backend: backend.clone(),
        fraction,
    })
}

fn percent_share(p: i32) -> Result<ir::Fraction, String> {
    let p = u32::try_from(p)
        .ok()
        .filter(|p| *p <= 100)
        .ok_or_else(|| format!("requestMirror.percent {p} is not within 0-100"))?;
    Ok(ir::Fraction {
        numerator: p,
        denominator: 100,
    })
}

fn fraction_share(numerator: i32, denominator: i32) -> Result<ir::Fraction, String> {
    let (Ok(n), Ok(d)) = (u32::try_from(numerator), u32::try_from(denominator)) else {
        return Err(format!(
            "requestMirror.fraction {numerator}/{denominator} must not be negative"
        ));
    };
    if d == 0 || n > d {
        return Err(format!(
            "requestMirror.fraction {n}/{d} needs a denominator above 0 and a numerator no larger"
        ));
    }
    Ok(ir::Fraction {
        numerator: n,
        denominator: d,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(yaml: &str) -> Result<Option<(u32, u32)>, String> {
        let rule = format!("{{filters: [{{type: RequestMirror, requestMirror: {yaml}}}]}}");
        let rule = crate::gateway::spec::http::rule(&serde_saphyr::from_str(&rule).unwrap(), Default::default());
        let spec::Filter::RequestMirror(Some(m)) = &rule.filters[0] else {
            panic!("a mirror")
        };
        parse(m).map(|s| s.fraction.map(|f| (f.numerator, f.denominator)))
    }

    #[test]
    fn fractions() {
        let b = "backendRef: {name: v2, port: 8080}";
        assert_eq!(share(&format!("{{{b}}}")), Ok(None));
        assert_eq!(share(&format!("{{{b}, percent: 20}}")), Ok(Some((20, 100))));
        assert_eq!(share(&format!("{{{b}, percent: 100}}")), Ok(None));
        assert_eq!(share(&format!("{{{b}, percent: 0}}")), Ok(Some((0, 100))));
        assert_eq!(
            share(&format!("{{{b}, fraction: {{numerator: 25, denominator: 50}}}}")),
            Ok(Some((25, 50)))
        );
        assert_eq!(
            share(&format!("{{{b}, fraction: {{numerator: 7}}}}")),
            Ok(Some((7, 100)))
        );
        for bad in [
            "percent: 101",
            "percent: -1",
            "fraction: {numerator: 3, denominator: 2}",
            "fraction: {numerator: 1, denominator: 0}",
            "fraction: {numerator: -1}",
            "percent: 5, fraction: {numerator: 1}",
        ] {
            assert!(share(&format!("{{{b}, {bad}}}")).is_err(), "{bad}");
        }
    }
}
