//! The (apiVersion, kind) table and the typed decoding of one object: metadata defaults the API server
//! or kubectl would apply (namespace `default`, cluster-scoped objects carry no namespace, Secret
//! `stringData` folded into `data`), then strict deserialization with field paths.
//!
//! Older versions that are schema-identical for everything pier reads (v1beta1 Gateway, GatewayClass,
//! HTTPRoute, ReferenceGrant; v1alpha3 BackendTLSPolicy; v1 and v1alpha1 ClusterTrustBundle) decode into
//! one type per kind, so the translator sees one; v1alpha2 BackendTLSPolicy is mapped onto v1
//! (`btls_v1alpha2`), and every BackendTLSPolicy keeps what its crate type lacks beside it (`btls`).

use k8s_openapi::ByteString;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Location, ParseError, type_name};
use crate::api::backend::{Backend, BackendShape};
use crate::api::draft::DraftBackendSpec;
use crate::api::xbackend::{BackendStatus, XBackendSpec};
use crate::model::Object;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    GatewayClass,
    Gateway,
    HttpRoute,
    GrpcRoute,
    ReferenceGrant,
    BackendTlsPolicy,
    /// `v1alpha2`, Gateway API v1.0's shape or the later one (`btls_v1alpha2`).
    BackendTlsPolicyV1alpha2,
    XBackend,
    Backend,
    EgBackend,
    Service,
    EndpointSlice,
    Pod,
    Secret,
    ConfigMap,
    /// `v1beta1`, or `v1` and `v1alpha1` (the same schema) read as v1beta1.
    ClusterTrustBundle,
    Namespace,
}

const GW_V1: &str = "gateway.networking.k8s.io/v1";
const GW_V1BETA1: &str = "gateway.networking.k8s.io/v1beta1";
const GW_V1ALPHA2: &str = "gateway.networking.k8s.io/v1alpha2";
const GW_V1ALPHA3: &str = "gateway.networking.k8s.io/v1alpha3";
const GW_V1ALPHA1: &str = "gateway.networking.k8s.io/v1alpha1";
const XGW_V1ALPHA1: &str = "gateway.networking.x-k8s.io/v1alpha1";
const EG_V1ALPHA1: &str = "gateway.envoyproxy.io/v1alpha1";
const CORE_V1: &str = "v1";
const DISCOVERY_V1: &str = "discovery.k8s.io/v1";
const CERTS_V1: &str = "certificates.k8s.io/v1";
const CERTS_V1BETA1: &str = "certificates.k8s.io/v1beta1";
const CERTS_V1ALPHA1: &str = "certificates.k8s.io/v1alpha1";

impl Kind {
    pub(super) fn of(api_version: &str, kind: &str) -> Option<Kind> {
        Some(match (api_version, kind) {
            (GW_V1 | GW_V1BETA1, "GatewayClass") => Kind::GatewayClass,
            (GW_V1 | GW_V1BETA1, "Gateway") => Kind::Gateway,
            (GW_V1 | GW_V1BETA1, "HTTPRoute") => Kind::HttpRoute,
            (GW_V1, "GRPCRoute") => Kind::GrpcRoute,
            (GW_V1 | GW_V1BETA1, "ReferenceGrant") => Kind::ReferenceGrant,
            (GW_V1 | GW_V1ALPHA3, "BackendTLSPolicy") => Kind::BackendTlsPolicy,
            (GW_V1ALPHA2, "BackendTLSPolicy") => Kind::BackendTlsPolicyV1alpha2,
            (XGW_V1ALPHA1, "XBackend") => Kind::XBackend,
            (GW_V1ALPHA1, "Backend") => Kind::Backend,
            (EG_V1ALPHA1, "Backend") => Kind::EgBackend,
            (CORE_V1, "Service") => Kind::Service,
            (DISCOVERY_V1, "EndpointSlice") => Kind::EndpointSlice,
            (CORE_V1, "Pod") => Kind::Pod,
            (CORE_V1, "Secret") => Kind::Secret,
            (CORE_V1, "ConfigMap") => Kind::ConfigMap,
            (CERTS_V1 | CERTS_V1BETA1 | CERTS_V1ALPHA1, "ClusterTrustBundle") => Kind::ClusterTrustBundle,
            (CORE_V1, "Namespace") => Kind::Namespace,
            _ => return None,
        })
    }

