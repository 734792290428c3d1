//! An existing data dir keeps working after an upgrade.
//!
//! `tests/fixtures/datadir-<commit>.tar.gz` is the data dir of a `godwit
//! server` built at that commit, with what `write_fixture` puts in it:
//! inline and multi-block objects, metadata and tags, a multipart object,
//! an unfinished upload, a versioned key with a delete marker, an imported
//! access key. `manifest.json` beside it records the ids the old server
//! handed out. The test starts today's server on a copy and checks every
//! one of them, then that new writes work.
//!
//! A fixture is written by the old build, once, and kept:
//!
//! ```text
//! GODWIT_FIXTURE_BIN=/path/to/old/godwit \
//! GODWIT_FIXTURE_WRITE=tests/fixtures/datadir-<commit>.tar.gz \
//!   cargo test --release --test upgrade -- --nocapture
//! ```

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use support::*;

const ROOT_ID: &str = "UPGRADEROOTKEY000001";
const ROOT_SECRET: &str = "upgrade-test-root-secret-0123456789abcdef";
const APP_ID: &str = "UPGRADEAPPKEY0000001";
const APP_SECRET: &str = "upgrade-test-app-secret-0123456789abcdefgh";
const MIB: usize = 1 << 20;

/// Data dirs written by earlier builds, oldest first.
const FIXTURES: [&str; 1] = ["tests/fixtures/datadir-249e565.tar.gz"];

/// Distinct per `name` and per 4 KiB page, and mostly padding, so that
/// the fixture compresses well.
fn body(name: &str, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 4096);
    let mut page = 0u64;
    while out.len() < len {
        let start = out.len();
        out.extend_from_slice(format!("{name}:{page:08}\n").as_bytes());
        out.resize(start + 4096, b'.');
        page += 1;
    }
    out.truncate(len);
    out
}

fn path(bucket: &str, key: &str) -> String {
    format!("/{bucket}/{}", godwit_common::uri::uri_encode(key, false))
}

fn between<'a>(s: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = s.find(open)? + open.len();
    let end = s[start..].find(close)? + start;
    Some(&s[start..end])
}

fn all_between<'a>(s: &'a str, open: &str, close: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(start) = rest.find(open) {
        let from = start + open.len();
        let Some(end) = rest[from..].find(close) else {
            break;
        };
        out.push(&rest[from..from + end]);
        rest = &rest[from + end + close.len()..];
    }
    out
}

fn header(r: &reqwest::Response, name: &str) -> String {
    r.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default()
}

struct Server {
    _proc: Proc,
    s3: S3,
    admin: String,
}

async fn start(bin: &Path, data: &Path, log_dir: &Path) -> Server {
    let [s3, admin] = free_ports::<2>();
    let proc = Proc::spawn_bin(
        bin,
        "server",
        &[
            "server",
            "--data-dir",
            data.to_str().unwrap(),
            "--s3-listen",
            &format!("127.0.0.1:{s3}"),
            "--admin-listen",
            &format!("127.0.0.1:{admin}"),
            "--block-size",
            "1048576",
        ],
        &[
            ("GODWIT_ACCESS_KEY_ID", ROOT_ID),
            ("GODWIT_SECRET_ACCESS_KEY", ROOT_SECRET),
        ],
        log_dir,
    );
    let admin = format!("http://127.0.0.1:{admin}");
    wait_healthy(&admin, Duration::from_secs(60)).await;
    Server {
        _proc: proc,
        s3: S3::new(&format!("http://127.0.0.1:{s3}"), ROOT_ID, ROOT_SECRET),
        admin,
    }
}

/// One object version the old server acknowledged.
fn entry(bucket: &str, key: &str, name: &str, len: usize, r: &reqwest::Response) -> Value {
    json!({
        "bucket": bucket,
        "key": key,
        "name": name,
        "len": len,
        "version_id": header(r, "x-amz-version-id"),
        "etag": header(r, "etag"),
    })
}

async fn put(
    s3: &S3,
    bucket: &str,
    key: &str,
    name: &str,
    len: usize,
    h: &[(&str, &str)],
) -> Value {
    let r = s3.send("PUT", &path(bucket, key), h, body(name, len)).await;
    assert_eq!(r.status(), 200, "PUT {bucket}/{key}");
    entry(bucket, key, name, len, &r)
}

