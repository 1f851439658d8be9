//! Envoy's Client Status Discovery Service (`envoy.service.status.v3.ClientStatusDiscoveryService`) on
//! the xDS port: for every connected proxy, its node, and per resource of each type what pier serves it
//! now and whether the proxy has it (`config_status`: `SYNCED`, `STALE` — sent, not acknowledged, or
//! something newer still to send — `ERROR` — rejected, with Envoy's message in `error_state` — or
//! `NOT_SENT`), the same states `pier proxy-status` prints ([`ConfigState`]).
//!
//! What it answers from: the client registry (each stream's last reported position) and the snapshot
//! cache (the newest configuration of each Gateway). So a `STALE` resource's contents are what pier is
//! about to serve, not what the proxy still runs. Secrets are listed by name and state but their
//! contents never leave through CSDS: they carry private keys.
//!
//! Who sees what: a caller with a client certificate sees the proxies of the Gateways its certificate
//! grants (`xds::identity`), as for ADS itself; a plaintext caller (loopback, or the operator's
//! insecure flag) sees every proxy. `node_matchers` select proxies by node id (exact, prefix, suffix,
//! contains; metadata and regex matchers are refused with `InvalidArgument`, never ignored).

use std::pin::Pin;
use std::sync::Arc;

use envoy_types::pb::envoy::admin::v3::{ClientResourceStatus, UpdateFailureState};
use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::status::v3::client_status_discovery_service_server::ClientStatusDiscoveryService;
use envoy_types::pb::envoy::service::status::v3::{
    ClientConfig, ClientStatusRequest, ClientStatusResponse, ConfigStatus, client_config::GenericXdsConfig,
};
use envoy_types::pb::envoy::r#type::matcher::v3::{NodeMatcher, string_matcher::MatchPattern};
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

use super::clients::{ClientInfo, ConfigState};
use super::identity::Identity;
use super::transport::PeerInfo;
use super::{Clients, SnapshotCache, XdsType};

/// The CSDS service. Cheap to clone.
#[derive(Clone)]
pub struct Csds {
    clients: Arc<Clients>,
    cache: Arc<SnapshotCache>,
}

impl Csds {
    pub fn new(clients: Arc<Clients>, cache: Arc<SnapshotCache>) -> Csds {
        Csds { clients, cache }
    }

    /// The answer to one request from a caller with `identity`.
    pub fn answer(&self, request: &ClientStatusRequest, identity: &Identity) -> Result<ClientStatusResponse, Status> {
        let matchers = Matchers::new(&request.node_matchers)?;
        let config = self
            .clients
            .list()
            .into_iter()
            .filter(|c| {
                c.gateway
                    .as_deref()
                    .map_or(*identity == Identity::Plaintext, |g| identity.allows(g))
            })
            .filter(|c| matchers.select(&c.node_id))
            .map(|c| self.client_config(&c, !request.exclude_resource_contents))
            .collect();
        Ok(ClientStatusResponse { config })
    }

    fn client_config(&self, client: &ClientInfo, contents: bool) -> ClientConfig {
        let snapshot = client.gateway.as_deref().and_then(|g| self.cache.get(g));
        let mut generic = Vec::new();
        for ty in XdsType::ALL {
            let state = client.state(ty);
            if state == ConfigState::NotRequested {
                continue;
            }
            let status = client.types.get(&ty);
            let version = status.and_then(|t| t.sent_version.clone()).unwrap_or_default();
            let error = status
                .and_then(|t| t.last_nack.as_ref())
                .filter(|_| state == ConfigState::Nacked)
                .map(|n| UpdateFailureState {
                    details: n.message.clone(),
                    version_info: n.version.clone(),
                    ..Default::default()
                });
            let Some(snapshot) = &snapshot else { continue };
            for (name, entry) in snapshot.view(ty).entries.iter() {
                generic.push(GenericXdsConfig {
                    type_url: ty.type_url().to_string(),
                    name: name.clone(),
                    version_info: version.clone(),
                    // Private keys never leave through CSDS.
                    xds_config: (contents && ty != XdsType::Secret).then(|| entry.resource().clone()),
                    config_status: config_status(state) as i32,
                    client_status: client_status(state) as i32,
                    error_state: error.clone(),
                    ..Default::default()
                });
            }
        }
        ClientConfig {
            node: Some(Node {
                id: client.node_id.clone(),
                cluster: client.cluster.clone(),
                ..Default::default()
            }),
            generic_xds_configs: generic,
            ..Default::default()
        }
    }
}

