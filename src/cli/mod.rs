//! Command-line options shared by the subcommands. Every option can also come from the environment
//! (`PIER_...`), so the same settings work in a shell, a Deployment or CI.

#[cfg(feature = "demo")]
mod demo;
mod ops;
mod resolve;
mod xds;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use ipnet::IpNet;

use crate::ir::LookupFamily;
use crate::options::{DEFAULT_CONTROLLER_NAME, DEFAULT_SYSTEM_CA_PATH, Guardrails, Options};
#[cfg(feature = "demo")]
pub use demo::{DemoArgs, UpstreamArgs};
pub use ops::{AdminTarget, DiffArgs, ExplainArgs, Format, ProxyStatusArgs};
pub use resolve::ResolveArgs;
pub use xds::{BootstrapTlsArgs, CertsArgs, DEFAULT_TRUST_DOMAIN, XdsArgs, trust_instances};

#[derive(Debug, Parser)]
#[command(
    name = "pier",
    version,
    about = "An Envoy xDS control plane for the Gateway API and its Backend resource"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Translate YAML/JSON manifests offline and print the Envoy resources and statuses.
    Translate(TranslateArgs),
    /// Watch a directory of manifests (or, with --kubernetes, the cluster) and serve every pier Gateway
    /// over ADS to Envoy proxies.
    Serve(Box<ServeArgs>),
    /// Print an Envoy bootstrap that serves one Gateway from pier over ADS.
    Bootstrap(BootstrapArgs),
    /// Run the bundled example on loopback: demo upstreams, pier, a real Envoy, and requests through it.
    #[cfg(feature = "demo")]
    Demo(DemoArgs),
    /// Serve one demo upstream on an address (what the docker-compose stack routes to): HTTP/1.1 and h2c,
    /// or TLS with --tls-cert; every answer names it. A test server, not for production.
    #[cfg(feature = "demo")]
    Upstream(UpstreamArgs),
    /// Print the CustomResourceDefinitions pier needs that Gateway API releases do not ship (YAML).
    Crds,
    /// Create a CA, pier's xDS server certificate and one client certificate per Gateway (mTLS xDS for
    /// self-managed setups; the layout of Kubernetes TLS Secrets).
    Certs(CertsArgs),
    /// One line per proxy connected to a running pier: node, Gateway, ADS mode and, per type, SYNCED,
    /// STALE (sent, not acknowledged), NACKED (with Envoy's message) or NOT_SENT, with versions.
    ProxyStatus(ProxyStatusArgs),
    /// What a change to the manifests does to each Gateway's Envoy configuration and to every status,
    /// flagging TLS turned off or loosened, guardrail refusals and backends turning into 500s. Exit code
    /// 0: no change, 1: changes, 2: error.
    Diff(DiffArgs),
    /// Explain an object: its path from listener to upstream TLS, with every status condition on the way.
    ///
    /// Listener → route rule → backendRef → cluster (DNS or EDS endpoints) → upstream TLS, and each
    /// condition of the objects met with what to change; from files as `translate` reads them, or from a
    /// running pier (--admin). Exit code 2 when the object cannot be explained.
    Explain(ExplainArgs),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Directory of YAML/JSON manifests, watched for changes (read recursively, in sorted order).
    #[arg(
        long,
        env = "PIER_CONFIG_DIR",
        value_name = "DIR",
        required_unless_present = "kubernetes",
        conflicts_with = "kubernetes"
    )]
    pub config_dir: Option<PathBuf>,
    /// Address of the ADS gRPC server (port 0 picks a free port; see --address-file). Beyond loopback it
    /// needs mTLS (--xds-tls-cert, --xds-tls-key, --xds-client-ca) or --xds-insecure-plaintext.
    #[arg(long, env = "PIER_XDS_ADDRESS", default_value = "127.0.0.1:18000")]
    pub xds_address: std::net::SocketAddr,
    /// Address of the admin HTTP API (/healthz, /readyz, /metrics, /debug/...). Loopback by default.
    #[arg(long, env = "PIER_ADMIN_ADDRESS", default_value = "127.0.0.1:19000")]
    pub admin_address: std::net::SocketAddr,
    /// Once listening, write the bound addresses here as JSON {"xds": "...", "admin": "..."}.
    #[arg(long, env = "PIER_ADDRESS_FILE", value_name = "PATH")]
    pub address_file: Option<PathBuf>,
    /// The first change after a quiet spell is read at once; changes that arrive while it is read
    /// are read together once none has come for this long (milliseconds).
    #[arg(long, env = "PIER_DEBOUNCE_QUIET_MS", default_value_t = 20)]
    pub debounce_quiet_ms: u64,
    /// ... but never later than this after the first of them (milliseconds).
    #[arg(long, env = "PIER_DEBOUNCE_MAX_MS", default_value_t = 250)]
    pub debounce_max_ms: u64,
    /// When a proxy rejects a push, find the object responsible by publishing trials (halves of what
    /// changed), quarantine it with a status naming Envoy's error, and publish everything else.
    #[arg(long, env = "PIER_NACK_CONTAINMENT", default_value_t = true, action = clap::ArgAction::Set)]
    pub nack_containment: bool,
    /// How long a trial waits for every proxy's answer before the search is abandoned (milliseconds).
    #[arg(long, env = "PIER_NACK_PROBE_TIMEOUT_MS", default_value_t = 10_000)]
    pub nack_probe_timeout_ms: u64,
    #[command(flatten)]
    pub inputs: InputArgs,
    #[command(flatten)]
    pub translator: TranslatorArgs,
    // After the options without a heading, so their headings do not spill onto them.
    #[command(flatten)]
    pub xds: XdsArgs,
    #[command(flatten)]
    pub admin: AdminArgs,
    #[command(flatten)]
    pub kube: KubeArgs,
}

