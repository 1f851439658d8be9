use super::*;

#[test]
fn nacks_are_per_gateway_and_cleared_by_an_ack() {
    let clients = Clients::new();
    let a = clients.register("n1", "ns/a", Some("ns/a"), Mode::Sotw, "plaintext");
    let b = clients.register(
        "n2\nforged",
        "ns/b",
        Some("ns/b"),
        Mode::Delta,
        "spiffe://pier.local/ns/ns/gateway/b",
    );
    clients.sent(a, XdsType::Cluster, "v2");
    clients.nacked(a, XdsType::Cluster, "v2", "bad cluster");
    clients.nacked(b, XdsType::Route, "v1", "bad route\n2026-01-01 INFO forged");
    let url = XdsType::Cluster.type_url().to_string();
    assert_eq!(
        clients.nacks_for_gateway("ns/a"),
        vec![(url, "bad cluster".to_string())]
    );
    clients.acked(a, XdsType::Cluster, "v3");
    assert!(clients.nacks_for_gateway("ns/a").is_empty());
    let json = clients.to_json();
    assert_eq!(json["clients"][0]["types"]["clusters"]["nack_count"], 1);
    assert_eq!(json["clients"][1]["mode"], "delta");
    // Client strings are escaped: a newline cannot start a line of its own wherever they are shown.
    assert_eq!(json["clients"][1]["node"], r"n2\nforged");
    assert_eq!(
        json["clients"][1]["types"]["routes"]["last_nack"]["message"],
        r"bad route\n2026-01-01 INFO forged"
    );
    assert_eq!(json["clients"][1]["identity"], "spiffe://pier.local/ns/ns/gateway/b");
    clients.remove(a);
    assert_eq!(clients.len(), 1);
}

#[test]
fn the_verdict_reads_positions_from_the_publish_on() {
    let clients = Clients::new();
    assert_eq!(clients.verdict(1), Verdict::Unjudged);
    let a = clients.register("n1", "ns/a", Some("ns/a"), Mode::Sotw, "plaintext");
    let b = clients.register("n2", "ns/b", Some("ns/b"), Mode::Delta, "plaintext");
    assert_eq!(clients.verdict(1), Verdict::Busy, "no position yet");
    let sync = |generation, route| ClientSync {
        generation,
        promoted: true,
        types: [(XdsType::Cluster, TypeSync::Applied), (XdsType::Route, route)].into(),
    };
    let events = clients.events();
    clients.synced(a, sync(1, TypeSync::Applied));
    clients.synced(b, sync(1, TypeSync::Applied));
    assert!(events.has_changed().unwrap());
    assert_eq!(clients.verdict(1), Verdict::Applied);
    assert_eq!(clients.verdict(2), Verdict::Busy, "positions from before the publish");
    clients.nacked(b, XdsType::Route, "v2", "bad regex");
    clients.synced(b, sync(2, TypeSync::Rejected));
    clients.synced(a, sync(2, TypeSync::Pending));
    assert_eq!(
        clients.verdict(2),
        Verdict::Rejected {
            gateway: "ns/b".into(),
            type_url: XdsType::Route.type_url().into(),
            message: "bad regex".into(),
        }
    );
    clients.remove(b);
    assert_eq!(clients.verdict(2), Verdict::Busy);
    clients.synced(
        a,
        ClientSync {
            promoted: false,
            ..sync(2, TypeSync::Applied)
        },
    );
    assert_eq!(
        clients.verdict(2),
        Verdict::Busy,
        "listeners and routes not yet from the newest snapshot"
    );
}