    /// Same strings as [`Object::kind_name`], so messages and duplicate keys agree.
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::GatewayClass => "GatewayClass",
            Kind::Gateway => "Gateway",
            Kind::HttpRoute => "HTTPRoute",
            Kind::GrpcRoute => "GRPCRoute",
            Kind::ReferenceGrant => "ReferenceGrant",
            Kind::BackendTlsPolicy | Kind::BackendTlsPolicyV1alpha2 => "BackendTLSPolicy",
            Kind::XBackend => "XBackend",
            Kind::Backend => "Backend",
            Kind::EgBackend => "Backend.gateway.envoyproxy.io",
            Kind::Service => "Service",
            Kind::EndpointSlice => "EndpointSlice",
            Kind::Pod => "Pod",
            Kind::Secret => "Secret",
            Kind::ConfigMap => "ConfigMap",
            Kind::ClusterTrustBundle => "ClusterTrustBundle",
            Kind::Namespace => "Namespace",
        }
    }

    fn namespaced(self) -> bool {
        !matches!(self, Kind::GatewayClass | Kind::ClusterTrustBundle | Kind::Namespace)
    }

    /// `value` is a mapping with string apiVersion and kind. Fills `at.object` as soon as the name is
    /// known, so later errors say which object failed.
    pub(super) fn decode(self, mut value: Value, at: &mut Location) -> Result<Object, ParseError> {
        self.normalise_metadata(&mut value, at)?;
        Ok(match self {
            Kind::GatewayClass => Object::GatewayClass(typed(value, at, "")?),
            Kind::Gateway => Object::Gateway(typed(value, at, "")?),
            Kind::HttpRoute => {
                let extras = http_route_extras(&mut value, at)?;
                Object::HttpRoute(typed(value, at, "")?, extras)
            }
            Kind::GrpcRoute => {
                let sessions = grpc_route_sessions(&mut value, at)?;
                let route: gateway_api::apis::standard::grpcroutes::GrpcRoute = typed(value, at, "")?;
                Object::GrpcRoute(crate::api::grpc::GrpcRoute {
                    sessions,
                    ..route.into()
                })
            }
            Kind::ReferenceGrant => Object::ReferenceGrant(typed(value, at, "")?),
            Kind::BackendTlsPolicy => Object::BackendTlsPolicy(super::btls::decode(value, at, false)?),
            Kind::BackendTlsPolicyV1alpha2 => Object::BackendTlsPolicy(super::btls::decode(value, at, true)?),
            Kind::XBackend => Object::XBackend(typed(value, at, "")?),
            Kind::Backend => Object::Backend(backend(value, at)?),
            Kind::EgBackend => Object::EgBackend(typed(value, at, "")?),
            Kind::Service => Object::Service(typed(value, at, "")?),
            Kind::EndpointSlice => Object::EndpointSlice(typed(value, at, "")?),
            // Trimmed before typing: pier reads a handful of fields, and a Pod's spec is large.
            Kind::Pod => Object::Pod(Box::new(typed(crate::model::pod::trim(value), at, "")?)),
            Kind::Secret => {
                let mut secret: k8s_openapi::api::core::v1::Secret = typed(value, at, "")?;
                // kubectl semantics: stringData is write-only sugar and wins over data, so the
                // translator only ever has to read `data`.
                if let Some(strings) = secret.string_data.take() {
                    let data = secret.data.get_or_insert_with(Default::default);
                    for (key, text) in strings {
                        data.insert(key, ByteString(text.into_bytes()));
                    }
                }
                Object::Secret(secret)
            }
            Kind::ConfigMap => Object::ConfigMap(typed(value, at, "")?),
            Kind::ClusterTrustBundle => {
                // k8s-openapi's type refuses any apiVersion but its own; 0.28 has no v1 type (GA in
                // Kubernetes 1.37), and v1 and v1alpha1 differ from v1beta1 in nothing pier reads.
                value["apiVersion"] = Value::String(CERTS_V1BETA1.into());
                Object::ClusterTrustBundle(typed(value, at, "")?)
            }
            Kind::Namespace => Object::Namespace(typed(value, at, "")?),
        })
    }

    fn normalise_metadata(self, value: &mut Value, at: &mut Location) -> Result<(), ParseError> {
        let metadata = match value.get_mut("metadata") {
            Some(Value::Object(metadata)) => metadata,
            None | Some(Value::Null) => {
                at.object = Some(self.name().into());
                return Err(ParseError::Document {
                    at: at.clone(),
                    message: "missing metadata.name".into(),
                });
            }
            Some(other) => {
                at.object = Some(self.name().into());
                return Err(ParseError::Field {
                    at: at.clone(),
                    path: "metadata".into(),
                    message: format!("expected a mapping, found {}", type_name(other)),
                });
            }
        };
        let name = metadata
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if self.namespaced() {
            let missing = matches!(metadata.get("namespace"), None | Some(Value::Null))
                || metadata.get("namespace").and_then(Value::as_str) == Some("");
            if missing {
                // What `kubectl apply` does for a namespaced object without a namespace (with the
                // default context namespace).
                metadata.insert("namespace".into(), Value::String("default".into()));
            }
        } else {
            // The API server ignores a namespace on a cluster-scoped object; drop it so the model holds
            // what a Kubernetes source would deliver.
            metadata.remove("namespace");
        }
        let namespace = metadata.get("namespace").and_then(Value::as_str).unwrap_or_default();
        at.object = Some(match (name.is_empty(), namespace.is_empty()) {
            (true, _) => self.name().to_owned(),
            (false, true) => format!("{} {name}", self.name()),
            (false, false) => format!("{} {namespace}/{name}", self.name()),
        });
        match metadata.get("name") {
            Some(Value::String(s)) if !s.is_empty() => Ok(()),
            None | Some(Value::Null) => Err(ParseError::Document {
                at: at.clone(),
                message: "missing metadata.name".into(),
            }),
            Some(other) => Err(ParseError::Field {
                at: at.clone(),
                path: "metadata.name".into(),
                message: format!("expected a non-empty string, found {}", type_name(other)),
            }),
        }
    }
}

