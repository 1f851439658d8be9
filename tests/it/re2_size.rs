//! pier's lower bound on a regex's RE2 program size (`gateway::re2`), held to Envoy's own figures: for
//! patterns built from many constructs and repetitions, Envoy (`--mode validate`, a route matching the
//! regex) either accepts the pattern — and pier must not refuse it — or reports its program size — and
//! pier's bound must not exceed it. So the size check never refuses what Envoy accepts.

use pier::gateway::re2::{MAX_PROGRAM_SIZE, problem, program_size_at_least};
use serde_json::json;

fn bootstrap(re: &str) -> serde_json::Value {
    json!({"static_resources": {"listeners": [{"name": "l",
        "address": {"socket_address": {"address": "127.0.0.1", "port_value": 1}},
        "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
            "stat_prefix": "x",
            "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}],
            "route_config": {"virtual_hosts": [{"name": "v", "domains": ["*"], "routes": [
                {"match": {"safe_regex": {"regex": re}}, "direct_response": {"status": 200}}]}]}}}]}]}]}})
}

/// Envoy's program size for `re`: `None` when it accepts the pattern.
fn envoy_size(re: &str) -> Option<usize> {
    let err = pier::testkit::envoy::validate(&bootstrap(re)).err()?;
    let at = err.find("program size of ")? + "program size of ".len();
    let digits: String = err[at..].chars().take_while(char::is_ascii_digit).collect();
    Some(
        digits
            .parse()
            .unwrap_or_else(|_| panic!("{re}: unexpected Envoy error: {err}")),
    )
}

#[test]
fn the_size_bound_never_exceeds_envoys_own() {
    if pier::testkit::envoy::skipped() {
        return;
    }
    let atoms = [
        "a",
        "[a-z0-9]",
        ".",
        r"\w",
        "(x|yz)",
        "[^/]",
        "é",
        "(?i)k",
        r"\pL",
        r"\d",
        "(ab|cd|ef|gh)",
        "(?:foo|bar|baz)",
        "(a|bc|def)",
        "(?:abc|abd)",
        "(v1|v2|beta)",
    ];
    let counts = [
        "", "*", "+", "?", "{3}", "{2,9}", "{1,40}", "{12,}", "{30}", "{60}", "{1,80}",
    ];
    let mut checked = (0, 0);
    let mut caught = 0;
    let mut missed = Vec::new();
    for atom in atoms {
        for count in counts {
            let re = format!("/p/{atom}{count}/q");
            let bound = program_size_at_least(&re).expect("parses");
            match envoy_size(&re) {
                None => {
                    assert!(
                        bound <= MAX_PROGRAM_SIZE,
                        "{re}: Envoy accepts it, pier's bound is {bound}"
                    );
                    assert_eq!(problem(&re), None, "{re}: Envoy accepts it");
                    checked.0 += 1;
                }
                Some(size) => {
                    assert!(bound <= size, "{re}: pier's bound {bound} is over Envoy's {size}");
                    checked.1 += 1;
                    match problem(&re) {
                        Some(_) => caught += 1,
                        None => missed.push(format!("{re} (pier {bound}, Envoy {size})")),
                    }
                }
            }
        }
    }
    // Both outcomes were exercised, so neither half of the check is vacuous.
    assert!(checked.0 > 10 && checked.1 > 10, "{checked:?}");
    // And the bound is useful: most patterns Envoy refuses, pier refuses first (alone, with a status).
    eprintln!(
        "Envoy accepted {}, refused {}; pier caught {caught} of those; missed: {missed:?}",
        checked.0, checked.1
    );
    assert!(
        caught * 4 >= checked.1 * 3,
        "pier caught only {caught} of {}",
        checked.1
    );
    assert_eq!(envoy_size("/a/[a-z0-9]{1,200}/x"), Some(608));
    assert!(problem("/a/[a-z0-9]{1,200}/x").is_some());
}

/// Flags: RE2 knows `i`, `m`, `s` and `U`; Rust's parser also takes `x`, `R` and `u`, which Envoy
/// refuses. pier refuses exactly what Envoy refuses.
#[test]
fn flags_are_refused_as_envoy_refuses_them() {
    if pier::testkit::envoy::skipped() {
        return;
    }
    for re in ["/(?x) a b", "/(?R)a$", "/(?u)a", "/(?ix:a)", "/p(?-x)q"] {
        assert!(
            pier::testkit::envoy::validate(&bootstrap(re)).is_err(),
            "{re}: Envoy accepts it"
        );
        assert!(problem(re).is_some(), "{re}: pier lets it through");
    }
    for re in ["/(?i)a", "/(?ms)^a.", "/(?U)a+", "/(?i-s:a.)b", r"/\(?x\)", "/[(?x)]"] {
        assert!(
            pier::testkit::envoy::validate(&bootstrap(re)).is_ok(),
            "{re}: Envoy refuses it"
        );
        assert_eq!(problem(re), None, "{re}");
    }
}
