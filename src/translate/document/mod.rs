//! The `pier translate` document, written as it is rendered.
//!
//! Building the whole document as one `serde_json::Value` and then as one YAML string held three copies
//! of a large configuration at once: at 5,000 routes that was most of the command's peak memory. The
//! document here is a [`Serialize`] that renders one resource at a time straight into the output
//! serializer, so only one resource's value is alive at any moment.
//!
//! It renders either a [`Translation`]'s decoded resources or, for `pier translate`, the engine's own
//! packed ones ([`Engine::document`]): decoding every resource into prost types only to encode it again
//! for rendering was a tenth of the command, and the decoded copy sat beside the engine.
//!
//! The output is byte-identical to serializing [`Translation::document`]'s value, which is itself
//! this type turned into a value, so the two cannot drift: the keys are written in the order a
//! `serde_json::Map` sorts them, and every list with its exact length, as a `Value` would. A golden
//! test holds both sources to the document as it was built before it streamed.

use std::collections::BTreeMap;

use prost::Name;
use serde::ser::{Error as _, Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use super::engine::Engine;
use super::{SelectError, Translation, merged};
use crate::envoy::Resources;
use crate::envoy::pb::{cluster, endpoint, listener, route, tls};
use crate::envoy::render::stream::Encoded;
use crate::gateway::status::ObjectStatus;
use crate::snapshot::{GatewayOut, Res};

mod entries;

use entries::MapEntries;

/// One Gateway's resources, or every Gateway's merged by name, borrowed from a [`Translation`].
#[derive(Debug, Default)]
pub struct Selected<'a> {
    pub clusters: Vec<&'a cluster::Cluster>,
    pub endpoints: Vec<&'a endpoint::ClusterLoadAssignment>,
    pub listeners: Vec<&'a listener::Listener>,
    pub routes: Vec<&'a route::RouteConfiguration>,
    pub secrets: Vec<&'a tls::Secret>,
}

impl<'a> Selected<'a> {
    pub fn of(res: &'a Resources) -> Self {
        Self {
            clusters: res.clusters.iter().collect(),
            endpoints: res.endpoints.iter().collect(),
            listeners: res.listeners.iter().collect(),
            routes: res.routes.iter().collect(),
            secrets: res.secrets.iter().collect(),
        }
    }

    pub fn to_resources(&self) -> Resources {
        fn owned<T: Clone>(items: &[&T]) -> Vec<T> {
            items.iter().map(|x| (*x).clone()).collect()
        }
        Resources {
            clusters: owned(&self.clusters),
            endpoints: owned(&self.endpoints),
            listeners: owned(&self.listeners),
            routes: owned(&self.routes),
            secrets: owned(&self.secrets),
        }
    }

    fn sections(&self) -> Sections<'a> {
        fn items<'a, M: Item + Sync>(list: &[&'a M]) -> Vec<&'a (dyn Item + Sync)> {
            list.iter().map(|m| *m as &(dyn Item + Sync)).collect()
        }
        Sections {
            clusters: items(&self.clusters),
            endpoints: items(&self.endpoints),
            listeners: items(&self.listeners),
            routes: items(&self.routes),
            secrets: items(&self.secrets),
        }
    }
}

/// A resource the document writes, as canonical proto3 JSON.
pub trait Item {
    fn render(&self) -> Rendering<'_>;
}

impl<M: prost::Message + prost::Name> Item for M {
    fn render(&self) -> Rendering<'_> {
        let (name, bytes) = (M::full_name(), self.encode_to_vec());
        Rendering::Owned { name, bytes }
    }
}

impl Item for Res {
    fn render(&self) -> Rendering<'_> {
        match self.route_parts() {
            Some((header, vhosts)) => Rendering::RouteConfiguration {
                header: header_value(header),
                vhosts: vhosts.collect(),
            },
            None => {
                let any = self.resource();
                let name = any.type_url.rsplit('/').next().unwrap_or_default();
                Rendering::Packed(Encoded {
                    name,
                    bytes: &any.value,
                })
            }
        }
    }
}

/// A route configuration's fields but its virtual hosts, as a value, written by the JSON writer (as
/// every resource is) rather than through prost-reflect, which would build its descriptor pool for it.
fn header_value(header: &[u8]) -> Value {
    let name = route::RouteConfiguration::full_name();
    serde_json::to_value(Encoded {
        name: &name,
        bytes: header,
    })
    .unwrap_or_else(|e| panic!("{name} the engine packed cannot be rendered: {e}"))
}

