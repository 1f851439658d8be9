//! ReferenceGrant: may an object in one namespace refer to an object in another?
//!
//! Grants live in the *target* namespace; `from` entries name (group, kind, namespace) and `to`
//! entries (group, kind, optional name). Every field must match; entries are ORed. The model is a
//! snapshot, so removing a grant revokes access on the next translation.

use crate::api::consts::{CORE_GROUP, GATEWAY_GROUP, KIND_GATEWAY};
use crate::model::{Model, ObjectKey};

/// One side of a reference: group ("" for core), kind, namespace, name.
#[derive(Debug, Clone, Copy)]
pub struct RefEnd<'a> {
    pub group: &'a str,
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

/// May Gateway `gateway` use the core object (`Secret`, `ConfigMap`) `kind` `namespace/name`? Every
/// Gateway-side reference (listener certificates, the backend client certificate, frontend CAs) asks this.
pub fn gateway_may_use(model: &Model, gateway: &ObjectKey, kind: &str, namespace: &str, name: &str) -> bool {
    let from = RefEnd {
        group: GATEWAY_GROUP,
        kind: KIND_GATEWAY,
        namespace: &gateway.namespace,
        name: &gateway.name,
    };
    let to = RefEnd {
        group: CORE_GROUP,
        kind,
        namespace,
        name,
    };
    permitted(model, from, to)
}

/// True if `from` may reference `to`: same namespace, or a ReferenceGrant in `to.namespace` allows it.
pub fn permitted(model: &Model, from: RefEnd<'_>, to: RefEnd<'_>) -> bool {
    if from.namespace == to.namespace {
        return true;
    }
    model.reference_grants.in_namespace(to.namespace).any(|(_, grant)| {
        let from_ok = grant
            .spec
            .from
            .iter()
            .any(|f| f.group == from.group && f.kind == from.kind && f.namespace == from.namespace);
        let to_ok = grant
            .spec
            .to
            .iter()
            .any(|t| t.group == to.group && t.kind == to.kind && t.name.as_deref().is_none_or(|n| n == to.name));
        from_ok && to_ok
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(grants: &str) -> Model {
        crate::model::load::parse_texts(&[("g.yaml".to_string(), grants.to_string())])
            .expect("grants parse")
            .model
    }

    const FROM: RefEnd<'static> = RefEnd {
        group: "gateway.networking.k8s.io",
        kind: "Gateway",
        namespace: "infra",
        name: "gw",
    };
    const TO: RefEnd<'static> = RefEnd {
        group: "",
        kind: "Secret",
        namespace: "certs",
        name: "cert",
    };

    /// A grant in `ns` with one from and one to entry.
    fn grant(ns: &str, from: (&str, &str, &str), to: (&str, &str, Option<&str>)) -> String {
        let name = to.2.map(|n| format!(", name: {n}")).unwrap_or_default();
        format!(
            "apiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\nmetadata: {{name: g, namespace: {ns}}}\nspec:\n  from: [{{group: '{}', kind: {}, namespace: {}}}]\n  to: [{{group: '{}', kind: {}{name}}}]\n",
            from.0, from.1, from.2, to.0, to.1
        )
    }

    #[test]
    fn every_field_is_honoured() {
        let ok_from = ("gateway.networking.k8s.io", "Gateway", "infra");
        let ok_to = ("", "Secret", Some("cert"));
        let table = [
            ("matching grant", grant("certs", ok_from, ok_to), true),
            (
                "to.name omitted: every Secret",
                grant("certs", ok_from, ("", "Secret", None)),
                true,
            ),
            (
                "grant outside the target namespace",
                grant("infra", ok_from, ok_to),
                false,
            ),
            (
                "from.group",
                grant("certs", ("example.com", "Gateway", "infra"), ok_to),
                false,
            ),
            (
                "from.kind",
                grant("certs", ("gateway.networking.k8s.io", "HTTPRoute", "infra"), ok_to),
                false,
            ),
            (
                "from.namespace",
                grant("certs", ("gateway.networking.k8s.io", "Gateway", "other"), ok_to),
                false,
            ),
            (
                "to.group",
                grant("certs", ok_from, ("example.com", "Secret", Some("cert"))),
                false,
            ),
            (
                "to.kind",
                grant("certs", ok_from, ("", "ConfigMap", Some("cert"))),
                false,
            ),
            ("to.name", grant("certs", ok_from, ("", "Secret", Some("other"))), false),
            // Removing the grant revokes access: the next translation sees no grant.
            ("no grant", String::new(), false),
        ];
        for (case, yaml, want) in table {
            assert_eq!(permitted(&model(&yaml), FROM, TO), want, "{case}");
        }
        let same_ns = RefEnd {
            namespace: "infra",
            ..TO
        };
        assert!(permitted(&model(""), FROM, same_ns), "same namespace needs no grant");
    }
}
