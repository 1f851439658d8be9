//! The object to explain (`httproute/NS/NAME`, ...) and how to find it in pier's outputs: its status
//! objects, the `pier.dev` metadata kind of the clusters built from it, and how status messages name it.
//!
//! An object pier says nothing about cannot be explained; the error then lists the objects of that kind
//! pier does know, nearest name first, since a typo is the usual cause.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use super::model::SubjectView;
use super::status::{group, identity, named_refs};
use super::{ExplainError, Inputs};
use crate::api::consts::{EG_GROUP, GATEWAY_GROUP};

/// `pier.dev` metadata kind of an Envoy Gateway Backend's clusters.
pub const EG_ORIGIN: &str = "Backend.gateway.envoyproxy.io";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    HttpRoute,
    GrpcRoute,
    Gateway,
    XBackend,
    /// `gateway.networking.k8s.io` (GEP-4488 or draft) or `gateway.envoyproxy.io`; `None` until told apart.
    Backend(Option<&'static str>),
    Service,
}

impl Kind {
    /// The kind as status objects spell it.
    pub fn status_kind(self) -> &'static str {
        match self {
            Kind::HttpRoute => "HTTPRoute",
            Kind::GrpcRoute => "GRPCRoute",
            Kind::Gateway => "Gateway",
            Kind::XBackend => "XBackend",
            Kind::Backend(_) => "Backend",
            Kind::Service => "Service",
        }
    }

    /// The `pier.dev` kinds of the clusters built from objects of this kind.
    pub fn origin_kinds(self) -> &'static [&'static str] {
        match self {
            Kind::XBackend => &["XBackend"],
            Kind::Backend(Some(EG_GROUP)) => &[EG_ORIGIN],
            Kind::Backend(Some(_)) => &["Backend"],
            Kind::Backend(None) => &["Backend", EG_ORIGIN],
            Kind::Service => &["Service"],
            _ => &[],
        }
    }

    pub fn is_backend(self) -> bool {
        !self.origin_kinds().is_empty()
    }

    fn accepts_group(self, g: &str) -> bool {
        match self {
            Kind::Backend(Some(want)) => g == want,
            _ => true,
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Backend(Some(g)) => write!(f, "Backend ({g})"),
            k => f.write_str(k.status_kind()),
        }
    }
}

/// `KIND/NAMESPACE/NAME` as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
}

impl Subject {
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

impl FromStr for Subject {
    type Err = ExplainError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || ExplainError::BadSubject(s.to_string());
        let mut parts = s.splitn(3, '/');
        let (Some(kind), Some(namespace), Some(name)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad());
        };
        if namespace.is_empty() || name.is_empty() || name.contains('/') {
            return Err(bad());
        }
        let kind = match kind.to_ascii_lowercase().as_str() {
            "httproute" => Kind::HttpRoute,
            "grpcroute" => Kind::GrpcRoute,
            "gateway" => Kind::Gateway,
            "xbackend" => Kind::XBackend,
            "backend" => Kind::Backend(None),
            "backend.gateway.networking.k8s.io" => Kind::Backend(Some(GATEWAY_GROUP)),
            "backend.gateway.envoyproxy.io" => Kind::Backend(Some(EG_GROUP)),
            "service" => Kind::Service,
            _ => return Err(bad()),
        };
        Ok(Subject {
            kind,
            namespace: namespace.to_string(),
            name: name.to_string(),
        })
    }
}

/// The subject as found in pier's outputs.
pub struct Target<'a> {
    pub subject: Subject,
    /// Its status objects (none for a Service; one otherwise).
    pub statuses: Vec<&'a Value>,
    pub view: SubjectView,
}

/// Finds `subject` in `inputs`, telling the two Backend groups apart by what exists.
pub fn resolve<'a>(inputs: &'a Inputs, subject: &Subject) -> Result<Target<'a>, ExplainError> {
    let key = subject.key();
    let statuses: Vec<&Value> = inputs
        .objects
        .iter()
        .filter(|o| {
            let (kind, api_version, k) = identity(o);
            kind == subject.kind.status_kind() && k == key && subject.kind.accepts_group(group(api_version))
        })
        .collect();
    let kind = match subject.kind {
        Kind::Backend(None) => Kind::Backend(backend_group(inputs, &statuses, &key)?),
        k => k,
    };
    let subject = Subject {
        kind,
        ..subject.clone()
    };
    let known = !statuses.is_empty() || known_keys(inputs, kind).contains(&key);
    if !known {
        return Err(not_found(inputs, &subject));
    }
    let view = SubjectView {
        kind: subject.kind.status_kind().to_string(),
        api_version: statuses
            .first()
            .map(|o| identity(o).1.to_string())
            .or_else(|| (kind == Kind::Service).then(|| "v1".to_string())),
        namespace: subject.namespace.clone(),
        name: subject.name.clone(),
    };
    Ok(Target {
        subject,
        statuses,
        view,
    })
}

