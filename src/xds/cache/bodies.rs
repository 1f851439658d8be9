//! State-of-the-world response bodies, encoded once per view and subscription and shared by every
//! stream that is sent them.
//!
//! Why: a change reaches every proxy of a Gateway with the same response — the same view, and for the
//! named types the same names, since every Envoy of a Gateway asks for the same ones. Encoding it per
//! stream cloned each resource and encoded the lot again, 10,000 times for 10,000 proxies; that was
//! the SotW fan-out's tail (docs/performance.md). A body is every field of a `DiscoveryResponse` but
//! the nonce; protobuf fields may come in any order and a message is the concatenation of its fields,
//! so a stream frames its own nonce ahead of the shared bytes (`xds::grpc`) and the proxy decodes the
//! same message.
//!
//! Memory: the view keeps only weak references (`memo`). A stream holds its body until the proxy ACKs or NACKs
//! it (`sotw`), so a body lives while a fan-out is in flight and is freed once the fleet has answered;
//! an idle fleet holds no encoded copy of anything.

use std::collections::BTreeSet;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, OnceLock};

use envoy_types::pb::google::protobuf::Any;
use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint, key_len, message};

use super::memo::WeakMemo;
use super::{Entries, View};
use crate::snapshot::Res;

/// Distinct subscriptions of one view whose bodies are kept shareable; beyond that a body is encoded
/// for its stream alone (a fleet whose proxies all ask differently gains nothing from sharing).
const MAX_SHARED: usize = 64;

/// A response's fields other than the nonce, encoded, and how many resources it carries.
#[derive(Debug)]
pub struct Body {
    pub bytes: Vec<u8>,
    pub resources: usize,
}

/// Which resources of a view a stream is sent.
#[derive(Debug, Clone, Copy)]
pub enum Selection<'a> {
    All,
    /// The names a stream asked for, and their [`names_key`].
    Named(&'a BTreeSet<String>, u64),
    /// The names a stream asked for, less those its proxy already holds as they are: what it holds is
    /// `held`'s resources for `held`'s names (`sotw`, endpoints, routes and secrets).
    Since(&'a BTreeSet<String>, u64, &'a Held),
}

/// What a proxy holds of a named type: the view of its last acknowledged response, the names that
/// response answered, and their [`names_key`]. The `Arc`s are the snapshot's view and the stream's own
/// names, so holding one copies nothing.
#[derive(Debug, Clone)]
pub struct Held {
    pub view: Arc<View>,
    pub names: Arc<BTreeSet<String>>,
    pub names_key: u64,
}

impl Held {
    /// Whether the proxy already holds `name` as `entry` is: it asked for it then, and it had the same
    /// content (a fingerprint covers the name, and a load assignment's its cluster's too).
    fn holds(&self, name: &str, entry: &Res) -> bool {
        self.names.contains(name)
            && self
                .view
                .entries
                .get(name)
                .is_some_and(|held| held.fingerprint == entry.fingerprint)
    }
}

/// A subscription's identity: the keyed hash of its names. The key is random per process, so no
/// client can choose names that collide with another subscription's.
pub fn names_key(names: &BTreeSet<String>) -> u64 {
    static KEY: OnceLock<RandomState> = OnceLock::new();
    KEY.get_or_init(RandomState::new).hash_one(names)
}

/// A view's shareable bodies, by type URL and subscription (`None`: every resource). A view holds one
/// type, but the type is in the key all the same: a body must never go out under another type.
pub type Bodies = WeakMemo<Key, Body, MAX_SHARED>;

/// A body's identity: its type URL, its subscription (`None`: every resource), and for a
/// [`Selection::Since`] the held view's version and names.
#[derive(Debug, PartialEq)]
pub struct Key {
    type_url: &'static str,
    names: Option<u64>,
    since: Option<(String, u64)>,
}

