//! The datanode router spoken to by `BlockClient`, over a real socket.

use crate::common;

use std::sync::Arc;

use common::*;
use godwit_common::cluster::ClusterSecret;
use godwit_common::net::block_client::internal_http_client;
use godwit_common::net::block_client::BlockHttp;
use godwit_common::net::BlockClient;
use godwit_common::{BlockError, BlockStore};
use godwit_datanode::Datanode;

struct Server {
    url: String,
    dn: Arc<Datanode>,
    _dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let dn = open(dir.path(), false).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = godwit_datanode::router(dn.clone());
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Server {
        url,
        dn,
        _dir: dir,
        task,
    }
}

fn client(s: &Server) -> BlockClient {
    BlockClient::new(s.url.clone(), secret(), BlockHttp::default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trip_over_http() {
    let s = serve().await;
    let c = client(&s);
    for (n, size) in [
        (1u64, 0usize),
        (2, 1),
        (3, 65_536),
        (4, 65_537),
        (5, 10 * 1024 * 1024),
    ] {
        let id = id(n);
        let want = data(size, n);
        let w = c
            .put_block(&id, &wtok(&id), body(&want, 32 * 1024))
            .await
            .unwrap();
        assert_eq!(w.size, size as u64);
        assert_eq!(w.crc32c, crc_fast::crc32_iscsi(&want));
        let got = collect(c.get_block(&id, &rtok(&id), 0, None).await.unwrap())
            .await
            .unwrap();
        assert!(got == want, "size {size}");
    }
    // Ranged read.
    let id5 = id(5);
    let got = collect(
        c.get_block(&id5, &rtok(&id5), 1_000_000, Some(3_000_000))
            .await
            .unwrap(),
    )
    .await
    .unwrap();
    assert!(got == data(10 * 1024 * 1024, 5)[1_000_000..4_000_000]);
    // Delete, then the block is gone.
    c.delete_block(&id5).await.unwrap();
    assert_eq!(
        c.get_block(&id5, &rtok(&id5), 0, None).await.err(),
        Some(BlockError::NotFound)
    );
    eprintln!("http test datanode backend = {}", s.dn.io_backend());
}

#[tokio::test]
async fn errors_cross_the_wire_as_block_errors() {
    let s = serve().await;
    let c = client(&s);
    let id = id(1);
    let r = c.put_block(&id, &rtok(&id), body(b"abc", 1)).await;
    assert!(matches!(r, Err(BlockError::Forbidden(_))), "{r:?}");
    c.put_block(&id, &wtok(&id), body(b"abc", 1)).await.unwrap();
    let r = c.get_block(&id, &rtok(&id), 2, Some(5)).await.err();
    assert!(matches!(r, Some(BlockError::BadRequest(_))), "{r:?}");
    let r = c.get_block("nothex!", "t", 0, None).await.err();
    assert!(matches!(r, Some(BlockError::BadRequest(_))), "{r:?}");

    // Wrong cluster credential: refused before any token is looked at.
    let intruder = BlockClient::new(
        s.url.clone(),
        ClusterSecret::new("wrong"),
        BlockHttp::default(),
    );
    let r = intruder.get_block(&id, &rtok(&id), 0, None).await.err();
    assert!(matches!(r, Some(BlockError::Forbidden(_))), "{r:?}");
    assert!(matches!(
        intruder.delete_block(&id).await,
        Err(BlockError::Forbidden(_))
    ));
    let other = common::id(2);
    let r = intruder
        .put_block(&other, &wtok(&other), body(b"x", 1))
        .await;
    assert!(matches!(r, Err(BlockError::Forbidden(_))), "{r:?}");

    // Raw requests without the headers.
    let http = internal_http_client();
    let resp = http
        .get(format!("{}/block/{id}", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    let resp = http
        .get(format!("{}/block/{id}", s.url))
        .header(
            godwit_common::cluster::CLUSTER_AUTH_HEADER,
            secret().bearer(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    let e: BlockError = resp.json().await.unwrap();
    assert!(matches!(e, BlockError::Forbidden(_)));
}

#[tokio::test]
async fn unreachable_datanode_is_unavailable() {
    // Bind then drop a listener to get a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let c = BlockClient::new(
        format!("http://127.0.0.1:{port}"),
        secret(),
        BlockHttp::default(),
    );
    let id = id(1);
    assert!(matches!(
        c.get_block(&id, &rtok(&id), 0, None).await,
        Err(BlockError::Unavailable(_))
    ));
    assert!(matches!(
        c.put_block(&id, &wtok(&id), body(b"x", 1)).await,
        Err(BlockError::Unavailable(_))
    ));
}

/// A chunk failing its CRC after the response started must break the body
/// the client reads, not end it early as if it were complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corruption_mid_stream_fails_the_client_body() {
    use std::os::unix::fs::FileExt;
    let s = serve().await;
    let c = client(&s);
    let id = id(8);
    let want = data(4 * 1024 * 1024, 8);
    c.put_block(&id, &wtok(&id), body(&want, 65_536))
        .await
        .unwrap();
    // Damage a byte well past the first piece the datanode reads before answering.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(s.dn.block_path(&id).unwrap())
        .unwrap();
    let at = godwit_datanode::format::HEADER_LEN + 3_000_000;
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_all_at(&[b[0] ^ 0xff], at).unwrap();

    let stream = c
        .get_block(&id, &rtok(&id), 0, None)
        .await
        .expect("headers are sent before the bad chunk");
    let r = collect(stream).await;
    assert!(r.is_err(), "client read a short body without an error");
    // The connection pool still works afterwards.
    let id2 = common::id(9);
    c.put_block(&id2, &wtok(&id2), body(b"after", 2))
        .await
        .unwrap();
    let got = collect(c.get_block(&id2, &rtok(&id2), 0, None).await.unwrap())
        .await
        .unwrap();
    assert_eq!(got, b"after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_body_that_keeps_moving_outlives_the_io_deadline() {
    // The deadline bounds time without progress, not the transfer: a body
    // whose source sends a chunk every 150 ms for well over the 400 ms
    // deadline is written whole (the time spent waiting on our own
    // source is not the datanode's).
    let s = serve().await;
    let c = BlockClient::new(
        s.url.clone(),
        secret(),
        BlockHttp::new(std::time::Duration::from_millis(400)),
    );
    let want = data(12 * 1000, 9);
    let pieces: Vec<bytes::Bytes> = want
        .chunks(1000)
        .map(bytes::Bytes::copy_from_slice)
        .collect();
    let slow: godwit_common::ByteStream = Box::pin(futures::stream::unfold(
        pieces.into_iter(),
        |mut it| async move {
            let next = it.next()?;
            tokio::time::sleep(std::time::Duration::from_millis(150)).await;
            Some((Ok(next), it))
        },
    ));
    let id = id(7);
    let w = c.put_block(&id, &wtok(&id), slow).await.unwrap();
    assert_eq!(w.size, want.len() as u64);
    let got = collect(c.get_block(&id, &rtok(&id), 0, None).await.unwrap())
        .await
        .unwrap();
    assert_eq!(got, want);
}
