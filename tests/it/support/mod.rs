//! Test support: a real SigV4-signed S3 client (reqwest + aws-sigv4, like
//! any SDK) and child-process management for `godwit` roles.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, SignableBody, SignableRequest, SigningSettings,
};
use aws_sigv4::sign::v4;
use sha2::Digest;

/// Root credentials of every server a test starts in this process. The
/// server reads them from the environment at start, and the suites share
/// one test binary, so they all set the same pair: a suite starting its
/// server while another sets the variables gets the values it expects.
pub const INPROCESS_ROOT_ID: &str = "INPROCESSROOTKEY0001";
pub const INPROCESS_ROOT_SECRET: &str = "inprocess-secret-key-0123456789abcdefghij";

pub struct S3 {
    pub endpoint: String,
    pub access_key: String,
    pub secret_key: String,
    /// Region signed into the credential scope.
    pub region: String,
    /// Service of the credential scope: `s3`, or the admin API's.
    pub service: String,
    pub http: reqwest::Client,
}

impl S3 {
    pub fn new(endpoint: &str, access_key: &str, secret_key: &str) -> Self {
        S3 {
            endpoint: endpoint.trim_end_matches('/').to_string(),
            access_key: access_key.into(),
            secret_key: secret_key.into(),
            region: "us-east-1".into(),
            service: "s3".into(),
            http: reqwest::Client::builder()
                .tcp_nodelay(true)
                .build()
                .unwrap(),
        }
    }

    /// A client of an admin listener: SigV4 scoped to the admin service,
    /// the only signatures the admin API accepts.
    pub fn admin(endpoint: &str, access_key: &str, secret_key: &str) -> Self {
        S3 {
            service: "godwit-admin".into(),
            ..S3::new(endpoint, access_key, secret_key)
        }
    }

    /// The same client signing for another region.
    pub fn in_region(mut self, region: &str) -> Self {
        self.region = region.into();
        self
    }

