//! TLS: a region serving https with a certificate from a private CA made
//! in the test (rcgen), a plain region replicating to it through a remote
//! registered with that CA, and a certificate swapped on SIGHUP.

use crate::support;

use std::time::{Duration, Instant};

use godwit::config::{NetArgs, ServerArgs, ServerConfig, StorageArgs};
use godwit::roles::{start_server, ServerHandle};
use support::*;

const ROOT_ID: &str = support::INPROCESS_ROOT_ID;
const ROOT_SECRET: &str = support::INPROCESS_ROOT_SECRET;

struct Region {
    h: ServerHandle,
    name: &'static str,
    /// Set for a TLS region: its clients trust this CA.
    pki: Option<TestPki>,
    _dir: tempfile::TempDir,
}

impl Region {
    fn scheme(&self) -> &str {
        if self.pki.is_some() {
            "https"
        } else {
            "http"
        }
    }

    fn client_for(&self, addr: std::net::SocketAddr, region: &str) -> S3 {
        let mut s3 =
            S3::new(&format!("{}://{addr}", self.scheme()), ROOT_ID, ROOT_SECRET).in_region(region);
        if let Some(pki) = &self.pki {
            s3.http = pki.client();
        }
        s3
    }

    fn s3(&self) -> S3 {
        self.client_for(self.h.s3_addr, self.name)
    }

    fn admin(&self) -> S3 {
        let mut admin = self.client_for(self.h.admin_addr, "us-east-1");
        admin.service = "godwit-admin".into();
        admin
    }
}

async fn region(name: &'static str, tls: bool) -> Region {
    let dir = tempfile::tempdir().unwrap();
    let pki = tls.then(|| TestPki::new(dir.path()));
    std::env::set_var("GODWIT_ACCESS_KEY_ID", ROOT_ID);
    std::env::set_var("GODWIT_SECRET_ACCESS_KEY", ROOT_SECRET);
    let args = ServerArgs {
        data_dir: dir.path().join("data"),
        s3_listen: "127.0.0.1:0".into(),
        admin_listen: "127.0.0.1:0".into(),
        region: name.into(),
        net: NetArgs {
            tls_cert: pki.as_ref().map(|p| p.cert_path.clone()),
            tls_key: pki.as_ref().map(|p| p.key_path.clone()),
            ..Default::default()
        },
        storage: StorageArgs {
            block_size: 1 << 20,
            ..Default::default()
        },
        replication: godwit::config::ReplicationArgs {
            replication_backoff_max_ms: 500,
            replication_max_attempts: 1000,
            ..Default::default()
        },
        ..Default::default()
    };
    let h = start_server(ServerConfig::resolve(args).unwrap())
        .await
        .unwrap();
    Region {
        h,
        name,
        pki,
        _dir: dir,
    }
}

