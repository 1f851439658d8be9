use super::*;
use crate::api::backend::BackendShape;
use crate::api::xbackend::BackendTlsMode;

const ALL_KINDS: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: pier}
spec: {controllerName: pier.dev/gateway}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: pier
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r}
spec:
  parentRefs: [{name: gw, namespace: infra}]
  rules: [{backendRefs: [{name: web, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: g}
spec: {parentRefs: [{name: gw}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: ReferenceGrant
metadata: {name: rg}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: app}]
  to: [{group: "", kind: Service}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: tls}
spec:
  targetRefs: [{group: "", kind: Service, name: web}]
  validation: {hostname: web.example.com, wellKnownCACertificates: System}
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: openai}
spec:
  type: ExternalHostname
  port: {port: 443}
  externalHostname: {hostname: api.openai.com}
  tls: {mode: ServerOnly}
---
apiVersion: gateway.networking.k8s.io/v1alpha1
kind: Backend
metadata: {name: gep}
spec: {type: EndpointSelector, port: {port: 8080}, endpointSelector: {selectorRef: {name: web}}}
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: Backend
metadata: {name: eg}
spec: {endpoints: [{ip: {address: 10.0.0.1, port: 80}}]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-abc, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
endpoints: [{addresses: [10.0.0.7]}]
ports: [{port: 8080}]
---
apiVersion: v1
kind: Secret
metadata: {name: cert}
type: kubernetes.io/tls
data: {tls.crt: Y2VydA==, tls.key: a2V5}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ca}
data: {ca.crt: "-----BEGIN CERTIFICATE-----"}
---
apiVersion: certificates.k8s.io/v1beta1
kind: ClusterTrustBundle
metadata: {name: roots, namespace: ignored}
spec: {signerName: "", trustBundle: "-----BEGIN CERTIFICATE-----"}
---
apiVersion: v1
kind: Namespace
metadata: {name: app}
"#;

fn ok(text: &str) -> Parsed {
    parse("t.yaml", text).unwrap_or_else(|e| panic!("{e}"))
}

fn one(text: &str) -> Object {
    let mut parsed = ok(text);
    assert_eq!(parsed.objects.len(), 1, "{:?}", parsed.warnings);
    parsed.objects.remove(0).1
}

fn err(text: &str) -> String {
    parse("examples/x.yaml", text)
        .expect_err("input is invalid")
        .to_string()
}

#[test]
fn every_supported_kind_parses() {
    let parsed = ok(ALL_KINDS);
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    let kinds: Vec<_> = parsed.objects.iter().map(|(_, o)| o.kind_name()).collect();
    assert_eq!(
        kinds,
        [
            "GatewayClass",
            "Gateway",
            "HTTPRoute",
            "GRPCRoute",
            "ReferenceGrant",
            "BackendTLSPolicy",
            "XBackend",
            "Backend",
            "Backend.gateway.envoyproxy.io",
            "Service",
            "EndpointSlice",
            "Secret",
            "ConfigMap",
            "ClusterTrustBundle",
            "Namespace",
        ]
    );
    let indices: Vec<_> = parsed.objects.iter().map(|(d, _)| d.index).collect();
    assert_eq!(indices, (0..15).collect::<Vec<_>>());
    for (_, object) in &parsed.objects {
        let (namespace, name) = object.namespace_and_name();
        assert!(name.is_some());
        assert_eq!(namespace.is_some(), object.is_namespaced(), "{}", object.kind_name());
    }
}

#[test]
fn kind_table_names_match_object_kind_names() {
    // Messages and duplicate keys must use one vocabulary.
    for text in ALL_KINDS.split("\n---\n") {
        let value: Value = serde_saphyr::from_str(text).unwrap();
        let (api_version, kind) = (value["apiVersion"].as_str().unwrap(), value["kind"].as_str().unwrap());
        let known = kinds::Kind::of(api_version, kind).unwrap();
        assert_eq!(known.name(), one(text).kind_name());
    }
}

#[test]
fn older_versions_map_to_v1_types() {
    let rg = one(
        "apiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\nmetadata: {name: rg}\n\
         spec: {from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: a}], to: [{group: '', kind: Service}]}\n",
    );
    assert!(matches!(rg, Object::ReferenceGrant(ref g) if g.spec.from[0].namespace == "a"));
    let policy = one(
        "apiVersion: gateway.networking.k8s.io/v1alpha3\nkind: BackendTLSPolicy\nmetadata: {name: p}\n\
         spec: {targetRefs: [{group: '', kind: Service, name: web}], validation: {hostname: h, wellKnownCACertificates: System}}\n",
    );
    assert!(matches!(policy, Object::BackendTlsPolicy(ref p) if p.policy.spec.validation.hostname == "h"));
    let gateway = one(
        "apiVersion: gateway.networking.k8s.io/v1beta1\nkind: Gateway\nmetadata: {name: g}\n\
         spec: {gatewayClassName: c, listeners: [{name: l, port: 80, protocol: HTTP}]}\n",
    );
    assert!(matches!(gateway, Object::Gateway(_)));
    let bundle = one(
        "apiVersion: certificates.k8s.io/v1alpha1\nkind: ClusterTrustBundle\nmetadata: {name: b, namespace: x}\n\
         spec: {trustBundle: pem}\n",
    );
    assert!(matches!(bundle, Object::ClusterTrustBundle(ref b) if b.spec.trust_bundle == "pem"));
    assert_eq!(bundle.key(), crate::model::ObjectKey::cluster("b"), "cluster-scoped");
    let ga = one(
        "apiVersion: certificates.k8s.io/v1\nkind: ClusterTrustBundle\nmetadata: {name: b}\n\
         spec: {signerName: example.com/s, trustBundle: pem}\n",
    );
    assert!(matches!(ga, Object::ClusterTrustBundle(ref b) if b.spec.signer_name.as_deref() == Some("example.com/s")));
}

#[test]
fn backend_shape_follows_spec_destination() {
    let draft = one(
        "apiVersion: gateway.networking.k8s.io/v1alpha1\nkind: Backend\nmetadata: {name: d}\n\
         spec:\n  destination:\n    type: FQDN\n    ports: [{port: 443, protocol: HTTPS}]\n    fqdn: {hostname: api.example.com}\n",
    );
    let Object::Backend(draft) = draft else {
        panic!("not a Backend")
    };
    assert!(matches!(draft.spec, BackendShape::Draft(_)));
    let Object::Backend(gep) = one(ALL_KINDS.split("\n---\n").nth(7).unwrap()) else {
        panic!()
    };
    assert!(matches!(gep.spec, BackendShape::Gep(_)));
    // A field of the other shape is an error of the shape the user wrote, not a fallback.
    let e = err(
        "apiVersion: gateway.networking.k8s.io/v1alpha1\nkind: Backend\nmetadata: {name: d}\n\
                 spec: {destination: {type: FQDN}, port: {port: 1}}\n",
    );
    assert!(
        e.contains("(Backend default/d): spec.port: unknown field `port`"),
        "{e}"
    );
}

const XBACKEND: &str = "apiVersion: gateway.networking.x-k8s.io/v1alpha1\nkind: XBackend\n\
    metadata: {name: openai}\nspec:\n  type: ExternalHostname\n  port: {port: 443}\n";

/// Errors, warnings, input formats and budgets: what a bad or unusual file is told.
mod documents;
mod emit;
mod fast;
mod subset;
mod subset_props;