/// Fills a fresh data dir through the old build; returns the manifest.
async fn write_fixture(bin: &Path, data: &Path, log_dir: &Path) -> Value {
    let srv = start(bin, data, log_dir).await;
    let s3 = &srv.s3;
    let mut objects = Vec::new();

    assert_eq!(s3.put("/plain", vec![]).await.status(), 200);
    objects.push(put(s3, "plain", "empty", "empty", 0, &[]).await);
    objects.push(
        put(
            s3,
            "plain",
            "small.txt",
            "small",
            100,
            &[
                ("content-type", "text/plain"),
                ("x-amz-meta-color", "blue"),
                ("x-amz-tagging", "team=blue"),
            ],
        )
        .await,
    );
    objects.push(put(s3, "plain", "inline-4k", "inline", 4096, &[]).await);
    objects.push(
        put(
            s3,
            "plain",
            "dir/unicode é ü + space.bin",
            "one-block",
            300_000,
            &[],
        )
        .await,
    );
    objects.push(put(s3, "plain", "multi-block", "multi", 2 * MIB + 500_000, &[]).await);

    // A completed multipart object: 5 MiB + a short last part.
    let r = s3.send("POST", "/plain/mpu?uploads", &[], vec![]).await;
    let xml = r.text().await.unwrap();
    let id = between(&xml, "<UploadId>", "</UploadId>")
        .unwrap()
        .to_string();
    let mut complete = String::new();
    for (n, len) in [(1, 5 * MIB), (2, 1_234_567)] {
        let q = format!("/plain/mpu?partNumber={n}&uploadId={id}");
        let r = s3
            .send("PUT", &q, &[], body(&format!("mpu-{n}"), len))
            .await;
        assert_eq!(r.status(), 200);
        let etag = header(&r, "etag");
        complete.push_str(&format!(
            "<Part><PartNumber>{n}</PartNumber><ETag>{etag}</ETag></Part>"
        ));
    }
    let doc = format!("<CompleteMultipartUpload>{complete}</CompleteMultipartUpload>");
    let r = s3
        .send(
            "POST",
            &format!("/plain/mpu?uploadId={id}"),
            &[],
            doc.into_bytes(),
        )
        .await;
    assert_eq!(r.status(), 200);
    let xml = r.text().await.unwrap();
    let etag = between(&xml, "<ETag>", "</ETag>")
        .unwrap()
        .replace("&quot;", "\"");
    objects.push(json!({
        "bucket": "plain", "key": "mpu", "name": "mpu", "len": 5 * MIB + 1_234_567,
        "version_id": "", "etag": etag, "parts": [["mpu-1", 5 * MIB], ["mpu-2", 1_234_567]],
    }));

    // An upload left open, one part in.
    let r = s3.send("POST", "/plain/pending?uploads", &[], vec![]).await;
    let xml = r.text().await.unwrap();
    let pending = between(&xml, "<UploadId>", "</UploadId>")
        .unwrap()
        .to_string();
    let q = format!("/plain/pending?partNumber=1&uploadId={pending}");
    let r = s3.send("PUT", &q, &[], body("pending-1", 200_000)).await;
    assert_eq!(r.status(), 200);
    let pending_etag = header(&r, "etag");

    // A versioned key: three versions, then a delete marker.
    assert_eq!(s3.put("/versioned", vec![]).await.status(), 200);
    let v = b"<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>";
    let r = s3
        .send("PUT", "/versioned?versioning", &[], v.to_vec())
        .await;
    assert_eq!(r.status(), 200);
    for (n, len) in [(1, 100), (2, 5000), (3, 200_000)] {
        objects.push(put(s3, "versioned", "doc", &format!("doc-v{n}"), len, &[]).await);
    }
    let r = s3.send("DELETE", "/versioned/doc", &[], vec![]).await;
    assert_eq!(r.status(), 204);
    let marker = header(&r, "x-amz-version-id");
    assert!(!marker.is_empty());

    // An application's key, imported with a known secret.
    let admin = S3::admin(&srv.admin, ROOT_ID, ROOT_SECRET);
    let key = json!({"access_key_id": APP_ID, "secret_access_key": APP_SECRET});
    let r = admin
        .send(
            "POST",
            "/admin/v1/keys?name=upgrade-app",
            &[],
            key.to_string().into_bytes(),
        )
        .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());

    json!({
        "objects": objects,
        "delete_marker": {"bucket": "versioned", "key": "doc", "version_id": marker},
        "pending_upload": {"bucket": "plain", "key": "pending", "upload_id": pending,
                           "part_etag": pending_etag, "name": "pending-1", "len": 200_000},
    })
}