/// Polls until `f` returns Some, or panics after `limit`.
async fn eventually<T, F, Fut>(what: &str, limit: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn versioned_bucket(r: &Region, bucket: &str) {
    let s3 = r.s3();
    let body = format!(
        "<CreateBucketConfiguration><LocationConstraint>{}</LocationConstraint></CreateBucketConfiguration>",
        r.name
    );
    let body = if r.name == "us-east-1" {
        Vec::new()
    } else {
        body.into_bytes()
    };
    let resp = s3.send("PUT", &format!("/{bucket}"), &[], body).await;
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    let v = b"<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>".to_vec();
    let resp = s3
        .send("PUT", &format!("/{bucket}?versioning"), &[], v)
        .await;
    assert_eq!(resp.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_region_replicates_to_a_tls_region_trusted_through_its_ca() {
    let west = region("eu-west-1", true).await;
    let east = region("us-east-1", false).await;
    let pki = west.pki.as_ref().unwrap();

    // The TLS listener answers S3 over https to a client that trusts the
    // CA, and a client that does not is refused at the handshake.
    let r = pki
        .client()
        .get(format!("https://{}/", west.h.s3_addr))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert_eq!(error_code(&r.text().await.unwrap()), "AccessDenied");
    let untrusted = reqwest::Client::builder()
        .use_rustls_tls()
        .build()
        .unwrap()
        .get(format!("https://{}/", west.h.s3_addr))
        .send()
        .await;
    assert!(
        untrusted.is_err(),
        "a certificate from an unknown CA was accepted"
    );
    // Plain HTTP to a TLS listener gets no HTTP answer.
    assert!(reqwest::get(format!("http://{}/", west.h.s3_addr))
        .await
        .is_err());

    versioned_bucket(&west, "dst").await;
    let remote = serde_json::json!({
        "name": "west",
        "endpoint": format!("https://{}", west.h.s3_addr),
        "access_key": ROOT_ID,
        "secret_key": ROOT_SECRET,
        "region": west.name,
        "bandwidth_limit": null,
        "ca_pem": pki.ca_pem,
    });
    let r = east
        .admin()
        .send(
            "POST",
            "/admin/v1/remotes",
            &[],
            serde_json::to_vec(&remote).unwrap(),
        )
        .await;
    assert_eq!(r.status(), 204, "{}", r.text().await.unwrap());
    versioned_bucket(&east, "src").await;
    let rule = "<ReplicationConfiguration><Role>arn:aws:iam::000000000000:role/godwit</Role>\
        <Rule><ID>all</ID><Priority>1</Priority><Filter><Prefix></Prefix></Filter><Status>Enabled</Status>\
        <DeleteMarkerReplication><Status>Enabled</Status></DeleteMarkerReplication>\
        <Destination><Bucket>arn:aws:s3:::dst</Bucket></Destination></Rule></ReplicationConfiguration>";
    let md5 = {
        use base64::Engine;
        use md5::Digest;
        base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(rule.as_bytes()))
    };
    let r = east
        .s3()
        .send(
            "PUT",
            "/src?replication",
            &[("content-md5", &md5)],
            rule.as_bytes().to_vec(),
        )
        .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());

    let small = pattern(1000, 7);
    let big = pattern((2 << 20) + 17, 8);
    assert_eq!(
        east.s3().put("/src/small", small.clone()).await.status(),
        200
    );
    assert_eq!(east.s3().put("/src/big", big.clone()).await.status(), 200);

    let dst = west.s3();
    for (key, want) in [("small", &small), ("big", &big)] {
        let got = eventually(
            &format!("{key} at the TLS region"),
            Duration::from_secs(60),
            || async {
                let r = dst.get(&format!("/dst/{key}")).await;
                match r.status().as_u16() {
                    200 => Some(r.bytes().await.unwrap().to_vec()),
                    _ => None,
                }
            },
        )
        .await;
        assert_eq!(&got, want, "{key}: replicated bytes differ");
    }
    let src = east.s3();
    eventually(
        "source status COMPLETED",
        Duration::from_secs(30),
        || async {
            let r = src.send("HEAD", "/src/big", &[], Vec::new()).await;
            let status = r
                .headers()
                .get("x-amz-replication-status")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            (status == "COMPLETED").then_some(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_swaps_the_certificate_for_new_handshakes() {
    let mut r = region("us-east-1", true).await;
    let url = format!("https://{}/", r.h.s3_addr);
    let served = |pki: &TestPki| {
        let (client, url) = (pki.client(), url.clone());
        async move {
            let resp = client.get(url).send().await.unwrap();
            resp.extensions()
                .get::<reqwest::tls::TlsInfo>()
                .and_then(|t| t.peer_certificate())
                .map(|c| c.to_vec())
                .unwrap()
        }
    };
    let pki = r.pki.as_mut().unwrap();
    let first = std::fs::read_to_string(&pki.cert_path).unwrap();
    let first_der = {
        use rustls_pki_types::pem::PemObject;
        rustls_pki_types::CertificateDer::from_pem_slice(first.as_bytes())
            .unwrap()
            .to_vec()
    };
    assert_eq!(served(pki).await, first_der);

    let second_der = pki.issue("godwit renewed server");
    assert_ne!(second_der, first_der);
    // A fresh client per probe: each one makes a new handshake.
    unsafe { libc::raise(libc::SIGHUP) };
    let pki = r.pki.as_ref().unwrap();
    eventually(
        "the renewed certificate",
        Duration::from_secs(20),
        || async { (served(pki).await == second_der).then_some(()) },
    )
    .await;
}
