//! SDS: one `Secret` per `ir::Secret`, named by its key. CA bundles become validation contexts (inline
//! PEM, or a file Envoy reads for the system bundle); certificates become `tls_certificate`s with inline
//! PEM. The private key is inline because SDS is the only channel to the proxy; `render` can redact it.

use super::pb::{core, tls};
use crate::ir;

pub(super) fn build(name: &str, s: &ir::Secret) -> tls::Secret {
    let r#type = match s {
        ir::Secret::CaBundle { pem } => tls::secret::Type::ValidationContext(validation_context(inline(pem))),
        ir::Secret::CaFile { path } => tls::secret::Type::ValidationContext(validation_context(core::DataSource {
            specifier: Some(core::data_source::Specifier::Filename(path.clone())),
            ..Default::default()
        })),
        ir::Secret::TlsCertificate { chain, key } => tls::secret::Type::TlsCertificate(tls::TlsCertificate {
            certificate_chain: Some(inline(chain)),
            private_key: Some(inline(key)),
            ..Default::default()
        }),
    };
    tls::Secret {
        name: name.to_string(),
        r#type: Some(r#type),
    }
}

fn validation_context(trusted_ca: core::DataSource) -> tls::CertificateValidationContext {
    tls::CertificateValidationContext {
        trusted_ca: Some(trusted_ca),
        ..Default::default()
    }
}

fn inline(pem: &str) -> core::DataSource {
    core::DataSource {
        specifier: Some(core::data_source::Specifier::InlineString(pem.to_string())),
        ..Default::default()
    }
}
