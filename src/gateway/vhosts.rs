//! Virtual hosts of one Envoy listener: which Gateway listener's routes answer which `Host`.
//!
//! Listener isolation (Gateway API `GatewaySpec.Listeners`): a request matches at most one listener,
//! the most specific one whose hostname covers its host. On a plain-HTTP port all listeners share one
//! route configuration, so each keeps only the hostnames it owns (`hostnames::owner`) and a listener
//! whose hostname a less specific one would catch gets its own virtual host even without routes
//! (Envoy answers 404 there). On an HTTPS port each listener has its own filter chain (chosen by SNI)
//! and route configuration; a request whose `Host` belongs to another listener of the port is
//! misdirected and answered 421 (`Listener.Hostname`; upstream
//! HTTPRouteHTTPSListenerDetectMisdirectedRequests), so the client retries on a connection whose TLS
//! handshake names that host.

use super::hostnames;
use super::listeners::{ListenerInfo, Protocol};
use super::routes::Entry;
use crate::ir;
use crate::ir::names;

/// Does listener `li` own requests for `host` among the listeners `port` of its port?
pub(crate) fn owns(listeners: &[ListenerInfo], port: &[usize], li: usize, host: &str) -> bool {
    let port_hosts: Vec<Option<&str>> = port.iter().map(|&i| listeners[i].hostname.as_deref()).collect();
    hostnames::owner(&port_hosts, host).map(|o| port[o]) == Some(li)
}

/// Does entry `e` serve requests for virtual-host name `host`?
pub(crate) fn serving(e: &Entry, host: &str) -> bool {
    hostnames::serves(&e.hostnames, host)
}

/// The virtual hosts a route configuration has besides its routes' — the hostname of a shadowed HTTP
/// listener (404 there rather than a less specific listener's routes), and for one HTTPS listener of
/// several on a port the 421s of `misdirected` — in the order they apply. Each applies only where
/// `has_route_vhost` says no route gives that domain a virtual host, and only the first for a domain.
pub(crate) fn extra_vhosts(
    listeners: &[ListenerInfo],
    port: &[usize],
    build: &[usize],
    has_route_vhost: &dyn Fn(&str) -> bool,
) -> Vec<ir::VirtualHost> {
    let mut out = Vec::new();
    for &li in build {
        let l = &listeners[li];
        // HTTPS listeners have route configurations of their own, chosen by SNI: nothing to shadow.
        let Some(h) = l.hostname.as_deref().filter(|_| l.protocol == Protocol::Http) else {
            continue;
        };
        let shadowed = port.iter().any(|&o| {
            o != li
                && listeners[o]
                    .hostname
                    .as_deref()
                    .is_none_or(|oh| oh != h && hostnames::intersect(oh, h).as_deref() == Some(h))
        });
        if shadowed && !has_route_vhost(h) {
            out.push(ir::VirtualHost {
                name: names::virtual_host(&l.name, h),
                domains: vec![h.to_string()],
                routes: Vec::new(),
            });
        }
    }
    if let [li] = build
        && listeners[*li].protocol == Protocol::Https
        && port.len() > 1
    {
        out.extend(
            misdirected(listeners, port, *li)
                .into_iter()
                .filter(|vh| !has_route_vhost(&vh.domains[0])),
        );
    }
    out
}

