//! The listeners' limits on a real in-process server, probed with raw TCP
//! clients: a stalled upload is cut and leaves nothing behind, a slow
//! request head and an idle keep-alive connection are closed, connections
//! past the cap get 503 SlowDown, and the unknown-key cache lets a key
//! created a moment ago work at once. Every wait is on a condition, with a
//! generous ceiling; nothing asserts how fast.

use crate::support;

use std::time::{Duration, Instant, SystemTime};

use godwit::config::{NetArgs, ServerArgs, ServerConfig, StorageArgs};
use godwit::roles::{start_server, ServerHandle};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const ROOT_ID: &str = support::INPROCESS_ROOT_ID;
const ROOT_SECRET: &str = support::INPROCESS_ROOT_SECRET;
/// Ceiling of every wait for the server to act on a limit of 2 s.
const CEILING: Duration = Duration::from_secs(30);

struct Server {
    h: ServerHandle,
    dir: tempfile::TempDir,
}

impl Server {
    fn s3(&self) -> S3 {
        S3::new(&format!("http://{}", self.h.s3_addr), ROOT_ID, ROOT_SECRET)
    }
}

async fn server(net: NetArgs) -> Server {
    let dir = tempfile::tempdir().unwrap();
    std::env::set_var("GODWIT_ACCESS_KEY_ID", ROOT_ID);
    std::env::set_var("GODWIT_SECRET_ACCESS_KEY", ROOT_SECRET);
    let args = ServerArgs {
        data_dir: dir.path().to_path_buf(),
        s3_listen: "127.0.0.1:0".into(),
        admin_listen: "127.0.0.1:0".into(),
        net,
        storage: StorageArgs {
            // Larger than the datanode's first write batch (1 MiB + 4 KiB),
            // so that a stalled upload's block has its temporary file open.
            block_size: 4 << 20,
            ..Default::default()
        },
        ..Default::default()
    };
    let h = start_server(ServerConfig::resolve(args).unwrap())
        .await
        .unwrap();
    Server { h, dir }
}

fn short_limits() -> NetArgs {
    NetArgs {
        header_read_timeout_secs: 2,
        body_idle_timeout_secs: 2,
        keepalive_idle_secs: 2,
        ..Default::default()
    }
}

