//! The authority guard: a dynamic forward proxy connects wherever the request's authority says, so every
//! route forwarding to one carries the destination guardrails as RBAC rules on the authority (403), and
//! the connection manager runs the RBAC filter — before the dynamic-forward-proxy filter, so a refused
//! name is never even resolved. The listener-wide filter config has no `rules`, which Envoy reads as "no
//! enforcement": only routes forwarding to a DFP cluster are guarded, and ordinary routes reached by IP or
//! any name keep working.

use std::collections::HashMap;

use super::super::items::ClusterLookup;
use super::super::pb::{ext, hcm, rbac, rbac_filter, route};
use crate::ir;

/// RBAC policy (in the per-route config) denying authorities that match a guardrail regex; Envoy names
/// it in the response details of a 403 (`rbac_access_denied_matched_policy[destination-guardrails]`).
const GUARDRAILS_POLICY: &str = "destination-guardrails";
/// RBAC policy denying authorities outside the operator's hostname allow-list.
const ALLOW_LIST_POLICY: &str = "hostname-not-allowed";

pub(in crate::envoy) fn http_filter() -> hcm::HttpFilter {
    super::http_filter(ext::RBAC_FILTER, rbac_filter::Rbac::default())
}

/// A dynamic forward proxy connects wherever the request's authority says, so a route forwarding to one
/// (after weight-0 shares are dropped) carries the destination guardrails as RBAC rules on the authority;
/// the RBAC filter that reads them runs before the DFP filter (`listeners`). Per route, not in the
/// listener-wide filter config: ordinary routes on the same listener must keep answering requests that
/// name the Gateway by IP (`Host: 10.0.0.5`) or by any hostname. Several DFP clusters on one route (a
/// weighted split, or an aggregate's members) pool their rules: each request may reach any of them.
pub(in crate::envoy) fn per_route(
    action: &route::route::Action,
    clusters: &dyn ClusterLookup,
) -> Option<rbac_filter::RbacPerRoute> {
    let mut dfp = false;
    let mut deny: Vec<&str> = Vec::new();
    let mut allow_lists: Vec<&[String]> = Vec::new();
    let reached = super::super::routes::action_clusters(action)
        .into_iter()
        .flat_map(|name| match clusters.cluster(name).map(|c| &*c.discovery) {
            Some(ir::Discovery::Aggregate { clusters: members }) => members.iter().map(String::as_str).collect(),
            _ => vec![name],
        });
    for name in reached {
        let Some(ir::Discovery::DynamicForwardProxy {
            deny_authorities,
            allow_authorities,
            ..
        }) = clusters.cluster(name).map(|c| &*c.discovery)
        else {
            continue;
        };
        dfp = true;
        for re in deny_authorities {
            if !deny.contains(&re.as_str()) {
                deny.push(re);
            }
        }
        if let Some(list) = allow_authorities
            && !allow_lists.contains(&list.as_slice())
        {
            allow_lists.push(list);
        }
    }
    if !dfp {
        return None;
    }
    let mut policies = HashMap::new();
    if !deny.is_empty() {
        policies.insert(
            GUARDRAILS_POLICY.to_string(),
            anyone(deny.into_iter().map(authority_matches).collect()),
        );
    }
    for (i, list) in allow_lists.into_iter().enumerate() {
        use rbac::permission::{Rule, Set};
        // Denied unless some entry matches; a missing authority matches none. An empty list allows nothing.
        let outside = if list.is_empty() {
            Rule::Any(true)
        } else {
            let not = |re: &String| rbac::Permission {
                rule: Some(Rule::NotRule(Box::new(authority_matches(re)))),
            };
            Rule::AndRules(Set {
                rules: list.iter().map(not).collect(),
            })
        };
        let name = if i == 0 {
            ALLOW_LIST_POLICY.to_string()
        } else {
            format!("{ALLOW_LIST_POLICY}-{i}")
        };
        policies.insert(name, anyone(vec![rbac::Permission { rule: Some(outside) }]));
    }
    let rules = rbac::Rbac {
        action: rbac::rbac::Action::Deny as i32,
        policies,
        ..Default::default()
    };
    Some(rbac_filter::RbacPerRoute {
        rbac: Some(rbac_filter::Rbac {
            rules: Some(rules),
            ..Default::default()
        }),
    })
}

/// An RBAC policy applying `permissions` to every client.
fn anyone(permissions: Vec<rbac::Permission>) -> rbac::Policy {
    let any = rbac::Principal {
        identifier: Some(rbac::principal::Identifier::Any(true)),
    };
    rbac::Policy {
        permissions,
        principals: vec![any],
        ..Default::default()
    }
}

/// The request's authority (HTTP/1 `Host`) fully matches the RE2 `regex`.
fn authority_matches(regex: &str) -> rbac::Permission {
    use super::super::pb::matcher::{RegexMatcher, StringMatcher, string_matcher::MatchPattern};
    let header = route::HeaderMatcher {
        name: ":authority".to_string(),
        header_match_specifier: Some(route::header_matcher::HeaderMatchSpecifier::StringMatch(
            StringMatcher {
                match_pattern: Some(MatchPattern::SafeRegex(RegexMatcher {
                    regex: regex.to_string(),
                    ..Default::default()
                })),
                ..Default::default()
            },
        )),
        ..Default::default()
    };
    rbac::Permission {
        rule: Some(rbac::permission::Rule::Header(header)),
    }
}
