//! Condition types and reasons, typed per object kind, and the conditions and problems built from them.
//!
//! Each kind pier writes status for has its own vocabulary (`kinds`): a route can only be given a
//! [`RouteReason`], a listener a [`ListenerReason`], and so on — the way Envoy Gateway types
//! `RouteConditionReason` apart from `ListenerConditionReason`. A reason that upstream Gateway API defines
//! is spelled as upstream spells it; pier's own (a Backend refused by a destination guardrail, the draft
//! Backend shape) are marked where they are declared. Helpers shared by several kinds (certificate
//! references, endpoint lookup) report in a small vocabulary of their own that converts into each kind
//! that can carry it ([`Problem::widen`]), so the compiler checks that a reason is one its object may
//! carry.
//!
//! Conditions carry no timestamp: the translator is pure, and the status writer adds
//! `lastTransitionTime` when a condition's status actually changes.

use std::borrow::Cow;

use serde::Serialize;

mod kinds;
pub use kinds::*;

/// Declares a closed set of condition types or reasons, each serialised (and [`as_str`]ed) exactly as
/// its variant is named: upstream's spelling.
macro_rules! labels {
    (@name $variant:ident) => { stringify!($variant) };
    (@name $variant:ident $spelled:literal) => { $spelled };
    ($($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident $(= $spelled:literal)?),+ $(,)? })+) => {$(
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        // As spelled (`as_str`), so a domain-prefixed pier condition type serializes as written.
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => labels!(@name $variant $($spelled)?)),+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )+};
}
pub(crate) use labels;

/// `From` between two label sets, variant by variant: the match is exhaustive, so every variant of the
/// narrower set must exist in the wider one.
macro_rules! widen {
    ($from:ident => $($to:ident),+ : $variants:tt) => {
        $(widen!(@one $from => $to : $variants);)+
    };
    (@one $from:ident => $to:ident : [$($variant:ident),+ $(,)?]) => {
        impl From<$from> for $to {
            fn from(v: $from) -> Self {
                match v {
                    $($from::$variant => $to::$variant),+
                }
            }
        }
    };
}
pub(crate) use widen;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Status {
    True,
    False,
    Unknown,
}

/// One status condition of an object whose condition types are `T` and reasons `R`. Its fields are
/// declared in the order of their serialized names, as in every status type (`gateway::status`), so a
/// status is written with its keys sorted, as a JSON value would hold them, without building one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition<T, R> {
    /// Nearly always a fixed sentence, which is then borrowed rather than copied into every status.
    pub message: Cow<'static, str>,
    pub observed_generation: i64,
    pub reason: R,
    pub status: Status,
    #[serde(rename = "type")]
    pub type_: T,
}

impl<T, R> Condition<T, R> {
    pub fn new(type_: T, status: Status, reason: R, message: impl Into<Cow<'static, str>>, generation: i64) -> Self {
        Self {
            type_,
            status,
            reason,
            message: message.into(),
            observed_generation: generation,
        }
    }
    pub fn ok(type_: T, reason: R, message: impl Into<Cow<'static, str>>, generation: i64) -> Self {
        Self::new(type_, Status::True, reason, message, generation)
    }
    pub fn fail(type_: T, reason: R, message: impl Into<Cow<'static, str>>, generation: i64) -> Self {
        Self::new(type_, Status::False, reason, message, generation)
    }
    pub fn is_true(&self) -> bool {
        self.status == Status::True
    }
}

/// Condition types every kind with references has: where a [`Problem`] lands.
pub trait CommonTypes: Copy {
    const ACCEPTED: Self;
    const RESOLVED_REFS: Self;
}

/// A problem found while resolving something: which condition it lands on, the reason, the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem<T, R> {
    pub type_: T,
    pub reason: R,
    pub message: String,
}

impl<T: CommonTypes, R> Problem<T, R> {
    pub fn accepted(reason: R, message: impl Into<String>) -> Self {
        Self {
            type_: T::ACCEPTED,
            reason,
            message: message.into(),
        }
    }
    pub fn refs(reason: R, message: impl Into<String>) -> Self {
        Self {
            type_: T::RESOLVED_REFS,
            reason,
            message: message.into(),
        }
    }
}

impl<T, R> Problem<T, R> {
    /// The same problem in the vocabulary of a kind that can carry it.
    pub fn widen<T2: From<T>, R2: From<R>>(self) -> Problem<T2, R2> {
        Problem {
            type_: self.type_.into(),
            reason: self.reason.into(),
            message: self.message,
        }
    }

    /// The same problem with `prefix` before its message.
    pub fn prefixed(mut self, prefix: impl std::fmt::Display) -> Self {
        self.message = format!("{prefix}: {}", self.message);
        self
    }
}
