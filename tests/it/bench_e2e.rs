//! The bench against the real all-in-one server started in this process:
//! every workload runs, the server accepts every signature (it verifies
//! them, as the wrong-secret case shows), and cleanup leaves nothing.

use clap::Parser;

use godwit::config::{ServerArgs, ServerConfig};
use godwit::roles::{start_server, ServerHandle};
use godwit_tools::bench::{execute, BenchArgs, OpSummary, S3Client, Summary};

#[derive(Parser)]
struct BenchCli {
    #[command(flatten)]
    args: BenchArgs,
}

#[derive(Parser)]
struct ServerCli {
    #[command(flatten)]
    args: ServerArgs,
}

async fn start(dir: &std::path::Path) -> ServerHandle {
    let cli = ServerCli::try_parse_from([
        "server",
        "--data-dir",
        dir.to_str().unwrap(),
        "--s3-listen",
        "127.0.0.1:0",
        "--admin-listen",
        "127.0.0.1:0",
    ])
    .unwrap();
    start_server(ServerConfig::resolve(cli.args).unwrap())
        .await
        .unwrap()
}

fn bench_args(h: &ServerHandle, secret: &str, extra: &[&str]) -> BenchArgs {
    let endpoint = format!("http://{}", h.s3_addr);
    let mut argv = vec![
        "bench",
        "--endpoint",
        &endpoint,
        "--access-key",
        &h.root.access_key_id,
        "--secret-key",
        secret,
        "--bucket",
        "bench-e2e",
        "--no-progress",
        "--concurrency",
        "4",
    ];
    argv.extend_from_slice(extra);
    BenchCli::try_parse_from(argv).unwrap().args
}

async fn bench(h: &ServerHandle, extra: &[&str]) -> Summary {
    let args = bench_args(h, &h.root.secret_access_key, extra);
    execute(&args, false).await.unwrap()
}

/// The one row of a single-operation run, which must have no errors.
fn only<'a>(summary: &'a Summary, operation: &str) -> &'a OpSummary {
    assert_eq!(summary.operations.len(), 1, "{}", summary.to_table());
    let row = &summary.operations[0];
    assert_eq!(row.operation, operation);
    assert_eq!(row.errors, 0, "{}", summary.to_table());
    row
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_runs_every_workload_against_the_in_process_server() {
    let dir = tempfile::tempdir().unwrap();
    let h = start(dir.path()).await;

    // Streamed 2.5 MiB bodies with a real SHA-256 the server must verify,
    // overwriting a key space of 3.
    let s = bench(
        &h,
        &[
            "--op",
            "put",
            "--size",
            "2.5MiB",
            "--count",
            "12",
            "--objects",
            "3",
            "--payload",
            "signed",
        ],
    )
    .await;
    let put = only(&s, "PUT");
    assert_eq!((put.ops, put.bytes), (12, 12 * (5 << 19)));
    assert!(put.latency_us.p50 > 0 && put.latency_us.max >= put.latency_us.p99);

    // GET prepares its own key space and checks every body's length.
    let s = bench(
        &h,
        &[
            "--op",
            "get",
            "--size",
            "1MiB",
            "--objects",
            "6",
            "--count",
            "30",
        ],
    )
    .await;
    let get = only(&s, "GET");
    assert_eq!((get.ops, get.bytes), (30, 30 << 20));

    let s = bench(&h, &["--op", "head", "--objects", "10", "--count", "40"]).await;
    assert_eq!(only(&s, "HEAD").ops, 40);

    let s = bench(&h, &["--op", "list", "--objects", "10", "--count", "5"]).await;
    assert_eq!(only(&s, "LIST").ops, 5);

    // DELETE walks the prepared key space once, then stops by itself.
    let s = bench(
        &h,
        &["--op", "delete", "--objects", "25", "--duration", "60s"],
    )
    .await;
    assert_eq!(only(&s, "DELETE").ops, 25);

    // A mix stops at the count and reports each operation; cleanup then
    // removes every object under the prefix (the bucket predates this run,
    // so it stays).
    let s = bench(
        &h,
        &[
            "--op",
            "mixed",
            "--mix",
            "put=1,get=3",
            "--objects",
            "8",
            "--count",
            "60",
            "--cleanup",
            "--json",
        ],
    )
    .await;
    let total = s.total.as_ref().expect("two operations ran");
    assert_eq!(total.ops + total.errors, 60);
    assert_eq!(total.errors, 0, "{}", s.to_table());
    assert_eq!(s.workload, "put=1,get=3");
    let client = S3Client::new(
        &format!("http://{}", h.s3_addr),
        "us-east-1",
        &h.root.access_key_id,
        &h.root.secret_access_key,
        1,
    )
    .unwrap();
    let page = client
        .list_objects("bench-e2e", "", None, 1000)
        .await
        .unwrap();
    assert_eq!(page.keys, Vec::<String>::new());
    assert!(client.bucket_exists("bench-e2e").await.unwrap());

    // A bucket this run creates is removed by --cleanup.
    let mut args = bench_args(
        &h,
        &h.root.secret_access_key,
        &["--op", "put", "--count", "3", "--cleanup"],
    );
    args.bucket = "bench-e2e-own".into();
    execute(&args, false).await.unwrap();
    assert!(!client.bucket_exists("bench-e2e-own").await.unwrap());

    // A wrong secret is refused before any load is sent.
    let args = bench_args(&h, "not-the-secret", &["--op", "put", "--count", "1"]);
    let err = format!("{:#}", execute(&args, false).await.unwrap_err());
    assert!(err.contains("403"), "{err}");

    h.shutdown.cancel();
    h.stopped.await.unwrap().unwrap();
}