impl Key {
    fn is(&self, type_url: &str, names: Option<u64>, since: Option<(&str, u64)>) -> bool {
        self.type_url == type_url && self.names == names && self.since.as_ref().map(|(v, k)| (v.as_str(), *k)) == since
    }
}

impl Bodies {
    /// The body of `selection` of `entries` at `version`, shared with every stream sent the same one
    /// while any of them holds it.
    pub fn body(
        &self,
        version: &str,
        type_url: &'static str,
        entries: &Entries,
        selection: Selection<'_>,
    ) -> Arc<Body> {
        let (names, since) = match selection {
            Selection::All => (None, None),
            Selection::Named(_, key) => (Some(key), None),
            Selection::Since(_, key, held) => (Some(key), Some((held.view.version.as_str(), held.names_key))),
        };
        self.get(
            |k| k.is(type_url, names, since),
            || Key {
                type_url,
                names,
                since: since.map(|(v, k)| (v.to_string(), k)),
            },
            || {
                let resources: Vec<&Any> = match selection {
                    Selection::All => entries.values().map(|e| e.resource()).collect(),
                    Selection::Named(names, _) => names
                        .iter()
                        .filter_map(|n| entries.get(n))
                        .map(|e| e.resource())
                        .collect(),
                    Selection::Since(names, _, held) => names
                        .iter()
                        .filter_map(|n| entries.get(n).filter(|e| !held.holds(n, e)))
                        .map(|e| e.resource())
                        .collect(),
                };
                Arc::new(encode(version, type_url, &resources))
            },
        )
    }
}

/// `version_info` (1), `resources` (2) and `type_url` (4) of a `DiscoveryResponse`, as prost would
/// encode them.
fn encode(version: &str, type_url: &str, resources: &[&Any]) -> Body {
    let len = resources.iter().map(|r| message::encoded_len(2, *r)).sum::<usize>()
        + text_len(1, version)
        + text_len(4, type_url);
    let mut bytes = Vec::with_capacity(len);
    if !version.is_empty() {
        text(1, version, &mut bytes);
    }
    for resource in resources {
        message::encode(2, *resource, &mut bytes);
    }
    text(4, type_url, &mut bytes);
    Body {
        bytes,
        resources: resources.len(),
    }
}

/// A string field (length-delimited), as prost encodes it.
pub fn text(tag: u32, value: &str, buf: &mut Vec<u8>) {
    encode_key(tag, WireType::LengthDelimited, buf);
    encode_varint(value.len() as u64, buf);
    buf.extend_from_slice(value.as_bytes());
}