    /// Sends a request signed with SigV4 and a real payload SHA-256.
    pub async fn send(
        &self,
        method: &str,
        path_and_query: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> reqwest::Response {
        self.try_send(method, path_and_query, headers, body)
            .await
            .unwrap()
    }

    /// As `send`, returning transport errors (timeouts, refused
    /// connections) instead of panicking.
    pub async fn try_send(
        &self,
        method: &str,
        path_and_query: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> reqwest::Result<reqwest::Response> {
        let url = format!("{}{}", self.endpoint, path_and_query);
        let identity =
            Credentials::new(&self.access_key, &self.secret_key, None, None, "test").into();
        let mut settings = SigningSettings::default();
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        settings.percent_encoding_mode = aws_sigv4::http_request::PercentEncodingMode::Single;
        settings.uri_path_normalization_mode =
            aws_sigv4::http_request::UriPathNormalizationMode::Disabled;
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(&self.service)
            .time(SystemTime::now())
            .settings(settings)
            .build()
            .unwrap()
            .into();
        let signable = SignableRequest::new(
            method,
            &url,
            headers.iter().map(|(k, v)| (*k, *v)),
            SignableBody::Bytes(&body),
        )
        .unwrap();
        let (instructions, _) = sign(signable, &params).unwrap().into_parts();
        let mut builder = http::Request::builder().method(method).uri(&url);
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        let mut req = builder.body(body).unwrap();
        instructions.apply_to_request_http1x(&mut req);
        self.http
            .execute(reqwest::Request::try_from(req).unwrap())
            .await
    }

    /// Sends a streamed body, signed with `UNSIGNED-PAYLOAD` (as SDKs sign
    /// a presigned or TLS upload). `headers` should carry Content-Length.
    pub async fn send_stream(
        &self,
        method: &str,
        path_and_query: &str,
        headers: &[(&str, &str)],
        body: reqwest::Body,
    ) -> reqwest::Result<reqwest::Response> {
        let url = format!("{}{}", self.endpoint, path_and_query);
        let identity =
            Credentials::new(&self.access_key, &self.secret_key, None, None, "test").into();
        let mut settings = SigningSettings::default();
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(&self.service)
            .time(SystemTime::now())
            .settings(settings)
            .build()
            .unwrap()
            .into();
        let signable = SignableRequest::new(
            method,
            &url,
            headers.iter().map(|(k, v)| (*k, *v)),
            SignableBody::UnsignedPayload,
        )
        .unwrap();
        let (instructions, _) = sign(signable, &params).unwrap().into_parts();
        let mut builder = http::Request::builder().method(method).uri(&url);
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        let mut req = builder.body(()).unwrap();
        instructions.apply_to_request_http1x(&mut req);
        let mut out = self.http.request(req.method().clone(), &url).body(body);
        for (k, v) in req.headers() {
            out = out.header(k, v);
        }
        out.send().await
    }

    pub async fn put(&self, path: &str, body: Vec<u8>) -> reqwest::Response {
        self.send("PUT", path, &[], body).await
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.send("GET", path, &[], Vec::new()).await
    }
}

pub fn md5_hex(data: &[u8]) -> String {
    use md5::Digest as _;
    hex::encode(md5::Md5::digest(data))
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(data))
}

/// Deterministic pseudo-random bytes (xorshift), so failures reproduce.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The S3 error code in an error body.
pub fn error_code(body: &str) -> String {
    body.split("<Code>")
        .nth(1)
        .and_then(|s| s.split("</Code>").next())
        .unwrap_or("")
        .to_string()
}

/// `n` distinct free ports, below the kernel's ephemeral range: a port
/// taken from that range (by binding port 0) can be handed to another
/// process's outgoing connection between this call and the server's own
/// bind, and the server then fails to start with "address in use". A
/// cursor seeded by the process id walks the lower ports instead, and a
/// port is kept only if a listener can bind it; all listeners are held
/// until every port is chosen.
pub fn free_ports<const N: usize>() -> [u16; N] {
    use std::sync::atomic::{AtomicU32, Ordering};
    static CURSOR: AtomicU32 = AtomicU32::new(u32::MAX);
    const LOW: u32 = 10_000;
    let high = ephemeral_low().clamp(LOW + 1_000, 65_535);
    let span = high - LOW;
    let _ = CURSOR.compare_exchange(
        u32::MAX,
        std::process::id().wrapping_mul(7919) % span,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    let mut listeners: Vec<TcpListener> = Vec::with_capacity(N);
    for _ in 0..span {
        if listeners.len() == N {
            break;
        }
        let port = LOW + CURSOR.fetch_add(1, Ordering::SeqCst) % span;
        if let Ok(l) = TcpListener::bind(("127.0.0.1", port as u16)) {
            listeners.push(l);
        }
    }
    assert_eq!(listeners.len(), N, "no {N} free ports below {high}");
    std::array::from_fn(|i| listeners[i].local_addr().unwrap().port())
}

/// The first port of `net.ipv4.ip_local_port_range`.
fn ephemeral_low() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// A `godwit` child process, killed on drop.
pub struct Proc {
    pub child: Child,
    pub name: String,
}

impl Proc {
    pub fn spawn(name: &str, args: &[&str], envs: &[(&str, &str)], log_dir: &Path) -> Proc {
        Proc::spawn_bin(
            Path::new(env!("CARGO_BIN_EXE_godwit")),
            name,
            args,
            envs,
            log_dir,
        )
    }

    /// As `spawn`, running the `godwit` binary at `bin` (another build).
    pub fn spawn_bin(
        bin: &Path,
        name: &str,
        args: &[&str],
        envs: &[(&str, &str)],
        log_dir: &Path,
    ) -> Proc {
        let log = std::fs::File::create(log_dir.join(format!("{name}.log"))).unwrap();
        let mut cmd = Command::new(bin);
        cmd.args(args)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null());
        for k in [
            "GODWIT_ACCESS_KEY_ID",
            "GODWIT_SECRET_ACCESS_KEY",
            "GODWIT_CLUSTER_SECRET",
            "GODWIT_DATA_DIR",
        ] {
            cmd.env_remove(k);
        }
        for (k, v) in envs {
            cmd.env(k, v);
        }
        Proc {
            child: cmd.spawn().unwrap(),
            name: name.into(),
        }
    }

    /// SIGTERM, then the exit status within `timeout`.
    pub fn terminate(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(st) = self.child.try_wait().unwrap() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `GET {admin}/health` until 200.
pub async fn wait_healthy(admin: &str, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    let http = reqwest::Client::new();
    loop {
        if let Ok(r) = http.get(format!("{admin}/health")).send().await {
            if r.status() == 200 {
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{admin} not healthy within {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A throwaway CA and a server certificate it signed, valid for
/// `localhost` and 127.0.0.1, written as PEM files into `dir`.
pub struct TestPki {
    pub ca_pem: String,
    pub ca_path: std::path::PathBuf,
    pub cert_path: std::path::PathBuf,
    pub key_path: std::path::PathBuf,
    ca: rcgen::Certificate,
    ca_key: rcgen::KeyPair,
}

impl TestPki {
    pub fn new(dir: &Path) -> TestPki {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
        let ca_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "Godwit test CA");
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = params.self_signed(&ca_key).unwrap();
        let ca_path = dir.join("ca.pem");
        std::fs::write(&ca_path, ca.pem()).unwrap();
        let mut pki = TestPki {
            ca_pem: ca.pem(),
            ca_path,
            cert_path: dir.join("server.pem"),
            key_path: dir.join("server.key"),
            ca,
            ca_key,
        };
        pki.issue("godwit test server");
        pki
    }

    /// Writes a new server certificate (and key) over the files; returns
    /// its DER.
    pub fn issue(&mut self, common_name: &str) -> Vec<u8> {
        use rcgen::{CertificateParams, DnType, KeyPair};
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        let cert = params.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        std::fs::write(&self.key_path, key.serialize_pem()).unwrap();
        std::fs::write(&self.cert_path, cert.pem()).unwrap();
        cert.der().to_vec()
    }

    /// A reqwest client that trusts this CA (and only the system's roots
    /// besides).
    pub fn client(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .use_rustls_tls()
            .add_root_certificate(reqwest::Certificate::from_pem(self.ca_pem.as_bytes()).unwrap())
            .tls_info(true)
            .build()
            .unwrap()
    }
}

/// A Prometheus sample of `name` (no labels) from `admin`/metrics.
pub async fn metric(admin: &str, name: &str) -> f64 {
    let text = reqwest::get(format!("{admin}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("{name} missing from {admin}/metrics"))
        .trim()
        .parse()
        .unwrap()
}

pub async fn eventually<F, Fut>(what: &str, timeout: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
