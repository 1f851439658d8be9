//! Whether a stream may go on, and what pier records when it may not: a request within the bounds and
//! from a client allowed the Gateway it names (`admit`), and a failed stream logged, counted and
//! remembered for `/debug/clients` (`failed`, `request_failed`).

// The stream's own types and imports: this is stream/mod.rs's admission half, split off.
use super::*;

/// A request stream that ended in error: logged (a refusal at warn, throttled, with the option that
/// raises the bound), counted, remembered for `/debug/clients`; the status to end the call with, if the
/// proxy can still hear it.
pub(super) fn request_failed(
    shared: &Shared,
    conn: &PeerInfo,
    peer: Option<&Peer>,
    error: &RequestError,
) -> Option<Status> {
    let message = error.to_string();
    failed(shared, conn, peer, None, &message);
    match error {
        RequestError::TooLarge { .. } => {
            refuse_detailed(
                &shared.metrics,
                Refused::RequestTooLarge,
                conn.addr,
                "--xds-max-request-bytes",
                &message,
            );
            Some(Status::resource_exhausted(message))
        }
        RequestError::Compressed => Some(Status::unimplemented(message)),
        RequestError::Decode(_) => {
            warn!(error = %message, "an xDS request did not decode; ending the stream");
            Some(Status::invalid_argument(message))
        }
        RequestError::Truncated | RequestError::Transport(_) => {
            debug!(error = %message, "stream ended with an error");
            None
        }
    }
}

/// Remembers a stream that ended in failure (`xds::failures`) and counts it.
pub(super) fn failed(shared: &Shared, conn: &PeerInfo, peer: Option<&Peer>, node: Option<&Node>, error: &str) {
    let identity = conn.identity.describe();
    let who = Who {
        peer: conn.addr,
        identity: &identity,
        node: peer.map(|p| p.node_id.as_str()).or(node.map(|n| n.id.as_str())),
        gateway: peer.and_then(|p| p.gateway.as_deref()),
    };
    shared.clients.failures.record(who, error);
    shared.metrics.stream_failed();
}

/// The bounds and the authorization, checked on every request (the node on the first only): `Err` is the
/// status the stream ends with.
pub(super) fn admit<M: Machine>(
    shared: &Shared,
    conn: &PeerInfo,
    first: bool,
    request: &M::Request,
) -> Result<(), Status> {
    let limits = &shared.limits;
    let names = M::names(request);
    let max_names = shared.bounds.resource_names();
    if names > max_names {
        let detail = format!("the request lists {names} resource names; the limit is {max_names}");
        refuse_detailed(
            &shared.metrics,
            Refused::TooManyNames,
            conn.addr,
            "--xds-max-resource-names",
            &detail,
        );
        return Err(Status::resource_exhausted(format!(
            "{detail} (--xds-max-resource-names)"
        )));
    }
    if !first {
        return Ok(());
    }
    let node = M::node(request);
    let size = node.map_or(0, prost::Message::encoded_len);
    if size > limits.max_node_bytes {
        refuse(
            &shared.metrics,
            Refused::NodeTooLarge,
            conn.addr,
            "--xds-max-node-bytes",
        );
        return Err(Status::invalid_argument(format!(
            "node is {size} bytes; the limit is {} (--xds-max-node-bytes)",
            limits.max_node_bytes
        )));
    }
    let cluster = node.map_or("", |n| n.cluster.as_str());
    if conn.identity.allows(cluster) {
        return Ok(());
    }
    refuse(
        &shared.metrics,
        Refused::PermissionDenied,
        conn.addr,
        "the client certificate's SPIFFE IDs",
    );
    warn!(
        identity = %short(&conn.identity.describe()),
        cluster = %short(cluster),
        "xDS client asked for a Gateway its certificate does not grant"
    );
    Err(Status::permission_denied(format!(
        "this client's certificate ({}) does not grant Gateway {:?}",
        short(&conn.identity.describe()),
        short(cluster)
    )))
}