/// What [`text`] writes, in bytes.
pub fn text_len(tag: u32, value: &str) -> usize {
    key_len(tag) + encoded_len_varint(value.len() as u64) + value.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envoy::pb::cluster;
    use envoy_types::pb::envoy::service::discovery::v3::DiscoveryResponse;
    use prost::Message;

    fn entries(names: &[&str]) -> Entries {
        names
            .iter()
            .map(|n| {
                let c = cluster::Cluster {
                    name: n.to_string(),
                    ..Default::default()
                };
                (n.to_string(), Arc::new(Res::message(&c)))
            })
            .collect()
    }

    const URL: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

    #[test]
    fn a_body_decodes_as_the_response_prost_would_have_encoded() {
        let entries = entries(&["a", "b", "c"]);
        let names = BTreeSet::from(["c".to_string(), "a".to_string(), "zz".to_string()]);
        for (selection, want) in [
            (Selection::All, vec!["a", "b", "c"]),
            (Selection::Named(&names, names_key(&names)), vec!["a", "c"]),
        ] {
            let body = Bodies::default().body("v1", URL, &entries, selection);
            let expected = DiscoveryResponse {
                version_info: "v1".into(),
                resources: want.iter().map(|n| entries[*n].resource().clone()).collect(),
                type_url: URL.into(),
                ..Default::default()
            };
            assert_eq!(body.bytes, expected.encode_to_vec());
            assert_eq!(body.resources, want.len());
        }
    }

    #[test]
    fn streams_asking_alike_share_one_body_while_one_holds_it() {
        let entries = entries(&["a", "b"]);
        let bodies = Bodies::default();
        let one = BTreeSet::from(["a".to_string()]);
        let other = BTreeSet::from(["b".to_string()]);
        let held = bodies.body("v", URL, &entries, Selection::All);
        assert!(Arc::ptr_eq(&held, &bodies.body("v", URL, &entries, Selection::All)));
        let named = bodies.body("v", URL, &entries, Selection::Named(&one, names_key(&one)));
        assert!(!Arc::ptr_eq(&held, &named));
        let b = bodies.body("v", URL, &entries, Selection::Named(&other, names_key(&other)));
        assert_eq!((named.resources, b.resources), (1, 1));
        assert_ne!(named.bytes, b.bytes, "another subscription is another body");
        let weak = Arc::downgrade(&held);
        drop(held);
        assert!(weak.upgrade().is_none(), "nothing is kept once no stream holds it");
        assert_ne!(names_key(&one), names_key(&other));
        let held = bodies.body("v", URL, &entries, Selection::All);
        let other_type = bodies.body("v", "type.googleapis.com/other", &entries, Selection::All);
        assert!(!Arc::ptr_eq(&held, &other_type), "never shared across types");
    }

    #[test]
    fn sharing_is_bounded() {
        let entries = entries(&["a"]);
        let bodies = Bodies::default();
        let held: Vec<_> = (0..MAX_SHARED + 5)
            .map(|i| {
                let names = BTreeSet::from([format!("n{i}")]);
                bodies.body("v", URL, &entries, Selection::Named(&names, names_key(&names)))
            })
            .collect();
        assert_eq!(bodies.len(), MAX_SHARED);
        assert_eq!(held.len(), MAX_SHARED + 5);
    }

    #[test]
    fn since_sends_only_what_the_proxy_does_not_hold_as_it_is() {
        let held_entries = entries(&["a", "b", "c"]);
        let mut now = held_entries.clone();
        let changed = cluster::Cluster {
            name: "b".into(),
            alt_stat_name: "changed".into(),
            ..Default::default()
        };
        now.insert("b".into(), Arc::new(Res::message(&changed)));
        now.insert("d".into(), entries(&["d"])["d"].clone());
        let held_names = BTreeSet::from(["a".to_string(), "b".to_string()]);
        let held = Held {
            view: Arc::new(View::new(held_entries)),
            names_key: names_key(&held_names),
            names: Arc::new(held_names),
        };
        let names: BTreeSet<String> = ["a", "b", "c", "d", "zz"].map(String::from).into();
        let since = Selection::Since(&names, names_key(&names), &held);
        let bodies = Bodies::default();
        let body = bodies.body("v2", URL, &now, since);
        // a: held as it is; b: changed; c: not asked for then; d: new; zz: does not exist.
        let expected = DiscoveryResponse {
            version_info: "v2".into(),
            resources: ["b", "c", "d"].map(|n| now[n].resource().clone()).to_vec(),
            type_url: URL.into(),
            ..Default::default()
        };
        assert_eq!(body.bytes, expected.encode_to_vec());
        assert!(Arc::ptr_eq(&body, &bodies.body("v2", URL, &now, since)));
        let all = bodies.body("v2", URL, &now, Selection::Named(&names, names_key(&names)));
        assert_eq!(all.resources, 4, "a whole subscription is another body");
        // The same names held at another view (one without c).
        let other = Held {
            view: Arc::new(View::new(entries(&["a", "b"]))),
            ..held.clone()
        };
        let older = bodies.body("v2", URL, &now, Selection::Since(&names, names_key(&names), &other));
        assert!(!Arc::ptr_eq(&body, &older), "what another view holds is another body");
    }
}