/// Every object version of the manifest reads back whole, with its ETag.
async fn check_objects(s3: &S3, m: &Value) {
    let objects = m["objects"].as_array().unwrap();
    for o in objects {
        let (bucket, key) = (o["bucket"].as_str().unwrap(), o["key"].as_str().unwrap());
        let vid = o["version_id"].as_str().unwrap();
        let mut p = path(bucket, key);
        if !vid.is_empty() {
            p.push_str(&format!("?versionId={vid}"));
        }
        let r = s3.get(&p).await;
        assert_eq!(r.status(), 200, "GET {p}");
        assert_eq!(
            header(&r, "etag"),
            o["etag"].as_str().unwrap(),
            "ETag of {p}"
        );
        if key == "small.txt" {
            assert_eq!(header(&r, "content-type"), "text/plain");
            assert_eq!(header(&r, "x-amz-meta-color"), "blue");
        }
        let want: Vec<u8> = match o["parts"].as_array() {
            // A multipart object: its parts' bodies end to end.
            Some(parts) => parts
                .iter()
                .flat_map(|p| body(p[0].as_str().unwrap(), p[1].as_u64().unwrap() as usize))
                .collect(),
            None => body(
                o["name"].as_str().unwrap(),
                o["len"].as_u64().unwrap() as usize,
            ),
        };
        let got = r.bytes().await.unwrap();
        assert!(
            got == want,
            "{p}: {} bytes back, {} written",
            got.len(),
            want.len()
        );
    }
}

/// Checks everything `write_fixture` recorded against a server on the
/// upgraded data dir, then writes through it.
async fn check(srv: &Server, m: &Value) {
    let s3 = &srv.s3;
    check_objects(s3, m).await;
    let objects = m["objects"].as_array().unwrap();
    let tags = s3
        .get("/plain/small.txt?tagging")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        tags.contains("<Key>team</Key>") && tags.contains("<Value>blue</Value>"),
        "{tags}"
    );

    // The multipart object keeps its parts.
    let r = s3
        .send("HEAD", "/plain/mpu?partNumber=2", &[], vec![])
        .await;
    assert_eq!(r.status(), 206);
    assert_eq!(header(&r, "content-length"), "1234567");

    // Listings.
    let list = s3.get("/plain?list-type=2").await.text().await.unwrap();
    let mut keys: Vec<String> = all_between(&list, "<Key>", "</Key>")
        .into_iter()
        .map(String::from)
        .collect();
    keys.sort();
    let mut want: Vec<String> = objects
        .iter()
        .filter(|o| o["bucket"] == "plain")
        .map(|o| o["key"].as_str().unwrap().to_string())
        .collect();
    want.sort();
    assert_eq!(keys, want);

    let marker = &m["delete_marker"];
    assert_eq!(s3.get("/versioned/doc").await.status(), 404);
    let versions = s3.get("/versioned?versions").await.text().await.unwrap();
    let ids = all_between(&versions, "<VersionId>", "</VersionId>");
    assert_eq!(ids.len(), 4, "{versions}");
    assert!(ids.contains(&marker["version_id"].as_str().unwrap()));
    for o in objects.iter().filter(|o| o["bucket"] == "versioned") {
        assert!(
            ids.contains(&o["version_id"].as_str().unwrap()),
            "{versions}"
        );
    }

    // The unfinished upload can be listed and completed.
    let up = &m["pending_upload"];
    let id = up["upload_id"].as_str().unwrap();
    let uploads = s3.get("/plain?uploads").await.text().await.unwrap();
    assert!(uploads.contains(id), "{uploads}");
    let etag = up["part_etag"].as_str().unwrap();
    let doc = format!(
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{etag}</ETag></Part></CompleteMultipartUpload>"
    );
    let r = s3
        .send(
            "POST",
            &format!("/plain/pending?uploadId={id}"),
            &[],
            doc.into_bytes(),
        )
        .await;
    assert_eq!(r.status(), 200);
    let got = s3.get("/plain/pending").await.bytes().await.unwrap();
    assert!(
        got == body(
            up["name"].as_str().unwrap(),
            up["len"].as_u64().unwrap() as usize
        )
    );

    // The imported key still signs, as an account of its own (named after
    // it): root's buckets are root's, so its listing of one is refused.
    let app = S3::new(&s3.endpoint, APP_ID, APP_SECRET);
    assert_eq!(app.get("/").await.status(), 200);
    assert_eq!(app.get("/plain?list-type=2").await.status(), 403);
    let admin = S3::admin(&srv.admin, ROOT_ID, ROOT_SECRET);
    let accounts: Value = admin.get("/admin/v1/accounts").await.json().await.unwrap();
    let named = |name: &str| {
        accounts
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == name)
            .unwrap_or_else(|| panic!("no account {name}: {accounts}"))
            .clone()
    };
    let (root, app_account) = (named("root"), named("upgrade-app"));
    assert_eq!(app_account["keys"], json!([APP_ID]), "{accounts}");
    let buckets = root["buckets"].as_array().unwrap();
    assert!(buckets.contains(&json!("plain")), "{accounts}");
    // Owners made before accounts (access key ids) show as root's account.
    let acl = s3.get("/plain?acl").await.text().await.unwrap();
    let root_id = root["id"].as_str().unwrap();
    assert!(
        acl.contains(&format!("<ID>{root_id}</ID>"))
            && acl.contains("<DisplayName>root</DisplayName>"),
        "{acl}"
    );

    // New writes: an object, and a fourth version under the marker.
    let r = s3.put("/plain/after-upgrade", body("after", 700_000)).await;
    assert_eq!(r.status(), 200);
    let got = s3.get("/plain/after-upgrade").await.bytes().await.unwrap();
    assert!(got == body("after", 700_000));
    let r = s3.put("/versioned/doc", body("doc-v4", 10)).await;
    assert_eq!(r.status(), 200);
    let got = s3.get("/versioned/doc").await.bytes().await.unwrap();
    assert!(got == body("doc-v4", 10));
}

