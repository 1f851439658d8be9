//! The checker kept current by changes must say what a fresh check of the same resources says, after
//! every step of random edit sequences: resources appear, vanish and change into variants that break
//! each rule (wrong secret kind, renamed DNS cache, stray load assignment, repeated domain, missing
//! cluster, unguarded DFP route, filters removed or reordered).

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;

use super::super::super::pb::{cluster, dfp_cluster, endpoint, ext, hcm, listener, route, tls};
use super::super::super::{Resources, build, fixture};
use super::super::facts::unpack;
use super::super::*;
use crate::ir;

/// Every variant of every resource the edits choose from.
struct Pool {
    clusters: Vec<(String, Vec<cluster::Cluster>)>,
    endpoints: Vec<(String, Vec<endpoint::ClusterLoadAssignment>)>,
    secrets: Vec<(String, Vec<tls::Secret>)>,
    listeners: Vec<(String, Vec<listener::Listener>)>,
    /// Route configuration → its virtual host slots, each with its variants.
    vhosts: Vec<(String, Vec<Vec<route::VirtualHost>>)>,
}

/// The fixture, and the fixture with an aggregate cluster in front of the DFP cluster.
fn bases() -> [Resources; 2] {
    let plain = build(&fixture::gateway());
    let mut gw = fixture::gateway();
    let mut aggregate = gw.clusters[fixture::WEB].clone();
    aggregate.name = "failover/dyn".into();
    aggregate.discovery = std::sync::Arc::new(ir::Discovery::Aggregate {
        clusters: vec![fixture::DYN.into(), fixture::WEB.into()],
    });
    gw.clusters.insert("failover/dyn".into(), aggregate);
    let ir::ListenerKind::Https { chains } = &mut gw.listeners[1].kind else {
        unreachable!("fixture listener 1 is HTTPS")
    };
    for chain in chains {
        chain.route_config.virtual_hosts[0].routes[0].action = ir::RouteAction::Forward(vec![ir::WeightedBackend {
            cluster: Some("failover/dyn".into()),
            weight: 1,
            filters: Default::default(),
        }]);
    }
    [plain, build(&gw)]
}

fn variants<T: Clone + PartialEq>(out: &mut Vec<(String, Vec<T>)>, name: &str, v: T) {
    match out.iter_mut().find(|(n, _)| n == name) {
        Some((_, vs)) if !vs.contains(&v) => vs.push(v),
        Some(_) => {}
        None => out.push((name.to_string(), vec![v])),
    }
}

fn edit_managers(l: &listener::Listener, edit: impl Fn(&mut hcm::HttpConnectionManager)) -> listener::Listener {
    let mut l = l.clone();
    for f in l.filter_chains.iter_mut().flat_map(|fc| &mut fc.filters) {
        let Some(listener::filter::ConfigType::TypedConfig(any)) = &f.config_type else {
            continue;
        };
        let Some(mut m) = unpack::<hcm::HttpConnectionManager>(any) else {
            continue;
        };
        edit(&mut m);
        f.config_type = Some(listener::filter::ConfigType::TypedConfig(envoy_types::util::pack_any(
            m,
        )));
    }
    l
}

