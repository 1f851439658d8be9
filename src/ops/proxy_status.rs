//! `pier proxy-status`: one line per connected proxy — node, Gateway, ADS mode, agent (`envoy`, or `grpc`
//! for a proxyless gRPC client: `docs/proxyless-grpc.md`) and, per type, whether
//! it runs what pier serves (`SYNCED`), has been sent something it has not acknowledged or has
//! something newer to receive (`STALE`), rejected it (`NACKED`, with Envoy's message below the table),
//! has asked and been sent nothing (`NOT_SENT`), or never asked (`-`) — with the version it runs or was
//! sent. Below the table: what proxies rejected (Envoy's message), and streams that failed in the last ten
//! minutes (`xds::failures`) — a proxy stuck in a reconnect loop is connected for a moment at a time, so
//! it shows there, with how often and why, rather than in the table. Read from the admin API's
//! `/debug/clients` (`xds::clients`), so it needs no xDS credentials.

use serde_json::Value;

/// The columns, in the order Envoy applies the types: (`/debug/clients` key, xDS service).
const TYPES: [(&str, &str); 5] = [
    ("clusters", "CDS"),
    ("endpoints", "EDS"),
    ("listeners", "LDS"),
    ("routes", "RDS"),
    ("secrets", "SDS"),
];
/// Versions are content hashes; this many characters tell two apart.
const VERSION_CHARS: usize = 8;