fn tar(args: &[&str]) {
    let st = std::process::Command::new("tar")
        .args(args)
        .status()
        .unwrap();
    assert!(st.success(), "tar {args:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_dirs_of_earlier_builds_serve_everything() {
    let tmp = tempfile::tempdir().unwrap();
    if let Ok(out) = std::env::var("GODWIT_FIXTURE_WRITE") {
        let bin = PathBuf::from(std::env::var("GODWIT_FIXTURE_BIN").expect("GODWIT_FIXTURE_BIN"));
        let manifest = write_fixture(&bin, &tmp.path().join("data"), tmp.path()).await;
        // `start`'s server is stopped (SIGKILL on drop) when write_fixture
        // returns: what an upgrade finds after a crash, the harder case.
        std::fs::write(
            tmp.path().join("manifest.json"),
            serde_json::to_vec_pretty(&manifest).unwrap(),
        )
        .unwrap();
        tar(&[
            "-czf",
            &out,
            "-C",
            tmp.path().to_str().unwrap(),
            "data",
            "manifest.json",
        ]);
        eprintln!("wrote {out}");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for fixture in FIXTURES {
        let dir = tmp.path().join(Path::new(fixture).file_stem().unwrap());
        std::fs::create_dir_all(&dir).unwrap();
        tar(&[
            "-xzf",
            root.join(fixture).to_str().unwrap(),
            "-C",
            dir.to_str().unwrap(),
        ]);
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
        let srv = start(
            Path::new(env!("CARGO_BIN_EXE_godwit")),
            &dir.join("data"),
            &dir,
        )
        .await;
        check(&srv, &manifest).await;
        // Killed and started again: the data dir now holds rows and log
        // entries of both formats (the old build's JSON, and packed ones
        // written since this build started on it).
        drop(srv);
        let srv = start(
            Path::new(env!("CARGO_BIN_EXE_godwit")),
            &dir.join("data"),
            &dir,
        )
        .await;
        check_objects(&srv.s3, &manifest).await;
        let got = srv
            .s3
            .get("/plain/after-upgrade")
            .await
            .bytes()
            .await
            .unwrap();
        assert!(got == body("after", 700_000));
    }
}