/// One resource as it is written. A route configuration the engine built is written one virtual host
/// at a time: at 5,000 routes, one configuration's value (and the decoded message it came from) was
/// most of the growth while the document was written.
pub enum Rendering<'a> {
    /// A message encoded for the document (the decoded resources of a [`Translation`]).
    Owned { name: String, bytes: Vec<u8> },
    /// A message as the engine packed it.
    Packed(Encoded<'a>),
    /// Every field but `virtual_hosts`, and each virtual host's encoding.
    RouteConfiguration { header: Value, vhosts: Vec<&'a [u8]> },
}

impl Serialize for Rendering<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (header, vhosts) = match self {
            Rendering::Owned { name, bytes } => return Encoded { name, bytes }.serialize(s),
            Rendering::Packed(message) => return message.serialize(s),
            Rendering::RouteConfiguration { header, vhosts } => (header, vhosts),
        };
        const KEY: &str = "virtual_hosts";
        let fields = header
            .as_object()
            .ok_or_else(|| S::Error::custom("a route configuration renders as an object"))?;
        let mut map = s.serialize_map(Some(fields.len() + usize::from(!vhosts.is_empty())))?;
        // In the order the whole message's value would have its keys (sorted), an empty list omitted.
        let mut pending = !vhosts.is_empty();
        for (key, value) in fields {
            if pending && key.as_str() > KEY {
                map.serialize_entry(KEY, &VirtualHosts(vhosts))?;
                pending = false;
            }
            map.serialize_entry(key, value)?;
        }
        if pending {
            map.serialize_entry(KEY, &VirtualHosts(vhosts))?;
        }
        map.end()
    }
}

struct VirtualHosts<'s, 'a>(&'s [&'a [u8]]);

impl Serialize for VirtualHosts<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let name = route::VirtualHost::full_name();
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for vhost in self.0 {
            seq.serialize_element(&Encoded {
                name: &name,
                bytes: vhost,
            })?;
        }
        seq.end()
    }
}

/// `{clusters, endpoints, listeners, routes, secrets}`, as
/// [`resources_to_json`](crate::envoy::render::resources_to_json) writes them.
#[derive(Default)]
struct Sections<'a> {
    clusters: Vec<&'a (dyn Item + Sync)>,
    endpoints: Vec<&'a (dyn Item + Sync)>,
    listeners: Vec<&'a (dyn Item + Sync)>,
    routes: Vec<&'a (dyn Item + Sync)>,
    secrets: Vec<&'a (dyn Item + Sync)>,
}

impl Sections<'_> {
    fn is_empty(&self) -> bool {
        [
            &self.clusters,
            &self.endpoints,
            &self.listeners,
            &self.routes,
            &self.secrets,
        ]
        .iter()
        .all(|list| list.is_empty())
    }
}

impl Serialize for Sections<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(5))?;
        map.serialize_entry("clusters", &Rendered(&self.clusters))?;
        map.serialize_entry("endpoints", &Rendered(&self.endpoints))?;
        map.serialize_entry("listeners", &Rendered(&self.listeners))?;
        map.serialize_entry("routes", &Rendered(&self.routes))?;
        map.serialize_entry("secrets", &Rendered(&self.secrets))?;
        map.end()
    }
}

/// Resources rendered one at a time, as they are written.
struct Rendered<'s, 'a>(&'s [&'a (dyn Item + Sync)]);

impl Serialize for Rendered<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for item in self.0 {
            seq.serialize_element(&item.render())?;
        }
        seq.end()
    }
}

/// The `pier translate` document; see [`Translation::render`].
pub struct Document<'a> {
    resources: Sections<'a>,
    proxyless: Option<Sections<'a>>,
    statuses: Vec<&'a ObjectStatus>,
    warnings: &'a [String],
}

impl Serialize for Document<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let len = 6 + usize::from(self.proxyless.is_some()) + usize::from(!self.warnings.is_empty());
        let mut map = s.serialize_map(Some(len))?;
        self.entries(&mut MapEntries(&mut map))?;
        map.end()
    }
}