/// The table (and the rejections under it) for a `/debug/clients` document.
pub fn render(doc: &Value) -> String {
    let clients = doc["clients"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut out = if clients.is_empty() {
        "no proxy is connected\n".to_string()
    } else {
        connected(clients)
    };
    out.push_str(&failing(
        doc["failing"].as_array().map(Vec::as_slice).unwrap_or_default(),
    ));
    out
}

/// `  envoy-1 (10.0.0.1:4412, gateway ns/gw): 14 failed streams, the last 3s before this read: <error>`
fn failing(entries: &[Value]) -> String {
    if entries.is_empty() {
        return String::new();
    }
    let latest = entries
        .iter()
        .filter_map(|e| e["last_unix"].as_u64())
        .max()
        .unwrap_or(0);
    let mut out = String::from("\nStreams that failed in the last 10 minutes (a proxy that keeps reconnecting):\n");
    for e in entries {
        let who = e["node"].as_str().unwrap_or("(node not read)");
        let gateway = e["gateway"]
            .as_str()
            .map(|g| format!(", gateway {g}"))
            .unwrap_or_default();
        let ago = latest.saturating_sub(e["last_unix"].as_u64().unwrap_or(0));
        out.push_str(&format!(
            "  {who} ({peer}{gateway}, {identity}): {n} failed, the last {ago}s before the newest: {error}\n",
            peer = text(&e["peer"]),
            identity = text(&e["identity"]),
            n = e["failures"].as_u64().unwrap_or(0),
            error = text(&e["last_error"]),
        ));
    }
    out
}

/// The table of connected proxies, and their rejections.
fn connected(clients: &[Value]) -> String {
    let mut rows = vec![
        ["NODE", "GATEWAY", "MODE", "AGENT"]
            .into_iter()
            .chain(TYPES.iter().map(|(_, s)| *s))
            .map(str::to_string)
            .collect::<Vec<_>>(),
    ];
    let mut nacks = Vec::new();
    for c in clients {
        let node = text(&c["node"]);
        let agent = c["agent"].as_str().unwrap_or("envoy").to_string();
        let mut row = vec![node.clone(), text(&c["gateway"]), text(&c["mode"]), agent];
        for (key, service) in TYPES {
            let state = c["states"][key].as_str().unwrap_or("NOT_SENT");
            let t = &c["types"][key];
            row.push(cell(state, t));
            if state == "NACKED" {
                let message = t["last_nack"]["message"].as_str().unwrap_or("(no message)");
                nacks.push(format!("{node} {service}: {message}"));
            }
        }
        rows.push(row);
    }
    let mut out = table(&rows);
    if !nacks.is_empty() {
        out.push_str("\nRejected by the proxy (its own message):\n");
        for n in nacks {
            out.push_str(&format!("  {n}\n"));
        }
    }
    out
}

fn text(v: &Value) -> String {
    v.as_str().map_or_else(|| "-".to_string(), str::to_string)
}

/// `SYNCED abcd1234`: the state and the version it concerns (acknowledged, rejected or sent).
fn cell(state: &str, t: &Value) -> String {
    let version = match state {
        "SYNCED" => t["acked_version"].as_str(),
        "NACKED" => t["last_nack"]["version"].as_str(),
        "STALE" => t["sent_version"].as_str(),
        "NOT_REQUESTED" => return "-".to_string(),
        _ => None,
    };
    match version {
        Some(v) if !v.is_empty() => format!("{state} {}", v.chars().take(VERSION_CHARS).collect::<String>()),
        _ => state.to_string(),
    }
}

fn table(rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn one_line_per_proxy_and_rejections_below() {
        let doc = json!({"clients": [
            {"node": "envoy-1", "gateway": "default/gw", "mode": "delta",
             "states": {"clusters": "SYNCED", "endpoints": "SYNCED", "listeners": "STALE",
                        "routes": "NOT_SENT", "secrets": "NOT_REQUESTED"},
             "types": {"clusters": {"acked_version": "0123456789abcdef"},
                       "endpoints": {"acked_version": "fedcba9876543210"},
                       "listeners": {"sent_version": "aaaabbbbccccdddd", "acked_version": "1111222233334444"}}},
            {"node": "grpc-2", "gateway": "default/gw", "mode": "sotw", "agent": "grpc",
             "states": {"clusters": "SYNCED", "endpoints": "SYNCED", "listeners": "SYNCED",
                        "routes": "NACKED", "secrets": "SYNCED"},
             "types": {"routes": {"last_nack": {"version": "99998888", "message": "invalid regex"}}}}
        ]});
        let out = render(&doc);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "NODE     GATEWAY     MODE   AGENT  CDS              EDS              LDS             RDS              SDS"
        );
        assert_eq!(
            lines[1],
            "envoy-1  default/gw  delta  envoy  SYNCED 01234567  SYNCED fedcba98  STALE aaaabbbb  NOT_SENT         -"
        );
        assert_eq!(
            lines[2],
            "grpc-2   default/gw  sotw   grpc   SYNCED           SYNCED           SYNCED          NACKED 99998888  SYNCED"
        );
        assert_eq!(
            &lines[4..],
            [
                "Rejected by the proxy (its own message):",
                "  grpc-2 RDS: invalid regex"
            ]
        );
        assert_eq!(render(&json!({"clients": []})), "no proxy is connected\n");
    }

    #[test]
    fn a_proxy_in_a_reconnect_loop_is_listed_with_why() {
        let doc = json!({"clients": [], "failing": [
            {"peer": "10.0.0.7:41234", "identity": "spiffe://pier.local/ns/apps/gateway/edge", "node": "envoy-7",
             "gateway": "apps/edge", "failures": 14, "last_unix": 1000,
             "last_error": "a 5601163-byte request is over the 4194304-byte limit (--xds-max-request-bytes)"},
            {"peer": "10.0.0.8:5000", "identity": "plaintext", "node": null, "gateway": null,
             "failures": 1, "last_unix": 990, "last_error": "the request stream ended inside a message"}
        ]});
        let out = render(&doc);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                "no proxy is connected",
                "",
                "Streams that failed in the last 10 minutes (a proxy that keeps reconnecting):",
                "  envoy-7 (10.0.0.7:41234, gateway apps/edge, spiffe://pier.local/ns/apps/gateway/edge): 14 failed, \
                 the last 0s before the newest: a 5601163-byte request is over the 4194304-byte limit (--xds-max-request-bytes)",
                "  (node not read) (10.0.0.8:5000, plaintext): 1 failed, the last 10s before the newest: \
                 the request stream ended inside a message",
            ]
        );
    }
}
