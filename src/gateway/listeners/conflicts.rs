//! Distinct listeners (Gateway API `GatewaySpec.Listeners`, "Handling indistinct Listeners"): on one
//! port, HTTP and HTTPS listeners must share a protocol and differ by hostname. Every indistinct
//! listener is refused — the spec forbids picking a winner — with `Conflicted=True` and
//! `Accepted=False`, both carrying `HostnameConflict` or `ProtocolConflict`. Listeners that are
//! already refused (an unsupported protocol such as TCP) take no part: pier serves no TCP, so the
//! spec's "a TCP listener on the port makes the others indistinct" rule does not apply.

use std::collections::BTreeMap;

use super::super::conditions::{Condition, ListenerReason as Reason, ListenerType as Type, Status};
use super::{ListenerInfo, Protocol};

/// Marks conflicts and sets each listener's `Conflicted` and `Programmed` conditions.
pub(super) fn mark(ls: &mut [ListenerInfo], g: i64) {
    for (i, why) in find(ls) {
        let l = &mut ls[i];
        l.programmable = false;
        // Nothing attaches to a refused listener.
        let msg = if why == Reason::ProtocolConflict {
            "another listener on this port uses a different protocol"
        } else {
            "another listener on this port has the same protocol and hostname"
        };
        l.conditions[0] = Condition::fail(Type::Accepted, why, msg, g);
        l.conditions
            .push(Condition::new(Type::Conflicted, Status::True, why, msg, g));
    }
    for l in ls.iter_mut() {
        if !l.conditions.iter().any(|c| c.type_ == Type::Conflicted) {
            l.conditions.push(Condition::new(
                Type::Conflicted,
                Status::False,
                Reason::NoConflicts,
                "No conflicts",
                g,
            ));
        }
        let programmed = if l.programmable {
            Condition::ok(Type::Programmed, Reason::Programmed, "Listener programmed", g)
        } else {
            Condition::fail(
                Type::Programmed,
                Reason::Invalid,
                "Listener is not programmed; see its other conditions",
                g,
            )
        };
        l.conditions.push(programmed);
    }
}

/// Indices of indistinct listeners and why. A protocol conflict on a port refuses every listener on
/// it; otherwise listeners with equal hostnames (both empty included) conflict pairwise.
fn find(ls: &[ListenerInfo]) -> BTreeMap<usize, Reason> {
    let mut by_port: BTreeMap<u16, Vec<usize>> = BTreeMap::new();
    for (i, l) in ls.iter().enumerate() {
        if l.conditions[0].status == Status::True {
            by_port.entry(l.port).or_default().push(i);
        }
    }
    let mut conflicts = BTreeMap::new();
    for idx in by_port.values() {
        let first: Protocol = ls[idx[0]].protocol;
        if idx.iter().any(|&i| ls[i].protocol != first) {
            conflicts.extend(idx.iter().map(|&i| (i, Reason::ProtocolConflict)));
            continue;
        }
        for (a, &i) in idx.iter().enumerate() {
            for &j in &idx[a + 1..] {
                if ls[i].hostname == ls[j].hostname {
                    conflicts.insert(i, Reason::HostnameConflict);
                    conflicts.insert(j, Reason::HostnameConflict);
                }
            }
        }
    }
    conflicts
}