impl Translation {
    /// The `pier translate` document, to be written by any serializer: `clusters`, `endpoints`,
    /// `listeners`, `routes`, `secrets` (canonical proto3 JSON with proto field names), `proxyless` (the
    /// same five for gRPC clients, when a Gateway serves them anything), `status`, and `warnings` when
    /// there are any (what the reader skipped or overrode: part of the answer, not only of the log).
    pub fn render<'a>(&'a self, gateway: Option<&str>, warnings: &'a [String]) -> Result<Document<'a>, SelectError> {
        let proxyless = match gateway {
            Some(g) => self.proxyless.get(g).map(|p| Selected::of(p).sections()),
            None => Some(super::merge(&self.proxyless)?.sections()).filter(|p| !p.is_empty()),
        };
        Ok(Document {
            resources: self.select(gateway)?.sections(),
            proxyless,
            statuses: self.statuses.iter().collect(),
            warnings,
        })
    }
}

impl Engine {
    /// [`Translation::render`] of what the engine serves, rendered from its packed resources: the same
    /// bytes, without decoding every resource first.
    pub fn document<'a>(&'a self, gateway: Option<&str>, warnings: &'a [String]) -> Result<Document<'a>, SelectError> {
        let outs: BTreeMap<String, &GatewayOut> = self.gateways().map(|(k, out)| (k.to_string(), out)).collect();
        let chosen: Vec<(&str, &GatewayOut)> = match gateway {
            Some(g) => {
                let (name, out) = outs
                    .get_key_value(g)
                    .ok_or_else(|| SelectError::NoSuchGateway(g.to_string(), outs.keys().cloned().collect()))?;
                vec![(name.as_str(), *out)]
            }
            None => outs.iter().map(|(k, out)| (k.as_str(), *out)).collect(),
        };
        let grpc: Vec<(&str, &GatewayOut)> = chosen
            .iter()
            .filter_map(|(k, out)| Some((*k, out.grpc.as_deref()?)))
            .collect();
        // As `Translation::render`: one Gateway shows the set it has, the merge only a non-empty one.
        let proxyless = match gateway {
            Some(_) => (!grpc.is_empty()).then(|| packed(&grpc)).transpose()?,
            None => Some(packed(&grpc)?).filter(|p| !p.is_empty()),
        };
        Ok(Document {
            resources: packed(&chosen)?,
            proxyless,
            statuses: self.statuses().map().values().map(AsRef::as_ref).collect(),
            warnings,
        })
    }
}

/// The packed resources of the Gateways named, merged by name: equal versions are equal content.
fn packed<'a>(gateways: &[(&str, &'a GatewayOut)]) -> Result<Sections<'a>, SelectError> {
    type Of = fn(&GatewayOut) -> &imbl::OrdMap<String, std::sync::Arc<Res>>;
    let one = |kind: &'static str, of: Of| -> Result<Vec<&'a (dyn Item + Sync)>, SelectError> {
        let each = gateways
            .iter()
            .map(|(gw, out)| (*gw, of(out).iter().map(|(name, r)| (name.as_str(), r.as_ref()))));
        Ok(merged(kind, each)?
            .into_iter()
            .map(|r| r as &(dyn Item + Sync))
            .collect())
    };
    Ok(Sections {
        clusters: one("cluster", |o| &o.clusters)?,
        endpoints: one("ClusterLoadAssignment", |o| &o.endpoints)?,
        listeners: one("listener", |o| &o.listeners)?,
        routes: one("route configuration", |o| &o.routes)?,
        secrets: one("secret", |o| &o.secrets)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_hosts_take_their_sorted_place_among_the_header_keys() {
        let vhost = route::VirtualHost {
            name: "v".into(),
            domains: vec!["*".into()],
            ..Default::default()
        };
        let bytes = prost::Message::encode_to_vec(&vhost);
        let text = |header: Value, vhosts: Vec<&[u8]>| {
            serde_json::to_string(&Rendering::RouteConfiguration { header, vhosts }).expect("renders")
        };
        let v = r#"[{"domains":["*"],"name":"v"}]"#;
        let header = serde_json::json!({"a": 1, "zz": 2});
        assert_eq!(
            text(header.clone(), vec![&bytes]),
            format!(r#"{{"a":1,"virtual_hosts":{v},"zz":2}}"#)
        );
        assert_eq!(
            text(serde_json::json!({"a": 1}), vec![&bytes]),
            format!(r#"{{"a":1,"virtual_hosts":{v}}}"#)
        );
        assert_eq!(
            text(header, vec![]),
            r#"{"a":1,"zz":2}"#,
            "no virtual hosts: omitted, as proto3 JSON does"
        );
    }
}