impl ServeArgs {
    pub fn containment(&self) -> crate::runtime::ContainSettings {
        crate::runtime::ContainSettings {
            enabled: self.nack_containment,
            probe_timeout: std::time::Duration::from_millis(self.nack_probe_timeout_ms),
            ..Default::default()
        }
    }
}

/// The Kubernetes source (`pier serve --kubernetes`).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Kubernetes")]
pub struct KubeArgs {
    /// Watch the Kubernetes API (kubeconfig or in-cluster config) instead of --config-dir, and write
    /// status back to the objects (only the replica holding the Lease writes).
    #[arg(long, env = "PIER_KUBERNETES")]
    pub kubernetes: bool,
    /// Watch namespaced kinds only in these namespaces (repeatable or comma-separated); default: all.
    /// Cluster-scoped kinds (GatewayClass, Namespace) are always watched.
    #[arg(
        long,
        env = "PIER_WATCH_NAMESPACES",
        value_delimiter = ',',
        value_name = "NAMESPACE",
        requires = "kubernetes"
    )]
    pub watch_namespaces: Vec<String>,
    /// Name of the coordination.k8s.io/v1 Lease that elects the replica writing status.
    #[arg(
        long,
        env = "PIER_LEASE_NAME",
        default_value = "pier-status-writer",
        requires = "kubernetes"
    )]
    pub lease_name: String,
    /// Namespace of that Lease (default: the client's namespace, i.e. pier's own Pod namespace).
    #[arg(
        long,
        env = "PIER_LEASE_NAMESPACE",
        value_name = "NAMESPACE",
        requires = "kubernetes"
    )]
    pub lease_namespace: Option<String>,
    /// This replica's identity on the Lease (default: $POD_NAME, else $HOSTNAME, else a random one).
    #[arg(long, env = "PIER_LEASE_IDENTITY", requires = "kubernetes")]
    pub lease_identity: Option<String>,
    /// Upper bound on status writes per second.
    #[arg(
        long,
        env = "PIER_STATUS_WRITES_PER_SECOND",
        default_value_t = 20,
        requires = "kubernetes"
    )]
    pub status_writes_per_second: u32,
}

#[derive(Debug, Args)]
pub struct BootstrapArgs {
    /// The Gateway this proxy serves (NAMESPACE/NAME); becomes node.cluster.
    #[arg(long, env = "PIER_GATEWAY", value_name = "NAMESPACE/NAME")]
    pub gateway: String,
    /// pier's xDS address as the proxy reaches it (an IP or a DNS name, with a port). Repeat it (or give
    /// a comma-separated list) for replicas: the proxy fails over between them, leaving a hung one within
    /// 5 s. A headless Service's name that resolves to every replica works as one address.
    #[arg(
        long,
        env = "PIER_XDS_ADDRESS",
        value_name = "HOST:PORT",
        required = true,
        value_delimiter = ','
    )]
    pub xds_address: Vec<String>,
    /// Use incremental (delta) xDS instead of state-of-the-world.
    #[arg(long, conflicts_with = "grpc")]
    pub delta: bool,
    /// Print a proxyless gRPC client's JSON bootstrap (GRPC_XDS_BOOTSTRAP) instead of Envoy's (not with --delta).
    #[arg(long)]
    pub grpc: bool,
    /// Envoy admin port on 127.0.0.1 (0: Envoy picks one; read it with --admin-address-path).
    #[arg(long, default_value_t = 9901)]
    pub admin_port: u16,
    /// node.id (default: envoy-NAMESPACE-NAME).
    #[arg(long)]
    pub node_id: Option<String>,
    /// A UDP DNS resolver (IP:PORT) Envoy uses for STRICT_DNS clusters instead of the system's.
    #[arg(long, value_name = "IP:PORT")]
    pub dns_resolver: Option<std::net::SocketAddr>,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = Output::Yaml)]
    pub output: Output,
    /// Write the bootstrap to this file (replaced whole, never seen half-written) instead of stdout: for
    /// an init container, which has no shell to redirect with.
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub tls: BootstrapTlsArgs,
}