/// Route configuration of HTTPS listener `li`, one of several on its port: every hostname another
/// listener of the port owns answers 421, and so does every other host when a listener without a
/// hostname (which owns them) is elsewhere on the port. The listener's own hostname gets a virtual
/// host of its own so that a less specific 421 domain never shadows it; its hosts without a route
/// stay 404.
fn misdirected(listeners: &[ListenerInfo], port: &[usize], li: usize) -> Vec<ir::VirtualHost> {
    let l = &listeners[li];
    let answer_421 = |domain: &str| ir::VirtualHost {
        // Not `names::virtual_host(l, domain)`: this listener does not serve the domain.
        name: format!("{}/misdirected/{domain}", l.name),
        domains: vec![domain.to_string()],
        routes: vec![ir::Route {
            name: format!("{}/misdirected", l.name),
            path: ir::PathMatch::Prefix("/".into()),
            headers: Vec::new(),
            query_params: Vec::new(),
            method: None,
            action: ir::RouteAction::DirectResponse { status: 421 },
            grpc: false,
            filters: Default::default(),
        }],
    };
    let mut out = Vec::new();
    let mut catch_all_elsewhere = false;
    for &o in port.iter().filter(|&&o| o != li) {
        match listeners[o].hostname.as_deref() {
            Some(h) => out.push(answer_421(h)),
            None => catch_all_elsewhere = true,
        }
    }
    if catch_all_elsewhere {
        out.push(answer_421("*"));
    }
    if let Some(h) = l.hostname.as_deref() {
        out.push(ir::VirtualHost {
            name: names::virtual_host(&l.name, h),
            domains: vec![h.to_string()],
            routes: Vec::new(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::{listeners, order};
    use crate::model::{Model, ObjectKey};

    /// The virtual hosts of the listeners `build` when no route attaches, most specific first, as the
    /// engine orders a route configuration's hosts.
    fn without_routes(ls: &[ListenerInfo], port: &[usize], build: &[usize]) -> Vec<ir::VirtualHost> {
        let mut v = extra_vhosts(ls, port, build, &|_| false);
        v.sort_by(|a, b| order::hostname_specificity(&a.domains[0], &b.domains[0]));
        v
    }

    /// The Gateway's listeners (all on one port) and the virtual hosts of listener `build`
    /// (`None`: the shared HTTP route configuration), without routes: (name, domain, first status).
    fn hosts(yaml: &str, build: Option<usize>) -> Vec<(String, String, Option<u32>)> {
        let gw = serde_saphyr::from_str(yaml).unwrap();
        let ls = listeners::process(
            &Model::default(),
            &ObjectKey::new("ns", "gw"),
            &gw,
            &mut Default::default(),
        );
        let port: Vec<usize> = (0..ls.len()).filter(|&i| ls[i].programmable).collect();
        let build = build.map_or(port.clone(), |b| vec![b]);
        without_routes(&ls, &port, &build)
            .into_iter()
            .map(|vh| {
                let status = vh.routes.first().and_then(|r| match r.action {
                    ir::RouteAction::DirectResponse { status } => Some(status),
                    _ => None,
                });
                (vh.name, vh.domains[0].clone(), status)
            })
            .collect()
    }

    #[test]
    fn shadowed_http_listeners_claim_their_hostname() {
        let got = hosts(
            "
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: pier
  listeners:
  - {name: any, port: 80, protocol: HTTP}
  - {name: wild, port: 80, protocol: HTTP, hostname: '*.example.com'}
  - {name: exact, port: 80, protocol: HTTP, hostname: a.example.com}
",
            None,
        );
        // Without routes, `any` has nothing; the others still own their names (404, not `any`'s routes).
        assert_eq!(
            got,
            vec![
                ("exact/a.example.com".into(), "a.example.com".into(), None),
                ("wild/*.example.com".into(), "*.example.com".into(), None),
            ]
        );
    }

    #[test]
    fn https_listeners_answer_421_for_each_other() {
        let gw = "
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: pier
  listeners:
  - {name: any, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: c}]}}
  - {name: wild, port: 443, protocol: HTTPS, hostname: '*.example.com', tls: {certificateRefs: [{name: c}]}}
  - {name: exact, port: 443, protocol: HTTPS, hostname: a.example.com, tls: {certificateRefs: [{name: c}]}}
";
        // Certificates are missing in an empty model, so build the listeners programmable by hand.
        let gw: gateway_api::apis::standard::gateways::Gateway = serde_saphyr::from_str(gw).unwrap();
        let mut ls = listeners::process(
            &Model::default(),
            &ObjectKey::new("ns", "gw"),
            &gw,
            &mut Default::default(),
        );
        for l in &mut ls {
            l.programmable = true;
        }
        let vh = |b: usize| -> Vec<(String, Option<u32>)> {
            without_routes(&ls, &[0, 1, 2], &[b])
                .into_iter()
                .map(|v| {
                    let s = v.routes.first().and_then(|r| match r.action {
                        ir::RouteAction::DirectResponse { status } => Some(status),
                        _ => None,
                    });
                    (v.domains[0].clone(), s)
                })
                .collect()
        };
        let m = Some(421);
        assert_eq!(
            vh(0),
            vec![("a.example.com".into(), m), ("*.example.com".into(), m)],
            "the no-hostname listener: other listeners' names are misdirected, unknown hosts 404"
        );
        assert_eq!(
            vh(1),
            vec![
                ("a.example.com".into(), m),
                ("*.example.com".into(), None),
                ("*".into(), m)
            ],
            "a wildcard listener: its own names 404 without routes, the rest belongs elsewhere"
        );
        assert_eq!(
            vh(2),
            vec![
                ("a.example.com".into(), None),
                ("*.example.com".into(), m),
                ("*".into(), m)
            ]
        );
    }
}
