//! Gateway API `SessionPersistence` (GEP-1619), as route rules and Backends carry it. Hand-written
//! because the `gateway-api` crate has it only behind its `experimental` feature (which pier does not
//! build) and only in the v1.0–v1.6 shape, while upstream has since reshaped it. One struct reads both,
//! so a manifest of either line parses and the translator judges what it can honour:
//!
//! - current (upstream `main`, #4771, #4873, #5046): `type`, `absoluteTimeout`, `cookie: {name, path,
//!   lifetimeType}`, `header: {name}`;
//! - v1.0–v1.6: `type`, `sessionName`, `absoluteTimeout`, `idleTimeout` (removed upstream),
//!   `cookieConfig: {lifetimeType}`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SessionPersistence {
    /// `Cookie` (the default) or `Header`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<SessionType>,
    /// How long a session lasts from its start (GEP-2257 duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absolute_timeout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cookie: Option<CookieConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<HeaderConfig>,
    /// v1.0–v1.6: the cookie's or header's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_name: Option<String>,
    /// v1.0–v1.6 (removed upstream in #4771): how long a session may sit idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<String>,
    /// v1.0–v1.6: the cookie's lifetime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cookie_config: Option<LegacyCookieConfig>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq)]
pub enum SessionType {
    Cookie,
    Header,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CookieConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The cookie's `Path` attribute; `/` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime_type: Option<LifetimeType>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LegacyCookieConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime_type: Option<LifetimeType>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HeaderConfig {
    pub name: String,
}

/// `Session` (the default: no `Expires`/`Max-Age`) or `Permanent`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq)]
pub enum LifetimeType {
    Session,
    Permanent,
}