#[derive(Debug, Args)]
pub struct TranslateArgs {
    /// Only this Gateway's resources (NAMESPACE/NAME); default: every pier Gateway, merged by name.
    #[arg(long, env = "PIER_GATEWAY", value_name = "NAMESPACE/NAME")]
    pub gateway: Option<String>,
    /// Output format.
    #[arg(long, short, env = "PIER_OUTPUT", value_enum, default_value_t = Output::Yaml)]
    pub output: Output,
    /// Files or directories (read recursively, *.yaml|*.yml|*.json, in sorted order).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub inputs: InputArgs,
    #[command(flatten)]
    pub translator: TranslatorArgs,
}

/// Bounds on the config files, which whoever may write them controls.
#[derive(Debug, Clone, Args)]
pub struct InputArgs {
    /// Skip, with a warning, any config file larger than this; also the most one file's YAML may expand
    /// to with its aliases. What a skipped file defined when it last read well stays in force.
    #[arg(long, env = "PIER_MAX_FILE_BYTES", value_name = "BYTES", default_value_t = crate::model::yaml::DEFAULT_MAX_BYTES)]
    pub max_file_bytes: usize,
}

/// Who may use the admin API (`pier serve`).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Admin API")]
pub struct AdminArgs {
    /// Host names the admin API answers to besides IP addresses and localhost (repeatable or
    /// comma-separated); any other Host header is refused, so a web page cannot reach it by DNS rebinding.
    #[arg(
        long = "admin-allowed-host",
        env = "PIER_ADMIN_ALLOWED_HOSTS",
        value_delimiter = ',',
        value_name = "NAME"
    )]
    pub admin_allowed_hosts: Vec<String>,
    /// A file holding a bearer token that /metrics and /debug/* then require (/healthz and /readyz stay
    /// open for probes). Read once at start.
    #[arg(long, env = "PIER_ADMIN_TOKEN_FILE", value_name = "PATH")]
    pub admin_token_file: Option<PathBuf>,
    /// Serve /metrics and /debug/* without a token although --admin-address is not loopback (pier
    /// refuses to start that way otherwise).
    #[arg(long, env = "PIER_ADMIN_ALLOW_UNAUTHENTICATED")]
    pub admin_allow_unauthenticated: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Yaml,
    Json,
}

