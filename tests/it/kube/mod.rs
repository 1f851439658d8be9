//! pier against Kubernetes: its runtime in Kubernetes mode against the in-process fake API server
//! ([`crate::fake_apiserver`], because no API server binary can be installed here), and the `deploy/`
//! manifests checked against the code.

mod degrade;
mod equivalence;
mod faults;
mod kubectl;
mod leader_kill;
mod manifests;
mod memory;
mod rbac;
mod source;
mod status;
mod status_churn;
mod trust_bundles;
