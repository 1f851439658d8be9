//! The xDS port's security, decided before anything is served: mTLS with the operator's certificates, or
//! plaintext only where that cannot leak a key off the machine.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use tracing::{error, info};

use crate::xds::metrics::XdsMetrics;
use crate::xds::transport::{Security, TlsState, is_loopback};

/// The TLS state to serve with (`None`: plaintext), after checking plaintext is allowed on `addr`.
pub(super) fn security(security: &Security, addr: SocketAddr, metrics: &XdsMetrics) -> Result<Option<Arc<TlsState>>> {
    match security {
        Security::Tls(files) => {
            let state = TlsState::load(files.clone()).context("loading the xDS TLS certificates")?;
            info!(
                cert = %files.cert.display(),
                client_ca = %files.client_ca.display(),
                trust_domain = %files.trust_domain,
                "xDS requires client certificates"
            );
            Ok(Some(Arc::new(state)))
        }
        Security::Plaintext { .. } if is_loopback(addr.ip()) => {
            info!(%addr, "xDS in plaintext on loopback: only this machine can connect");
            Ok(None)
        }
        Security::Plaintext { insecure: false } => bail!(
            "the xDS address {addr} is not a loopback address, and plaintext xDS hands every Gateway's \
             private keys to anyone who can connect: give --xds-tls-cert, --xds-tls-key and \
             --xds-client-ca (`pier certs` makes them), or --xds-insecure-plaintext to accept that"
        ),
        Security::Plaintext { insecure: true } => {
            error!(
                %addr,
                "INSECURE: serving xDS in plaintext beyond loopback (--xds-insecure-plaintext): anyone who can \
                 connect receives any Gateway's configuration, private keys included"
            );
            metrics.set_insecure_plaintext(true);
            Ok(None)
        }
    }
}