/// Translator options (operator-only settings).
#[derive(Debug, Clone, Args)]
pub struct TranslatorArgs {
    /// GatewayClasses whose spec.controllerName equals this are pier's.
    #[arg(long, env = "PIER_CONTROLLER_NAME", default_value = DEFAULT_CONTROLLER_NAME)]
    pub controller_name: String,
    /// Address Envoy listeners bind to.
    #[arg(long, env = "PIER_LISTENER_ADDRESS", default_value = "0.0.0.0")]
    pub listener_address: String,
    /// DNS refresh interval of STRICT_DNS clusters, in milliseconds.
    #[arg(long, env = "PIER_DNS_REFRESH_MS", default_value_t = 30_000)]
    pub dns_refresh_ms: u64,
    /// Let Envoy use the DNS record TTL as the refresh interval.
    #[arg(long, env = "PIER_DNS_RESPECT_TTL", default_value_t = true, action = clap::ArgAction::Set)]
    pub dns_respect_ttl: bool,
    /// A DNS server (IP:PORT, UDP) Envoy asks for every name it resolves, instead of the host's
    /// (repeatable). Names are resolved as absolute either way: search domains never apply.
    #[arg(
        long = "dns-resolver",
        env = "PIER_DNS_RESOLVERS",
        value_delimiter = ',',
        value_name = "IP:PORT"
    )]
    pub dns_resolvers: Vec<std::net::SocketAddr>,
    /// Address families Envoy asks DNS for.
    #[arg(long, env = "PIER_DNS_LOOKUP_FAMILY", value_enum, default_value_t = Family::V4Preferred)]
    pub dns_lookup_family: Family,
    /// CA bundle file Envoy reads for `wellKnownCACertificates: System`.
    #[arg(long, env = "PIER_SYSTEM_CA_PATH", default_value = DEFAULT_SYSTEM_CA_PATH)]
    pub system_ca_path: String,
    /// Upstream connect timeout, in milliseconds.
    #[arg(long, env = "PIER_CONNECT_TIMEOUT_MS", default_value_t = 10_000)]
    pub connect_timeout_ms: u64,
    /// Refuse Backend destinations in this CIDR (repeatable, or comma-separated in the env var).
    #[arg(long = "deny-cidr", env = "PIER_DENY_CIDRS", value_delimiter = ',')]
    pub deny_cidrs: Vec<IpNet>,
    /// The cluster's NAT64 prefix (repeatable): addresses under it are judged by the IPv4 address they
    /// carry. 64:ff9b::/96 and 64:ff9b:1::/48 are always judged so.
    #[arg(long = "nat64-prefix", env = "PIER_NAT64_PREFIXES", value_delimiter = ',')]
    pub nat64_prefixes: Vec<ipnet::Ipv6Net>,
    /// Refuse names under this cluster domain (repeatable); cluster.local is always refused.
    #[arg(long = "cluster-domain", env = "PIER_CLUSTER_DOMAINS", value_delimiter = ',')]
    pub cluster_domains: Vec<String>,
    /// Lift the cluster-internal name rule for names under this suffix (repeatable), e.g.
    /// `payments.svc.cluster.local`: Backends may then reach those in-cluster Services by name, bypassing
    /// ReferenceGrant. Never on by default; see docs/backends.md for the risk.
    #[arg(
        long = "allow-cluster-local-suffix",
        env = "PIER_ALLOW_CLUSTER_LOCAL_SUFFIXES",
        value_delimiter = ','
    )]
    pub allow_cluster_local_suffixes: Vec<String>,
    /// Only allow these external hostnames (`api.example.com`, `*.example.com`); repeatable.
    #[arg(long = "allow-hostname", env = "PIER_ALLOW_HOSTNAMES", value_delimiter = ',')]
    pub allow_hostnames: Vec<String>,
    /// Allow loopback destinations (development and tests only).
    #[arg(long, env = "PIER_ALLOW_LOOPBACK")]
    pub allow_loopback: bool,
    /// Allow Envoy Gateway unix socket endpoints.
    #[arg(long, env = "PIER_ALLOW_UNIX_SOCKETS")]
    pub allow_unix_sockets: bool,
    /// Allow Envoy Gateway DynamicResolver Backends (an open forward proxy).
    #[arg(long, env = "PIER_ENABLE_DYNAMIC_RESOLVER")]
    pub enable_dynamic_resolver: bool,
    #[command(flatten)]
    pub resolve: ResolveArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Family {
    Auto,
    V4Only,
    V6Only,
    V4Preferred,
    All,
}

/// Flags that contradict each other or hold a value pier refuses; each error names the flags.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    #[error("--dns-min-ttl ({min:?}) must not exceed --dns-max-ttl ({max:?})")]
    TtlOrder {
        min: std::time::Duration,
        max: std::time::Duration,
    },
    #[error("--dns-min-ttl must be more than 0 (it bounds how often pier asks DNS)")]
    ZeroMinTtl,
    /// `--allow-cluster-local-suffix`, in the guardrails' own words.
    #[error("{0}")]
    ClusterLocalSuffix(String),
}

impl TranslatorArgs {
    /// The options these flags give; an error names the flags that contradict each other.
    pub fn options(&self) -> Result<Options, FlagError> {
        Ok(Options {
            controller_name: self.controller_name.clone(),
            listener_address: self.listener_address.clone(),
            dns: crate::ir::DnsSettings {
                refresh_rate_ms: self.dns_refresh_ms,
                respect_ttl: self.dns_respect_ttl,
                lookup_family: match self.dns_lookup_family {
                    Family::Auto => LookupFamily::Auto,
                    Family::V4Only => LookupFamily::V4Only,
                    Family::V6Only => LookupFamily::V6Only,
                    Family::V4Preferred => LookupFamily::V4Preferred,
                    Family::All => LookupFamily::All,
                },
                resolvers: self.dns_resolvers.clone(),
            },
            system_ca_path: self.system_ca_path.clone(),
            connect_timeout_ms: self.connect_timeout_ms,
            guardrails: Guardrails {
                denied_cidrs: self.deny_cidrs.clone(),
                nat64_prefixes: self.nat64_prefixes.clone(),
                cluster_domains: self.cluster_domains.clone(),
                cluster_local_suffixes: crate::gateway::policy::cluster_local_suffixes(
                    &self.allow_cluster_local_suffixes,
                )
                .map_err(FlagError::ClusterLocalSuffix)?,
                allowed_hostnames: (!self.allow_hostnames.is_empty()).then(|| self.allow_hostnames.clone()),
                allow_loopback: self.allow_loopback,
                allow_unix_sockets: self.allow_unix_sockets,
                enable_dynamic_resolver: self.enable_dynamic_resolver,
            },
            resolution: self.resolve.resolution()?,
        })
    }
}
