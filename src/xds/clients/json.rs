//! The registry as `/debug/clients` shows it.

use serde_json::{Value, json};

use super::super::XdsType;
use super::Clients;

impl Clients {
    /// `/debug/clients`: `{"clients": [{id, node, cluster, gateway, mode, agent, user_agent,
    /// certificate_providers, connected_at_unix,
    /// recent_failures, types: {clusters: {state, sent_version, acked_version, nack_count, rejecting,
    /// last_nack: {version, message}}}, states: {clusters: SYNCED, ...}}], "failing": [...]}`.
    /// `states` has every type's [`ConfigState`]; `types` the ones sent or answered at least once;
    /// `recent_failures` counts the proxy's streams that failed in the last ten minutes, and `failing`
    /// lists every failed stream's peer ([`Failures::to_json`]), connected or not.
    pub fn to_json(&self) -> Value {
        let clients: Vec<Value> = self
            .list()
            .into_iter()
            .map(|c| {
                let types: serde_json::Map<String, Value> = c
                    .types
                    .iter()
                    .map(|(ty, t)| {
                        let nack = t
                            .last_nack
                            .as_ref()
                            .map(|n| json!({"version": n.version, "message": n.message}));
                        let status = json!({
                            "type_url": ty.type_url(),
                            "state": c.state(*ty).as_str(),
                            "sent_version": t.sent_version,
                            "acked_version": t.acked_version,
                            "nack_count": t.nack_count,
                            "rejecting": t.rejecting,
                            "last_nack": nack,
                        });
                        (ty.as_str().to_string(), status)
                    })
                    .collect();
                let states: serde_json::Map<String, Value> = XdsType::ALL
                    .into_iter()
                    .map(|ty| (ty.as_str().to_string(), json!(c.state(ty).as_str())))
                    .collect();
                json!({
                    "id": c.id,
                    "node": c.node_id,
                    "cluster": c.cluster,
                    "gateway": c.gateway,
                    "identity": c.identity,
                    "mode": c.mode.as_str(),
                    "agent": c.agent.as_str(),
                    "user_agent": c.user_agent,
                    "certificate_providers": c.certificate_providers,
                    "connected_at_unix": c.connected_at_unix,
                    "recent_failures": self.failures.recent(&c.identity, &c.node_id),
                    "states": states,
                    "types": types,
                })
            })
            .collect();
        json!({ "clients": clients, "failing": self.failures.to_json() })
    }
}