fn pool() -> Pool {
    let mut p = Pool {
        clusters: vec![],
        endpoints: vec![],
        secrets: vec![],
        listeners: vec![],
        vhosts: vec![],
    };
    for base in bases() {
        for c in &base.clusters {
            variants(&mut p.clusters, &c.name, c.clone());
            let mut eds = c.clone();
            if let Some(e) = &mut eds.eds_cluster_config {
                e.service_name = "elsewhere".into();
                variants(&mut p.clusters, &c.name, eds);
            }
            if let Some(cluster::cluster::ClusterDiscoveryType::ClusterType(t)) = &c.cluster_discovery_type
                && t.name == ext::DFP_CLUSTER
            {
                let mut cfg: dfp_cluster::ClusterConfig = unpack(t.typed_config.as_ref().unwrap()).unwrap();
                if let Some(dfp_cluster::cluster_config::ClusterImplementationSpecifier::DnsCacheConfig(cache)) =
                    &mut cfg.cluster_implementation_specifier
                {
                    cache.name = "another-cache".into();
                }
                let mut other = c.clone();
                other.cluster_discovery_type = Some(cluster::cluster::ClusterDiscoveryType::ClusterType(
                    cluster::cluster::CustomClusterType {
                        name: t.name.clone(),
                        typed_config: Some(envoy_types::util::pack_any(cfg)),
                    },
                ));
                variants(&mut p.clusters, &c.name, other);
            }
        }
        for e in &base.endpoints {
            variants(&mut p.endpoints, &e.cluster_name, e.clone());
            let stray = endpoint::ClusterLoadAssignment {
                cluster_name: "elsewhere".into(),
                ..e.clone()
            };
            variants(&mut p.endpoints, "elsewhere", stray);
        }
        for s in &base.secrets {
            variants(&mut p.secrets, &s.name, s.clone());
            let other = base.secrets.iter().find(|o| o.r#type != s.r#type);
            if let Some(other) = other {
                let swapped = tls::Secret {
                    name: s.name.clone(),
                    r#type: other.r#type.clone(),
                };
                variants(&mut p.secrets, &s.name, swapped);
            }
        }
        for l in &base.listeners {
            variants(&mut p.listeners, &l.name, l.clone());
            let no_dfp = edit_managers(l, |m| m.http_filters.retain(|f| f.name != ext::DFP_FILTER));
            variants(&mut p.listeners, &l.name, no_dfp);
            let rbac_last = edit_managers(l, |m| {
                if let Some(i) = m.http_filters.iter().position(|f| f.name == ext::RBAC_FILTER) {
                    let f = m.http_filters.remove(i);
                    let at = m.http_filters.len() - 1;
                    m.http_filters.insert(at, f);
                }
            });
            variants(&mut p.listeners, &l.name, rbac_last);
        }
        for rc in &base.routes {
            let slots = match p.vhosts.iter_mut().find(|(n, _)| *n == rc.name) {
                Some((_, slots)) => slots,
                None => {
                    p.vhosts.push((rc.name.clone(), vec![]));
                    &mut p.vhosts.last_mut().unwrap().1
                }
            };
            for (i, vh) in rc.virtual_hosts.iter().enumerate() {
                // Each slot also gets a copy of another slot's domains, upper-cased.
                let mut all = vec![vh.clone()];
                let mut repeat = vh.clone();
                repeat.domains = rc.virtual_hosts[(i + 1) % rc.virtual_hosts.len()]
                    .domains
                    .iter()
                    .map(|d| d.to_ascii_uppercase())
                    .collect();
                all.push(repeat);
                let mut unguarded = vh.clone();
                unguarded
                    .routes
                    .iter_mut()
                    .for_each(|r| r.typed_per_filter_config.clear());
                all.push(unguarded);
                let mut missing = vh.clone();
                if let Some(route::route::Action::Route(a)) = missing.routes.first_mut().and_then(|r| r.action.as_mut())
                {
                    a.cluster_specifier = Some(route::route_action::ClusterSpecifier::Cluster("missing".into()));
                }
                all.push(missing);
                if slots.len() <= i {
                    slots.push(vec![]);
                }
                for v in all {
                    if !slots[i].contains(&v) {
                        slots[i].push(v);
                    }
                }
            }
            // A last slot, absent at first: another virtual host repeating the first one's domains.
            let mut extra = rc.virtual_hosts[0].clone();
            extra.name = EXTRA.into();
            extra.domains.iter_mut().for_each(|d| *d = d.to_ascii_uppercase());
            let n = rc.virtual_hosts.len();
            if slots.len() <= n {
                slots.push(vec![extra]);
            }
        }
    }
    p
}

/// Which variant each slot holds (0: absent).
#[derive(Debug, Clone, Default)]
struct State(BTreeMap<(u8, usize, usize), usize>);

impl State {
    fn resources(&self, p: &Pool) -> Resources {
        fn pick<T: Clone>(state: &State, ty: u8, slots: &[(String, Vec<T>)]) -> Vec<T> {
            let chosen = slots.iter().enumerate();
            chosen
                .filter_map(|(i, (_, vs))| {
                    state
                        .0
                        .get(&(ty, i, 0))
                        .and_then(|&v| vs.get(v.checked_sub(1)?))
                        .cloned()
                })
                .collect()
        }
        let routes = p
            .vhosts
            .iter()
            .enumerate()
            .filter(|(i, _)| self.0.get(&(4, *i, usize::MAX)).is_some_and(|&v| v > 0))
            .map(|(i, (name, slots))| route::RouteConfiguration {
                name: name.clone(),
                virtual_hosts: slots
                    .iter()
                    .enumerate()
                    .filter_map(|(j, vs)| self.0.get(&(4, i, j)).and_then(|&v| vs.get(v.checked_sub(1)?)).cloned())
                    .collect(),
                ..Default::default()
            })
            .collect();
        Resources {
            clusters: pick(self, 0, &p.clusters),
            endpoints: pick(self, 1, &p.endpoints),
            secrets: pick(self, 2, &p.secrets),
            listeners: pick(self, 3, &p.listeners),
            routes,
        }
    }
}

/// Every slot, with how many states it has (absent, then each variant).
fn slots(p: &Pool) -> Vec<((u8, usize, usize), usize)> {
    let mut out = Vec::new();
    let counts = [
        p.clusters.iter().map(|(_, v)| v.len()).collect::<Vec<_>>(),
        p.endpoints.iter().map(|(_, v)| v.len()).collect(),
        p.secrets.iter().map(|(_, v)| v.len()).collect(),
        p.listeners.iter().map(|(_, v)| v.len()).collect(),
    ];
    for (ty, lens) in counts.iter().enumerate() {
        out.extend(lens.iter().enumerate().map(|(i, n)| ((ty as u8, i, 0), n + 1)));
    }
    for (i, (_, vhosts)) in p.vhosts.iter().enumerate() {
        out.push(((4, i, usize::MAX), 2));
        out.extend(vhosts.iter().enumerate().map(|(j, v)| ((4, i, j), v.len() + 1)));
    }
    out
}

const EXTRA: &str = "extra";

/// The whole fixture: every slot on its first variant (the extra virtual hosts absent).
fn whole(p: &Pool) -> State {
    let extra = |(ty, i, j): (u8, usize, usize)| ty == 4 && p.vhosts[i].1.get(j).is_some_and(|v| v[0].name == EXTRA);
    State(
        slots(p)
            .into_iter()
            .map(|(key, _)| (key, usize::from(!extra(key))))
            .collect(),
    )
}

/// Feeds the differences between two resource sets, as the serve pipeline feeds a translation's.
fn feed(c: &mut Checker<usize>, old: &Resources, new: &Resources) {
    fn by_name<T>(items: &[T], name: impl Fn(&T) -> &str) -> BTreeMap<&str, &T> {
        items.iter().map(|i| (name(i), i)).collect()
    }
    fn each<T: PartialEq>(old: BTreeMap<&str, &T>, new: BTreeMap<&str, &T>, mut set: impl FnMut(&str, Option<&T>)) {
        for (n, o) in &old {
            match new.get(n) {
                None => set(n, None),
                Some(v) if v != o => set(n, Some(v)),
                Some(_) => {}
            }
        }
        for (n, v) in &new {
            if !old.contains_key(n) {
                set(n, Some(v));
            }
        }
    }
    each(
        by_name(&old.clusters, |c| &c.name),
        by_name(&new.clusters, |c| &c.name),
        |n, v| c.set_cluster(n, v.map(|v| Arc::new(ClusterFacts::of(v)))),
    );
    each(
        by_name(&old.endpoints, |e| &e.cluster_name),
        by_name(&new.endpoints, |e| &e.cluster_name),
        |n, v| c.set_load_assignment(n, v.is_some()),
    );
    each(
        by_name(&old.secrets, |s| &s.name),
        by_name(&new.secrets, |s| &s.name),
        |n, v| c.set_secret(n, v.map(SecretKind::of)),
    );
    each(
        by_name(&old.listeners, |l| &l.name),
        by_name(&new.listeners, |l| &l.name),
        |n, v| c.set_listener(n, v.map(|v| Arc::new(ListenerFacts::of(v)))),
    );
    each(
        by_name(&old.routes, |r| &r.name),
        by_name(&new.routes, |r| &r.name),
        |n, v| match v {
            None => c.set_route_config(n, false),
            Some(rc) => {
                let before = old.routes.iter().find(|o| o.name == n);
                if before.is_none() {
                    c.set_route_config(n, true);
                }
                let was = before.map(|o| o.virtual_hosts.as_slice()).unwrap_or_default();
                for i in 0..was.len().max(rc.virtual_hosts.len()) {
                    let (a, b) = (was.get(i), rc.virtual_hosts.get(i));
                    if a != b {
                        c.set_vhost(n, i, b.map(|v| Arc::new(VhostFacts::of(v))));
                    }
                }
            }
        },
    );
}

fn fresh(res: &Resources) -> Vec<CheckError> {
    check(res).err().unwrap_or_default()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn incremental_check_says_what_a_fresh_check_says(edits in prop::collection::vec((0usize..64, 0usize..6), 1..40)) {
        let p = pool();
        let all = slots(&p);
        let mut state = whole(&p);
        let mut checker = Checker::<usize>::default();
        let mut shown = Resources::default();
        for (slot, variant) in edits {
            let (key, n) = all[slot % all.len()];
            state.0.insert(key, variant % n);
            let next = state.resources(&p);
            feed(&mut checker, &shown, &next);
            let incremental = checker.errors();
            prop_assert_eq!(&incremental, &fresh(&next), "after {:?}", key);
            shown = next;
        }
    }
}

#[test]
fn the_pool_breaks_every_rule_somewhere() {
    // The edits must reach each kind of error, or the property above proves little: one variant (or
    // one removal) at a time from the whole fixture, the kinds of error found.
    let p = pool();
    let whole = whole(&p);
    let mut kinds = std::collections::BTreeSet::new();
    for (key, n) in slots(&p) {
        for v in 0..n {
            let mut state = whole.clone();
            state.0.insert(key, v);
            for e in fresh(&state.resources(&p)) {
                kinds.insert(format!("{e:?}").split([' ', '(', '{']).next().unwrap().to_string());
            }
        }
    }
    let expected = [
        "DnsCacheMismatch",
        "DuplicateDomain",
        "MissingAggregateMember",
        "MissingCluster",
        "MissingDfpFilter",
        "MissingLoadAssignment",
        "MissingRbacFilter",
        "MissingRouteConfig",
        "MissingSecret",
        "OrphanLoadAssignment",
        "UnguardedDfpRoute",
        "WrongSecretType",
    ];
    for kind in expected {
        assert!(kinds.contains(kind), "no edit reaches {kind}; reached {kinds:?}");
    }
}