/// The standard-group Backend carries two shapes under one kind; pick by `spec.destination`, then parse
/// that shape strictly so errors name fields of the shape the user wrote.
fn backend(mut value: Value, at: &Location) -> Result<Backend, ParseError> {
    let metadata = value.get_mut("metadata").map(Value::take).unwrap_or_default();
    let metadata: ObjectMeta = typed(metadata, at, "metadata")?;
    let spec = match value.get_mut("spec").map(Value::take) {
        None | Some(Value::Null) => {
            return Err(ParseError::Document {
                at: at.clone(),
                message: "missing field `spec`".into(),
            });
        }
        Some(spec) if spec.get("destination").is_some() => {
            BackendShape::Draft(Box::new(typed::<DraftBackendSpec>(spec, at, "spec")?))
        }
        Some(spec) => BackendShape::Gep(typed::<XBackendSpec>(spec, at, "spec")?),
    };
    let status = match value.get_mut("status").map(Value::take) {
        None | Some(Value::Null) => None,
        Some(status) => Some(typed::<BackendStatus>(status, at, "status")?),
    };
    Ok(Backend { metadata, spec, status })
}

/// Takes each GRPCRoute rule's `sessionPersistence` out of `value` (the standard type has no such field).
fn grpc_route_sessions(
    value: &mut Value,
    at: &Location,
) -> Result<Vec<Option<crate::api::session::SessionPersistence>>, ParseError> {
    let mut out = Vec::new();
    let Some(rules) = value.pointer_mut("/spec/rules").and_then(Value::as_array_mut) else {
        return Ok(out);
    };
    for (i, rule) in rules.iter_mut().enumerate() {
        let sp = match rule.as_object_mut().and_then(|r| r.remove("sessionPersistence")) {
            None | Some(Value::Null) => None,
            Some(sp) => Some(typed(sp, at, &format!("spec.rules[{i}].sessionPersistence"))?),
        };
        out.push(sp);
    }
    while out.last().is_some_and(Option::is_none) {
        out.pop();
    }
    Ok(out)
}

