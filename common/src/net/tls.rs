//! Outbound TLS: what every HTTP client of this process trusts. Clients
//! speak `https://` with rustls (ring provider) against the system's roots
//! (`/etc/ssl/certs`), plus the PEM bundle of `--ca-file` and, for one
//! replication remote, the CA registered with it.
//!
//! The settings are process-wide (like rustls's default provider): every
//! client (meta, block, Raft peers, remotes) is built through
//! `client_builder`, so none of their constructors carries TLS options. A
//! process runs one region outside tests.

use std::sync::{Arc, RwLock};

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

/// What outbound connections trust.
#[derive(Clone, Default)]
pub struct OutboundTls {
    /// Extra roots (`--ca-file`), on top of the system's.
    pub extra_roots: Vec<reqwest::Certificate>,
    /// `--insecure-skip-verify`: no certificate or name check at all.
    /// For tests with throwaway certificates only.
    pub insecure_skip_verify: bool,
}

static OUTBOUND: RwLock<Option<Arc<OutboundTls>>> = RwLock::new(None);

/// The certificates of a PEM bundle, as reqwest roots. An error names the
/// problem; a bundle without a certificate is one.
pub fn roots_from_pem(pem: &[u8]) -> Result<Vec<reqwest::Certificate>, String> {
    let mut out = Vec::new();
    for der in CertificateDer::pem_slice_iter(pem) {
        let der = der.map_err(|e| format!("reading PEM certificates: {e}"))?;
        out.push(
            reqwest::Certificate::from_der(&der).map_err(|e| format!("bad certificate: {e}"))?,
        );
    }
    if out.is_empty() {
        return Err("no certificate in the PEM bundle".into());
    }
    Ok(out)
}

/// Sets the process's outbound TLS settings. Without a CA file and without
/// skipping verification it changes nothing, so an in-process test server
/// started without TLS options keeps what another one set.
pub fn configure(
    ca_file: Option<&std::path::Path>,
    insecure_skip_verify: bool,
) -> Result<(), String> {
    if ca_file.is_none() && !insecure_skip_verify {
        return Ok(());
    }
    let extra_roots = match ca_file {
        None => Vec::new(),
        Some(p) => {
            let pem = std::fs::read(p).map_err(|e| format!("reading {}: {e}", p.display()))?;
            roots_from_pem(&pem).map_err(|e| format!("{}: {e}", p.display()))?
        }
    };
    if insecure_skip_verify {
        tracing::warn!(
            "--insecure-skip-verify: outbound TLS certificates are not checked (tests only)"
        );
    }
    *OUTBOUND.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(OutboundTls {
        extra_roots,
        insecure_skip_verify,
    }));
    Ok(())
}

fn current() -> Arc<OutboundTls> {
    OUTBOUND
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .unwrap_or_default()
}

/// `reqwest::Client::builder()` with the process's outbound TLS settings:
/// every client of a role starts here.
pub fn client_builder() -> reqwest::ClientBuilder {
    with_roots(reqwest::Client::builder(), &[])
}

/// As `client_builder`, also trusting `extra` (a remote's own CA).
pub fn with_roots(
    mut b: reqwest::ClientBuilder,
    extra: &[reqwest::Certificate],
) -> reqwest::ClientBuilder {
    let settings = current();
    b = b.use_rustls_tls();
    for c in settings.extra_roots.iter().chain(extra) {
        b = b.add_root_certificate(c.clone());
    }
    if settings.insecure_skip_verify {
        b = b.danger_accept_invalid_certs(true);
    }
    b
}

/// `http://` + `addr` for an internal address stored as `host:port`; an
/// address stored with its scheme (`https://host:port`, a role serving
/// TLS) is used as it is.
pub fn base_url(addr: &str) -> String {
    let addr = addr.trim_end_matches('/');
    if addr.starts_with("http://") || addr.starts_with("https://") {
        addr.to_string()
    } else {
        format!("http://{addr}")
    }
}

/// `host:port` of a URL or address, without scheme or trailing slash.
pub fn host_port(url: &str) -> &str {
    url.strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or(url)
        .trim_end_matches('/')
}

/// What outbound HTTPS clients trust, beside the system's roots.
#[cfg(feature = "cli")]
#[derive(clap::Args, Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct OutboundTlsArgs {
    /// Extra PEM CA bundle trusted by every outbound client (meta,
    /// datanode and replication links), on top of the system's roots.
    #[arg(long, env = "GODWIT_CA_FILE")]
    pub ca_file: Option<std::path::PathBuf>,
    /// Do not check outbound TLS certificates at all. For tests with
    /// throwaway certificates only: it gives up what TLS protects.
    #[arg(long, env = "GODWIT_INSECURE_SKIP_VERIFY")]
    pub insecure_skip_verify: bool,
}

#[cfg(feature = "cli")]
impl OutboundTlsArgs {
    /// Makes these the process's outbound TLS settings.
    pub fn apply(&self) -> anyhow::Result<()> {
        configure(self.ca_file.as_deref(), self.insecure_skip_verify)
            .map_err(|e| anyhow::anyhow!("--ca-file: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_keeps_a_given_scheme() {
        assert_eq!(base_url("10.0.0.1:9003"), "http://10.0.0.1:9003");
        assert_eq!(base_url("https://dn1:9003/"), "https://dn1:9003");
        assert_eq!(host_port("https://dn1:9003"), "dn1:9003");
        assert_eq!(host_port("dn1:9003"), "dn1:9003");
    }

    #[test]
    fn a_pem_bundle_without_certificates_is_refused() {
        assert!(roots_from_pem(b"not a pem").is_err());
    }
}