/// Reads until the server closes the connection; what it sent.
async fn read_until_closed(conn: &mut TcpStream) -> String {
    let mut got = Vec::new();
    tokio::time::timeout(CEILING, async {
        let mut buf = [0u8; 8192];
        loop {
            match conn.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .expect("the server did not close the connection");
    String::from_utf8_lossy(&got).into_owned()
}

/// SigV4 headers for a request whose payload is UNSIGNED-PAYLOAD.
fn signed_head(method: &str, addr: std::net::SocketAddr, path: &str, len: u64) -> String {
    use aws_sigv4::http_request::{
        sign, PayloadChecksumKind, SignableBody, SignableRequest, SigningSettings,
    };
    let url = format!("http://{addr}{path}");
    let identity =
        aws_credential_types::Credentials::new(ROOT_ID, ROOT_SECRET, None, None, "test").into();
    let mut settings = SigningSettings::default();
    settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region("us-east-1")
        .name("s3")
        .time(SystemTime::now())
        .settings(settings)
        .build()
        .unwrap()
        .into();
    let len_s = len.to_string();
    let host = addr.to_string();
    let headers = [("host", host.as_str()), ("content-length", len_s.as_str())];
    let signable = SignableRequest::new(
        method,
        &url,
        headers.iter().copied(),
        SignableBody::UnsignedPayload,
    )
    .unwrap();
    let (instructions, _) = sign(signable, &params).unwrap().into_parts();
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    for (k, v) in instructions.headers() {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    head
}

/// Temporary block files under the server's datanode directory.
fn temp_files(root: &std::path::Path) -> usize {
    fn walk(p: &std::path::Path, n: &mut usize) {
        let Ok(rd) = std::fs::read_dir(p) else { return };
        for e in rd.flatten() {
            let path = e.path();
            if path.is_dir() {
                walk(&path, n);
            } else if path.to_string_lossy().contains(".tmp.") {
                *n += 1;
            }
        }
    }
    let mut n = 0;
    walk(&root.join("datanode"), &mut n);
    n
}

async fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + CEILING;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_upload_is_cut_and_leaves_no_object_and_no_temp_file() {
    let s = server(short_limits()).await;
    assert_eq!(s.s3().put("/stall", Vec::new()).await.status(), 200);

    // Promise 4 MiB, send 2 MiB (past the datanode's first write batch of
    // 1 MiB + 4 KiB: the block's temporary file is open), then nothing.
    let mut conn = TcpStream::connect(s.h.s3_addr).await.unwrap();
    let head = signed_head("PUT", s.h.s3_addr, "/stall/obj", 4 << 20);
    conn.write_all(head.as_bytes()).await.unwrap();
    conn.write_all(&pattern(2 << 20, 3)).await.unwrap();
    wait_for("the block write's temporary file", || {
        temp_files(s.dir.path()) > 0
    })
    .await;

    let answer = read_until_closed(&mut conn).await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert_eq!(error_code(&answer), "RequestTimeout", "{answer}");

    let r = s.s3().get("/stall/obj").await;
    assert_eq!(r.status(), 404);
    assert_eq!(error_code(&r.text().await.unwrap()), "NoSuchKey");
    wait_for("the temporary file to be removed", || {
        temp_files(s.dir.path()) == 0
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_head_that_never_ends_is_dropped() {
    let s = server(short_limits()).await;
    let mut conn = TcpStream::connect(s.h.s3_addr).await.unwrap();
    conn.write_all(b"GET /bucket HTTP/1.1\r\nhost: x\r\n")
        .await
        .unwrap();
    let answer = read_until_closed(&mut conn).await;
    assert_eq!(answer, "", "a dropped head gets no answer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_keep_alive_connection_is_closed() {
    let s = server(short_limits()).await;
    let mut conn = TcpStream::connect(s.h.s3_addr).await.unwrap();
    // An anonymous request: a complete answer, and the connection stays
    // open for the next one...
    conn.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let answer = read_until_closed(&mut conn).await;
    // ...until it has been idle for the keep-alive timeout.
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(
        !answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_cap_get_slow_down_and_are_closed() {
    let s = server(NetArgs {
        max_connections: 2,
        ..Default::default()
    })
    .await;
    // Two connections that have been served hold the two slots.
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut c = TcpStream::connect(s.h.s3_addr).await.unwrap();
        c.write_all(b"HEAD / HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 1024];
        let n = c.read(&mut buf).await.unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 403"));
        held.push(c);
    }
    let mut third = TcpStream::connect(s.h.s3_addr).await.unwrap();
    third
        .write_all(b"GET /bucket/key HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let answer = read_until_closed(&mut third).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    let lower = answer.to_ascii_lowercase();
    assert!(lower.contains("\r\nretry-after: 1\r\n"), "{answer}");
    assert_eq!(error_code(&answer), "SlowDown");

    // A slot freed is a slot served again.
    drop(held.pop());
    let deadline = Instant::now() + CEILING;
    loop {
        let r = s.s3().get("/").await;
        if r.status() == 200 {
            break;
        }
        assert_eq!(r.status(), 503);
        assert!(Instant::now() < deadline, "the freed slot was never served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_created_after_it_was_refused_works_at_once() {
    let s = server(NetArgs::default()).await;
    let (id, secret) = (
        "NEWKEYAFTERMISS00001",
        "new-key-secret-0123456789abcdefghijk",
    );
    let newcomer = S3::new(&format!("http://{}", s.h.s3_addr), id, secret);
    let r = newcomer.get("/").await;
    assert_eq!(r.status(), 403);
    assert_eq!(error_code(&r.text().await.unwrap()), "InvalidAccessKeyId");

    let admin = S3::admin(&format!("http://{}", s.h.admin_addr), ROOT_ID, ROOT_SECRET);
    let body = serde_json::json!({ "access_key_id": id, "secret_access_key": secret });
    let r = admin
        .send(
            "POST",
            "/admin/v1/keys?name=newcomer",
            &[],
            serde_json::to_vec(&body).unwrap(),
        )
        .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());

    // No waiting out the unknown-key cache: the create cleared it.
    let r = newcomer.get("/").await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());

    // Importing the same id with another secret is refused.
    let body =
        serde_json::json!({ "access_key_id": id, "secret_access_key": "another-secret-123" });
    let r = admin
        .send(
            "POST",
            "/admin/v1/keys",
            &[],
            serde_json::to_vec(&body).unwrap(),
        )
        .await;
    assert_eq!(r.status(), 400);
}