/// Deserializes `value` (found at `prefix` in the document) with the failing field's path in the error.
/// Experimental HTTPRoute rule fields pier does not serve (the standard type would drop them silently).
const UNSERVED_RULE_FIELDS: [&str; 0] = [];

/// Takes out of an HTTPRoute what its standard-channel type cannot hold (`model::HttpRouteExtras`):
/// each rule's `retry` and `sessionPersistence`, and filters whose `type` that type does not know
/// (removed from `value`).
fn http_route_extras(value: &mut Value, at: &Location) -> Result<crate::model::HttpRouteExtras, ParseError> {
    const KNOWN: [&str; 7] = [
        "RequestHeaderModifier",
        "ResponseHeaderModifier",
        "RequestMirror",
        "RequestRedirect",
        "URLRewrite",
        "ExtensionRef",
        "CORS",
    ];
    let mut out = crate::model::HttpRouteExtras::default();
    let Some(rules) = value.pointer_mut("/spec/rules").and_then(Value::as_array_mut) else {
        return Ok(out);
    };
    let unknown = |filters: Option<&mut Value>, prefix: &str, into: &mut Vec<String>| {
        if let Some(list) = filters.and_then(Value::as_array_mut) {
            list.retain(|f| match f.get("type").and_then(Value::as_str) {
                Some(t) if !KNOWN.contains(&t) => {
                    into.push(format!("{t}{prefix}"));
                    false
                }
                _ => true,
            });
        }
    };
    for (i, rule) in rules.iter_mut().enumerate() {
        let mut extras = crate::model::RuleExtras::default();
        if let Some(retry) = rule.get("retry").filter(|r| !r.is_null()) {
            extras.retry = Some(typed(retry.clone(), at, &format!("spec.rules[{i}].retry"))?);
        }
        if let Some(sp) = rule.get("sessionPersistence").filter(|r| !r.is_null()) {
            let field = format!("spec.rules[{i}].sessionPersistence");
            extras.session_persistence = Some(typed(sp.clone(), at, &field)?);
        }
        unknown(rule.get_mut("filters"), "", &mut extras.unknown_filters);
        for field in UNSERVED_RULE_FIELDS {
            if rule.get(field).is_some_and(|v| !v.is_null()) {
                extras.unsupported_fields.push(field.to_string());
            }
        }
        if let Some(refs) = rule.get_mut("backendRefs").and_then(Value::as_array_mut) {
            for (j, r) in refs.iter_mut().enumerate() {
                unknown(
                    r.get_mut("filters"),
                    &format!(" on backendRefs[{j}]"),
                    &mut extras.unknown_filters,
                );
            }
        }
        out.rules.push(extras);
    }
    Ok(out)
}

pub(super) fn typed<T: DeserializeOwned>(value: Value, at: &Location, prefix: &str) -> Result<T, ParseError> {
    // Tracking the path costs an owned copy of every map key on the way; it is only needed to say
    // where a document is wrong, so a document is read without it first (copying its string values
    // instead) and again with it only when that fails.
    if let Ok(t) = T::deserialize(&value) {
        return Ok(t);
    }
    serde_path_to_error::deserialize(value).map_err(|error| {
        let inner = error.path().to_string();
        let path = match (prefix.is_empty(), inner.as_str()) {
            (true, ".") => None,
            (true, _) => Some(inner),
            (false, ".") => Some(prefix.to_owned()),
            (false, p) if p.starts_with('[') => Some(format!("{prefix}{p}")),
            (false, p) => Some(format!("{prefix}.{p}")),
        };
        let message = error.into_inner().to_string();
        match path {
            Some(path) => ParseError::Field {
                at: at.clone(),
                path,
                message,
            },
            None => ParseError::Document {
                at: at.clone(),
                message,
            },
        }
    })
}
