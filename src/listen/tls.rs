//! The listeners' certificate: PEM chain and key read from files, served
//! to every new handshake, and read again on SIGHUP (a renewed certificate
//! takes effect without a restart; connections already open keep theirs).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use anyhow::Context;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_util::sync::CancellationToken;

/// A certificate and key that can be swapped under running listeners.
pub struct ReloadingCert {
    cert_path: PathBuf,
    key_path: PathBuf,
    current: RwLock<Arc<CertifiedKey>>,
}

impl fmt::Debug for ReloadingCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReloadingCert")
            .field("cert", &self.cert_path)
            .field("key", &self.key_path)
            .finish_non_exhaustive()
    }
}

/// Reads a PEM chain and a PEM key (PKCS#8, PKCS#1 or SEC1) and checks
/// that the key belongs to the first certificate.
fn load(cert_path: &Path, key_path: &Path) -> anyhow::Result<CertifiedKey> {
    let chain = CertificateDer::pem_file_iter(cert_path)
        .with_context(|| format!("reading {}", cert_path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("parsing the PEM certificates in {}", cert_path.display()))?;
    anyhow::ensure!(
        !chain.is_empty(),
        "{}: no certificate in the file",
        cert_path.display()
    );
    let key = PrivateKeyDer::from_pem_file(key_path)
        .with_context(|| format!("reading the PEM private key in {}", key_path.display()))?;
    let signer = rustls::crypto::ring::sign::any_supported_type(&key)
        .with_context(|| format!("{}: unsupported private key", key_path.display()))?;
    let certified = CertifiedKey::new(chain, signer);
    // `Unknown` (a key type rustls cannot compare) is accepted as rustls
    // itself does; a known mismatch is refused.
    if let Err(e @ rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) =
        certified.keys_match()
    {
        anyhow::bail!(
            "{} does not match {}: {e}",
            key_path.display(),
            cert_path.display()
        );
    }
    Ok(certified)
}

impl ReloadingCert {
    pub fn open(cert_path: &Path, key_path: &Path) -> anyhow::Result<Arc<Self>> {
        let first = load(cert_path, key_path)?;
        Ok(Arc::new(ReloadingCert {
            cert_path: cert_path.to_path_buf(),
            key_path: key_path.to_path_buf(),
            current: RwLock::new(Arc::new(first)),
        }))
    }

    /// Reads the files again; on an error the old certificate stays.
    pub fn reload(&self) -> anyhow::Result<()> {
        let next = load(&self.cert_path, &self.key_path)?;
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(next);
        Ok(())
    }

    /// rustls settings of every TLS listener of the process: ring, TLS 1.2
    /// and 1.3, ALPN h2 and http/1.1, this certificate.
    pub fn server_config(self: &Arc<Self>) -> anyhow::Result<Arc<ServerConfig>> {
        let mut cfg =
            ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .context("rustls protocol versions")?
                .with_no_client_auth()
                .with_cert_resolver(self.clone());
        cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(cfg))
    }

    /// Reloads on every SIGHUP until `shutdown`.
    pub fn reload_on_sighup(self: &Arc<Self>, shutdown: CancellationToken) -> anyhow::Result<()> {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hup = signal(SignalKind::hangup()).context("SIGHUP handler")?;
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    got = hup.recv() => {
                        if got.is_none() {
                            return;
                        }
                    }
                }
                match this.reload() {
                    Ok(()) => {
                        tracing::info!(cert = %this.cert_path.display(), "SIGHUP: TLS certificate reloaded")
                    }
                    Err(e) => {
                        tracing::warn!(error = %format!("{e:#}"), "SIGHUP: TLS certificate not reloaded, the old one stays")
                    }
                }
            }
        });
        Ok(())
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.current
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        )
    }
}