/// Which group `backend/NS/NAME` means: the one with a status, else the one with clusters.
fn backend_group(inputs: &Inputs, statuses: &[&Value], key: &str) -> Result<Option<&'static str>, ExplainError> {
    let from_status: BTreeSet<&'static str> = statuses
        .iter()
        .map(|o| {
            if group(identity(o).1) == EG_GROUP {
                EG_GROUP
            } else {
                GATEWAY_GROUP
            }
        })
        .collect();
    let groups = if from_status.is_empty() {
        [GATEWAY_GROUP, EG_GROUP]
            .into_iter()
            .filter(|g| origin_keys(inputs, Kind::Backend(Some(g))).contains(key))
            .collect()
    } else {
        from_status
    };
    match groups.len() {
        0 | 1 => Ok(groups.into_iter().next()),
        _ => Err(ExplainError::Ambiguous(key.to_string())),
    }
}

/// `ns/name` of every object of `kind` pier's outputs mention: status objects, cluster origins, and
/// the backendRef targets status messages name.
pub fn known_keys(inputs: &Inputs, kind: Kind) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = inputs
        .objects
        .iter()
        .filter(|o| {
            let (k, api_version, _) = identity(o);
            k == kind.status_kind() && kind.accepts_group(group(api_version))
        })
        .map(|o| identity(o).2)
        .collect();
    if kind.is_backend() {
        out.extend(origin_keys(inputs, kind));
        out.extend(message_keys(inputs, kind));
    }
    out
}

/// `ns/name` of the objects of `kind` some cluster was built from.
fn origin_keys(inputs: &Inputs, kind: Kind) -> BTreeSet<String> {
    let clusters = inputs
        .gateways
        .values()
        .flat_map(|doc| doc["clusters"].as_array().into_iter().flatten());
    clusters
        .filter_map(super::clusters::origin)
        .filter(|o| kind.origin_kinds().contains(&o.kind.as_str()))
        .map(|o| format!("{}/{}", o.namespace, o.name))
        .collect()
}

/// `ns/name` of the objects of `kind` status messages name (a Backend's group is not in them).
fn message_keys(inputs: &Inputs, kind: Kind) -> BTreeSet<String> {
    let messages = inputs.objects.iter().flat_map(|o| super::status::messages(o, None));
    messages
        .flat_map(named_refs)
        .filter(|(k, _)| k == kind.status_kind())
        .map(|(_, key)| key)
        .collect()
}

fn not_found(inputs: &Inputs, subject: &Subject) -> ExplainError {
    let key = subject.key();
    let mut known: Vec<String> = known_keys(inputs, subject.kind).into_iter().collect();
    known.sort_by_key(|k| (distance(k, &key), k.clone()));
    ExplainError::NotFound {
        kind: subject.kind.to_string(),
        key,
        known,
    }
}

/// Levenshtein distance, for "did you mean".
pub fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_parse_with_their_kind() {
        let s: Subject = "HTTPRoute/default/web".parse().unwrap();
        assert_eq!((s.kind, s.key().as_str()), (Kind::HttpRoute, "default/web"));
        let s: Subject = "backend.gateway.envoyproxy.io/ns/b".parse().unwrap();
        assert_eq!(s.kind, Kind::Backend(Some(EG_GROUP)));
        for bad in ["httproute/default", "route/a/b", "service//b", "service/a/b/c"] {
            assert!(bad.parse::<Subject>().is_err(), "{bad}");
        }
    }

    #[test]
    fn distance_counts_edits() {
        assert_eq!(distance("default/web", "default/web"), 0);
        assert_eq!(distance("default/wbe", "default/web"), 2);
        assert_eq!(distance("", "abc"), 3);
    }
}
