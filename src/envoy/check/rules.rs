//! The rules, one owner at a time. Every read of another resource goes through [`Reads`], which
//! records the name, so the checker knows whom to check again when that name changes.

use std::collections::{BTreeMap, BTreeSet};

use super::facts::{CA, CERT, ChainFacts, ManagerFacts, SecretKind};
use super::state::{Checker, Dep, Owner};
use super::{CheckError, facts};
use crate::ir::names;

struct Reads<'a, K: Ord + Clone> {
    c: &'a Checker<K>,
    deps: BTreeSet<Dep>,
}

impl<K: Ord + Clone> Reads<'_, K> {
    fn cluster_exists(&mut self, name: &str) -> bool {
        self.deps.insert(Dep::Cluster(name.into()));
        self.c.clusters.contains_key(name)
    }

    fn secret(&mut self, name: &str) -> Option<SecretKind> {
        self.deps.insert(Dep::Secret(name.into()));
        self.c.secrets.get(name).copied()
    }

    /// Whether a route to `cluster` needs the authority guard: it is a DFP cluster or an aggregate
    /// with a DFP member (both decided by those clusters' own facts, so those are what is read).
    fn reaches_dfp(&mut self, cluster: &str) -> bool {
        self.deps.insert(Dep::Cluster(cluster.into()));
        if let Some(members) = self.c.clusters.get(cluster).and_then(|f| f.aggregate.as_ref()) {
            for m in members {
                self.deps.insert(Dep::Cluster(m.as_str().into()));
            }
        }
        self.c.dfp_reach.contains(cluster)
    }

    /// The secret references of `owner`, each existing with the kind it must have.
    fn secret_refs(
        &mut self,
        owner: &dyn Fn() -> String,
        refs: &[(crate::ir::Name, &'static str)],
        errors: &mut Vec<CheckError>,
    ) {
        for (name, expected) in refs {
            let ok = match self.secret(name) {
                None | Some(SecretKind::Untyped) => {
                    errors.push(CheckError::MissingSecret {
                        owner: owner(),
                        secret: name.to_string(),
                    });
                    continue;
                }
                Some(SecretKind::Ca) => *expected == CA,
                Some(SecretKind::Cert) => *expected == CERT,
                Some(SecretKind::Other) => false,
            };
            if !ok {
                errors.push(CheckError::WrongSecretType {
                    owner: owner(),
                    secret: name.to_string(),
                    expected,
                });
            }
        }
    }
}

pub(super) fn check_owner<K: Ord + Clone>(c: &Checker<K>, owner: &Owner<K>) -> (Vec<CheckError>, Vec<Dep>) {
    let mut r = Reads {
        c,
        deps: BTreeSet::new(),
    };
    let mut errors = Vec::new();
    match owner {
        Owner::Cluster(name) => cluster(&mut r, name, &mut errors),
        Owner::LoadAssignment(name) => {
            if c.load_assignments.contains(&**name) && !c.eds.contains_key(&**name) {
                errors.push(CheckError::OrphanLoadAssignment(name.to_string()));
            }
        }
        Owner::Route(rc, key, name) => route(&mut r, rc, key, name, &mut errors),
        Owner::Domain(rc, domain) => duplicate_domains(c, rc, domain, &mut errors),
        Owner::Listener(name) => listener(&mut r, name, &mut errors),
    }
    (errors, r.deps.into_iter().collect())
}

fn cluster<K: Ord + Clone>(r: &mut Reads<'_, K>, name: &str, errors: &mut Vec<CheckError>) {
    let Some(f) = r.c.clusters.get(name).cloned() else {
        return;
    };
    if f.reserved() {
        errors.push(CheckError::ReservedClusterName(f.name.to_string()));
    }
    r.secret_refs(&|| format!("cluster {name}"), &f.secrets, errors);
    for m in f.aggregate.iter().flatten() {
        if !r.cluster_exists(m) {
            errors.push(CheckError::MissingAggregateMember {
                aggregate: f.name.to_string(),
                member: m.clone(),
            });
        }
    }
    if let Some(service) = &f.eds_service {
        r.deps.insert(Dep::LoadAssignment(service.as_str().into()));
        if !r.c.load_assignments.contains(service) {
            errors.push(CheckError::MissingLoadAssignment {
                cluster: f.name.to_string(),
                service_name: service.to_string(),
            });
        }
    }
}

/// The routes named `name` of a virtual host: what they reach exists, and a route to a dynamic forward
/// proxy carries the authority guard.
fn route<K: Ord + Clone>(r: &mut Reads<'_, K>, rc: &str, key: &K, name: &str, errors: &mut Vec<CheckError>) {
    let Some(vh) = r.c.route_configs.get(rc).and_then(|s| s.vhosts.get(key)).cloned() else {
        return;
    };
    for route in vh.routes.iter().filter(|route| route.name == name) {
        if let Some(cluster) = route.clusters.iter().find(|c| r.reaches_dfp(c))
            && !route.guarded
        {
            errors.push(CheckError::UnguardedDfpRoute {
                route_config: rc.to_string(),
                vhost: vh.name.to_string(),
                route: route.name.to_string(),
                cluster: cluster.to_string(),
            });
        }
        for cluster in &route.clusters {
            if cluster != names::INVALID_BACKEND_CLUSTER && !r.cluster_exists(cluster) {
                errors.push(CheckError::MissingCluster {
                    route_config: rc.to_string(),
                    vhost: vh.name.to_string(),
                    route: route.name.to_string(),
                    cluster: cluster.to_string(),
                });
            }
        }
    }
}

/// Envoy compares domains case-insensitively and rejects a route config that repeats one. Each
/// repetition names the virtual host that carried the domain before it.
fn duplicate_domains<K: Ord + Clone>(c: &Checker<K>, rc: &str, domain: &str, errors: &mut Vec<CheckError>) {
    let Some(carriers) = c.route_configs.get(rc).and_then(|s| s.domains.get(domain)) else {
        return;
    };
    let mut previous: Option<&str> = None;
    for (vhost, written) in carriers.values() {
        for d in written {
            if let Some(first) = previous {
                errors.push(CheckError::DuplicateDomain {
                    route_config: rc.to_string(),
                    domain: d.to_string(),
                    first: first.to_string(),
                    second: vhost.to_string(),
                });
            }
            previous = Some(vhost);
        }
    }
}

fn listener<K: Ord + Clone>(r: &mut Reads<'_, K>, name: &str, errors: &mut Vec<CheckError>) {
    let Some(l) = r.c.listeners.get(name).cloned() else {
        return;
    };
    let mut chain_names = BTreeSet::new();
    let mut matches: BTreeMap<&[String], &str> = BTreeMap::new();
    for fc in &l.chains {
        if !fc.name.is_empty() && !chain_names.insert(&fc.name) {
            errors.push(CheckError::DuplicateName {
                kind: "filter chain",
                name: format!("{}/{}", l.name, fc.name),
            });
        }
        if let Some(first) = matches.insert(&fc.server_names, &fc.name) {
            errors.push(CheckError::DuplicateFilterChainMatch {
                listener: l.name.clone(),
                first: first.to_string(),
                second: fc.name.clone(),
            });
        }
        let owner = || chain_owner(&l, fc);
        if let Some(refs) = &fc.tls {
            if !refs.iter().any(|(_, kind)| *kind == CERT) {
                errors.push(CheckError::NoCertificate {
                    listener: l.name.clone(),
                    chain: fc.name.clone(),
                });
            }
            r.secret_refs(&owner, refs, errors);
        }
        for m in &fc.managers {
            manager(r, owner(), m, errors);
        }
    }
}

fn chain_owner(l: &facts::ListenerFacts, fc: &ChainFacts) -> String {
    if fc.name.is_empty() {
        format!("listener {}", l.name)
    } else {
        format!("listener {} filter chain {}", l.name, fc.name)
    }
}

/// A connection manager's route configuration exists, and its HTTP filters fit the DFP clusters its
/// routes reach: the DFP filter (with their DNS cache) exactly where routes reach a DFP cluster, the
/// RBAC filter before it exactly where routes reach one directly or through an aggregate.
fn manager<K: Ord + Clone>(r: &mut Reads<'_, K>, owner: String, m: &ManagerFacts, errors: &mut Vec<CheckError>) {
    r.deps.insert(Dep::RouteConfig(m.route_config.as_str().into()));
    let Some(rc) = r.c.route_configs.get(m.route_config.as_str()) else {
        errors.push(CheckError::MissingRouteConfig {
            owner,
            route_config: m.route_config.clone(),
        });
        return;
    };
    r.deps.insert(Dep::Reached(m.route_config.as_str().into()));
    r.deps.insert(Dep::Dfp);
    let reached = |c: &&crate::ir::Name| rc.reached.contains_key(c.as_str());
    let guarding = match (m.rbac, m.dfp) {
        (Some(rbac), Some(dfp)) => rbac < dfp,
        (rbac, _) => rbac.is_some(),
    };
    match (r.c.dfp_reach.iter().find(reached), m.rbac) {
        (Some(cluster), _) if !guarding => errors.push(CheckError::MissingRbacFilter {
            owner: owner.clone(),
            cluster: cluster.to_string(),
        }),
        (None, Some(_)) => errors.push(CheckError::UnneededRbacFilter { owner: owner.clone() }),
        _ => {}
    }
    let mut needed = r.c.dfp_caches.iter().filter(|(c, _)| reached(c)).peekable();
    match (m.dfp, needed.peek()) {
        (None, Some((cluster, _))) => errors.push(CheckError::MissingDfpFilter {
            owner,
            cluster: (*cluster).to_string(),
        }),
        (Some(_), None) => errors.push(CheckError::UnneededDfpFilter { owner }),
        (Some(_), Some(_)) => {
            for (cluster, cluster_cache) in needed {
                if *cluster_cache != m.dfp_cache {
                    errors.push(CheckError::DnsCacheMismatch {
                        owner: owner.clone(),
                        filter: m.dfp_cache.clone(),
                        cluster: cluster.to_string(),
                        cluster_cache: cluster_cache.clone(),
                    });
                }
            }
        }
        (None, None) => {}
    }
}