/// The OSS signers against the real verifier: every operation of the bench
/// is accepted with V1 and V4 signatures (the bucket too is created,
/// listed and removed through them), every PUT and GET answer carries the
/// body's CRC-64 in `x-oss-hash-crc64ecma` (the client checks it), and a
/// wrong secret is refused with 403. An AWS run with an
/// `x-amz-checksum-crc32c` header is accepted too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oss_signers_are_accepted_and_answered_in_the_oss_dialect() {
    let dir = tempfile::tempdir().unwrap();
    let h = start(dir.path()).await;

    for signer in ["oss-v1", "oss-v4"] {
        let with = |extra: &[&str]| {
            let mut args = ["--signer", signer].to_vec();
            args.extend_from_slice(extra);
            let mut a = bench_args(&h, &h.root.secret_access_key, &args);
            a.bucket = format!("bench-{signer}");
            a
        };
        // A bucket of its own: created, and removed by --cleanup, through
        // the OSS signer.
        let args = with(&[
            "--op",
            "put",
            "--size",
            "1.5MiB",
            "--count",
            "6",
            "--objects",
            "3",
        ]);
        let s = execute(&args, false).await.unwrap();
        assert_eq!(only(&s, "PUT").ops, 6, "{signer}");
        assert_eq!(s.signer, signer);

        let s = execute(
            &with(&[
                "--op",
                "get",
                "--size",
                "64KiB",
                "--objects",
                "5",
                "--count",
                "20",
            ]),
            false,
        )
        .await
        .unwrap();
        assert_eq!(only(&s, "GET").bytes, 20 * 65536, "{signer}");

        // A bucket this run creates, so that --cleanup removes it too.
        let mut mixed = with(&[
            "--op",
            "mixed",
            "--mix",
            "put=1,get=1,head=1,list=1",
            "--objects",
            "4",
            "--count",
            "24",
            "--cleanup",
        ]);
        mixed.bucket = format!("bench-{signer}-mixed");
        let s = execute(&mixed, false).await.unwrap();
        let total = s.total.as_ref().unwrap();
        assert_eq!((total.ops, total.errors), (24, 0), "{}", s.to_table());

        let client = S3Client::new(
            &format!("http://{}", h.s3_addr),
            "us-east-1",
            &h.root.access_key_id,
            &h.root.secret_access_key,
            1,
        )
        .unwrap();
        assert!(!client
            .bucket_exists(&format!("bench-{signer}-mixed"))
            .await
            .unwrap());
        assert!(client
            .bucket_exists(&format!("bench-{signer}"))
            .await
            .unwrap());

        let mut args = with(&["--op", "put", "--count", "1"]);
        args.secret_key = Some("not-the-secret".into());
        let err = format!("{:#}", execute(&args, false).await.unwrap_err());
        assert!(err.contains("403"), "{signer}: {err}");
    }

    // The AWS side of the comparison: a CRC32C header the server checks.
    let s = bench(
        &h,
        &[
            "--op",
            "put",
            "--size",
            "1.5MiB",
            "--count",
            "4",
            "--checksum",
            "crc32c",
        ],
    )
    .await;
    assert_eq!(only(&s, "PUT").ops, 4);
    // OSS clients send no AWS checksum header.
    let args = bench_args(
        &h,
        &h.root.secret_access_key,
        &["--signer", "oss-v4", "--checksum", "crc32c", "--count", "1"],
    );
    assert!(execute(&args, false).await.is_err());

    h.shutdown.cancel();
    h.stopped.await.unwrap().unwrap();
}

/// `x-amz-server-side-encryption` of a stored object, by a signed HEAD.
async fn sse_of(h: &ServerHandle, bucket: &str, key: &str) -> Option<String> {
    use godwit_common::net::s3_remote::{Body, ClientOptions, RemoteClient};
    use godwit_common::replication::RemoteInfo;
    let info = RemoteInfo {
        name: "check".into(),
        endpoint: format!("http://{}", h.s3_addr),
        access_key: h.root.access_key_id.clone(),
        secret_key: h.root.secret_access_key.clone(),
        region: "us-east-1".into(),
        bandwidth_limit: None,
        ca_pem: None,
    };
    let client = RemoteClient::with_options(&info, &ClientOptions::default()).unwrap();
    let resp = client
        .send(
            http::Method::HEAD,
            &format!("/{bucket}/{key}"),
            &[],
            Body::Empty,
        )
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "HEAD {bucket}/{key}");
    resp.headers()
        .get("x-amz-server-side-encryption")
        .map(|v| v.to_str().unwrap().to_string())
}

/// `--sse` asks for SSE-S3 on every PUT, the prepare phase's too: a GET
/// run then reads encrypted objects, and one without stores them in the
/// clear.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_sse_puts_encrypted_objects_that_gets_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let h = start(dir.path()).await;
    for (sse, prefix) in [(true, "sse/"), (false, "plain/")] {
        let mut extra = vec![
            "--op",
            "get",
            "--size",
            "1MiB",
            "--objects",
            "2",
            "--count",
            "6",
            "--prefix",
            prefix,
        ];
        if sse {
            extra.push("--sse");
        }
        let s = bench(&h, &extra).await;
        assert_eq!(s.sse, sse);
        assert_eq!(only(&s, "GET").bytes, 6 << 20);
        let got = sse_of(&h, "bench-e2e", &format!("{prefix}obj-00000001")).await;
        assert_eq!(got.as_deref(), sse.then_some("AES256"), "--sse {sse}");
    }
    // The header is AWS's: an OSS signer refuses it.
    let args = bench_args(
        &h,
        &h.root.secret_access_key,
        &["--signer", "oss-v1", "--sse", "--count", "1"],
    );
    assert!(execute(&args, false).await.is_err());

    h.shutdown.cancel();
    h.stopped.await.unwrap().unwrap();
}
