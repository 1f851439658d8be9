//! CORS (`HTTPCORSFilter`): the `envoy.filters.http.cors` filter in the connection manager, with an empty
//! listener-wide config, and each route's policy in its per-route config, so routes without one are
//! untouched.

use super::super::pb::{cors_filter, ext, hcm, matcher, protobuf};
use crate::ir;

pub(in crate::envoy) fn http_filter() -> hcm::HttpFilter {
    super::http_filter(ext::CORS_FILTER, cors_filter::Cors::default())
}

/// The per-route CORS policy. Envoy answers `Access-Control-Allow-Origin` with the request's own origin
/// whenever it matches, never `*`, which is what Gateway API requires of a credentialed request and
/// allows otherwise; `*` as the methods or headers list makes Envoy echo what the preflight asked for.
/// Origins: `*` → any, an exact origin → exact, a host starting with `*` → an RE2 regex where `*` is
/// any run of characters (Gateway API: greedy to the left, across labels).
pub(in crate::envoy) fn per_route(c: &ir::Cors) -> (String, protobuf::Any) {
    use matcher::string_matcher::MatchPattern;
    let origin = |o: &String| {
        let pattern = if o == "*" {
            MatchPattern::SafeRegex(regex(".*"))
        } else if let Some((scheme, host)) = o.split_once("://")
            && let Some(rest) = host.strip_prefix('*')
        {
            MatchPattern::SafeRegex(regex(&format!(
                "{}://.*{}",
                ::regex::escape(scheme),
                ::regex::escape(rest)
            )))
        } else {
            MatchPattern::Exact(o.clone())
        };
        matcher::StringMatcher {
            match_pattern: Some(pattern),
            ..Default::default()
        }
    };
    let policy = cors_filter::CorsPolicy {
        allow_origin_string_match: c.allow_origins.iter().map(origin).collect(),
        allow_methods: c.allow_methods.join(","),
        allow_headers: c.allow_headers.join(","),
        expose_headers: c.expose_headers.join(","),
        max_age: c.max_age_seconds.to_string(),
        allow_credentials: c.allow_credentials.then_some(protobuf::BoolValue { value: true }),
        ..Default::default()
    };
    (ext::CORS_FILTER.to_string(), envoy_types::util::pack_any(policy))
}

fn regex(re: &str) -> matcher::RegexMatcher {
    matcher::RegexMatcher {
        regex: re.to_string(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcard_origins_are_regexes() {
        let c = ir::Cors {
            allow_origins: vec!["https://*.bar.com".into(), "*".into(), "https://www.foo.com".into()],
            ..Default::default()
        };
        let (_, any) = per_route(&c);
        let p: cors_filter::CorsPolicy = prost::Message::decode(any.value.as_slice()).unwrap();
        let patterns: Vec<String> = p
            .allow_origin_string_match
            .iter()
            .map(|m| format!("{:?}", m.match_pattern.as_ref().unwrap()))
            .collect();
        assert!(patterns[0].contains(r#"https://.*\\.bar\\.com"#), "{patterns:?}");
        assert!(patterns[1].contains(r#"".*""#), "{patterns:?}");
        assert!(patterns[2].starts_with("Exact"), "{patterns:?}");
    }
}