fn config_status(state: ConfigState) -> ConfigStatus {
    match state {
        ConfigState::Synced => ConfigStatus::Synced,
        ConfigState::Stale => ConfigStatus::Stale,
        ConfigState::Nacked => ConfigStatus::Error,
        ConfigState::NotSent | ConfigState::NotRequested => ConfigStatus::NotSent,
    }
}

fn client_status(state: ConfigState) -> ClientResourceStatus {
    match state {
        ConfigState::Synced => ClientResourceStatus::Acked,
        ConfigState::Nacked => ClientResourceStatus::Nacked,
        _ => ClientResourceStatus::Requested,
    }
}

/// Node-id matchers of a request (OR); none selects every proxy.
struct Matchers(Vec<(MatchPattern, bool)>);

impl Matchers {
    fn new(matchers: &[NodeMatcher]) -> Result<Matchers, Status> {
        let mut out = Vec::new();
        for (i, m) in matchers.iter().enumerate() {
            if !m.node_metadatas.is_empty() {
                return Err(Status::invalid_argument(format!(
                    "node_matchers[{i}].node_metadatas: pier matches on the node id only"
                )));
            }
            let id = m
                .node_id
                .as_ref()
                .and_then(|s| s.match_pattern.clone().map(|p| (p, s.ignore_case)));
            match id {
                Some((MatchPattern::SafeRegex(_) | MatchPattern::Custom(_), _)) => {
                    return Err(Status::invalid_argument(format!(
                        "node_matchers[{i}].node_id: exact, prefix, suffix or contains"
                    )));
                }
                Some(p) => out.push(p),
                None => return Err(Status::invalid_argument(format!("node_matchers[{i}].node_id is unset"))),
            }
        }
        Ok(Matchers(out))
    }

    fn select(&self, node_id: &str) -> bool {
        self.0.is_empty() || self.0.iter().any(|(p, ignore_case)| matches(p, *ignore_case, node_id))
    }
}

fn matches(pattern: &MatchPattern, ignore_case: bool, value: &str) -> bool {
    let fold = |s: &str| if ignore_case { s.to_lowercase() } else { s.to_string() };
    let v = fold(value);
    match pattern {
        MatchPattern::Exact(p) => v == fold(p),
        MatchPattern::Prefix(p) => v.starts_with(&fold(p)),
        MatchPattern::Suffix(p) => v.ends_with(&fold(p)),
        MatchPattern::Contains(p) => v.contains(&fold(p)),
        MatchPattern::SafeRegex(_) | MatchPattern::Custom(_) => false,
    }
}

/// The caller's identity, as the transport put it in the request; none means it did not come through
/// pier's transport, which is refused (fail closed).
fn identity<T>(request: &Request<T>) -> Result<Identity, Status> {
    request
        .extensions()
        .get::<PeerInfo>()
        .map(|p| p.identity.as_ref().clone())
        .ok_or_else(|| Status::unauthenticated("no transport identity for this connection"))
}

type Answers = Pin<Box<dyn Stream<Item = Result<ClientStatusResponse, Status>> + Send>>;

#[tonic::async_trait]
impl ClientStatusDiscoveryService for Csds {
    type StreamClientStatusStream = Answers;

    async fn stream_client_status(
        &self,
        request: Request<Streaming<ClientStatusRequest>>,
    ) -> Result<Response<Answers>, Status> {
        let identity = identity(&request)?;
        let csds = self.clone();
        let answers = request
            .into_inner()
            .map(move |r| r.and_then(|r| csds.answer(&r, &identity)));
        Ok(Response::new(Box::pin(answers)))
    }

    async fn fetch_client_status(
        &self,
        request: Request<ClientStatusRequest>,
    ) -> Result<Response<ClientStatusResponse>, Status> {
        let identity = identity(&request)?;
        self.answer(request.get_ref(), &identity).map(Response::new)
    }
}

#[cfg(test)]
mod tests;
