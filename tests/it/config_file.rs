//! `godwit server --config FILE` with every key the server has: the file
//! is made from the options' own declaration (so a new option is in it
//! without touching this test), the keys that exclude each other one at a
//! time, files pointing at real files, and the server must start with it
//! and act on what the file says.

use std::path::Path;
use std::time::{Duration, Instant};

use clap::Args;
use godwit::config::{toml_keys, ServerArgs};

use crate::support::*;

/// A TOML document setting every option of `godwit server`: the declared
/// defaults, overridden by `values`; an optional key with no default must
/// be in `values` (or in `skip`, for the other side of an exclusive pair).
fn every_key(values: &[(&str, toml::Value)], skip: &[&str]) -> toml::Table {
    let defaults = serde_json::to_value(ServerArgs::default()).unwrap();
    let mut table = toml::Table::new();
    for (k, v) in defaults.as_object().unwrap() {
        if v.is_null() || k == "config" || skip.contains(&k.as_str()) {
            continue;
        }
        table.insert(k.clone(), toml::Value::try_from(v).unwrap());
    }
    for (k, v) in values {
        table.insert(k.to_string(), v.clone());
    }
    let keys = toml_keys(&ServerArgs::augment_args(clap::Command::new("server")));
    let missing: Vec<&String> = keys
        .iter()
        .filter(|k| !table.contains_key(k.as_str()) && !skip.contains(&k.as_str()))
        .collect();
    assert!(missing.is_empty(), "no value for {missing:?}");
    table
}

async fn healthy(http: &reqwest::Client, url: &str, proc: &mut Proc, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(r) = http.get(url).send().await {
            if r.status() == 200 {
                return;
            }
        }
        if let Ok(Some(status)) = proc.child.try_wait() {
            panic!(
                "server exited ({status}): {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        assert!(Instant::now() < deadline, "{url} not healthy in 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Starts a server from `table` alone and checks that it serves TLS with
/// the file's certificate on the file's ports, signs for the file's region
/// and writes blocks as the file says.
async fn starts_with(dir: &Path, pki: &TestPki, mut table: toml::Table) {
    let [s3, admin] = free_ports::<2>();
    table.insert("s3_listen".into(), format!("127.0.0.1:{s3}").into());
    table.insert("admin_listen".into(), format!("127.0.0.1:{admin}").into());
    let file = dir.join("godwit.toml");
    std::fs::write(&file, toml::to_string(&table).unwrap()).unwrap();
    let mut proc = Proc::spawn(
        "server",
        &["server", "--config", file.to_str().unwrap()],
        &[
            ("GODWIT_ACCESS_KEY_ID", INPROCESS_ROOT_ID),
            ("GODWIT_SECRET_ACCESS_KEY", INPROCESS_ROOT_SECRET),
        ],
        dir,
    );
    let http = pki.client();
    let admin_url = format!("https://127.0.0.1:{admin}");
    healthy(
        &http,
        &format!("{admin_url}/health"),
        &mut proc,
        &dir.join("server.log"),
    )
    .await;

    let mut client = S3::new(
        &format!("https://127.0.0.1:{s3}"),
        INPROCESS_ROOT_ID,
        INPROCESS_ROOT_SECRET,
    )
    .in_region("toml-region-1");
    client.http = http.clone();
    assert_eq!(client.put("/from-toml", vec![]).await.status(), 200);
    let body = pattern(300_000, 1);
    assert_eq!(
        client.put("/from-toml/obj", body.clone()).await.status(),
        200
    );
    let got = client.get("/from-toml/obj").await;
    assert_eq!(got.status(), 200);
    assert_eq!(got.bytes().await.unwrap().as_ref(), &body[..]);
    // Signed for another region: refused, so the region came from the file.
    let mut other = S3::new(
        &format!("https://127.0.0.1:{s3}"),
        INPROCESS_ROOT_ID,
        INPROCESS_ROOT_SECRET,
    );
    other.http = http.clone();
    assert_ne!(other.get("/from-toml/obj").await.status(), 200);

    let metrics = http
        .get(format!("{admin_url}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.lines().any(|l| l == "godwit_datanode_direct_io 0"),
        "direct_io = false in the file"
    );
    assert_eq!(
        proc.terminate(Duration::from_secs(30)).map(|s| s.success()),
        Some(true)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_starts_with_every_key_in_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::new(dir.path());
    let clock = dir.path().join("clock-offset");
    std::fs::write(&clock, "0").unwrap();
    let path = |p: &Path| toml::Value::from(p.to_str().unwrap());
    let common = |data: &str| {
        vec![
            ("data_dir", path(&dir.path().join(data))),
            ("region", "toml-region-1".into()),
            ("domains", toml::Value::from(vec!["s3.toml.test"])),
            ("tls_cert", path(&pki.cert_path)),
            ("tls_key", path(&pki.key_path)),
            ("ca_file", path(&pki.ca_path)),
            ("insecure_skip_verify", false.into()),
            ("direct_io", false.into()),
            ("block_size", toml::Value::Integer(128 << 10)),
            ("write_quorum", toml::Value::Integer(1)),
            ("zone", "zone-a".into()),
            ("test_clock_offset_file", path(&clock)),
        ]
    };

    // The key ring file, not the single master key.
    let ring = dir.path().join("ring.json");
    godwit_common::sse::KeyRing::open_or_create(&ring).unwrap();
    let mut values = common("data-a");
    values.push(("sse_key_file", path(&ring)));
    starts_with(dir.path(), &pki, every_key(&values, &["sse_master_key"])).await;

    // The single master key, not the key ring file.
    let mut values = common("data-b");
    values.push((
        "sse_master_key",
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=".into(),
    ));
    starts_with(dir.path(), &pki, every_key(&values, &["sse_key_file"])).await;
}
