//! A region of real `godwit` processes to break: 3 `godwit meta` (one Raft
//! group), 3 `godwit datanode` (replication factor 3), 1-2 `godwit gateway`,
//! each either on 127.0.0.1 with its own ports or, with
//! [`RegionSpec::netns`], in a network namespace of its own (see
//! [`crate::netns`]) so partitions can be made between any two of them.
//!
//! # Harness API (for a new scenario)
//!
//! ```ignore
//! let mut region = Region::start(RegionSpec::default()).await?;   // or ::netns()
//! let s3 = region.s3(0);                         // a client of gateway 0
//! region.create_bucket("/faults").await;
//! let leader = region.meta_leader().await;       // index into region.metas
//! region.metas[leader].kill9();                  // SIGKILL (the Proc is kept)
//! region.metas[leader].restart().await;          // same flags, same dir
//! region.datanodes[1].pause(); region.datanodes[1].resume(); // SIGSTOP/SIGCONT
//! region.set_clock(&region.datanodes[0], "+1h"); // with RegionSpec::faketime
//! if let Some(net) = region.net.as_mut() { net.cut(a, b); net.heal(); }
//! // node.slot is its index in the Net: net.cut(region.metas[0].slot, ...)
//! ```
//!
//! [`Node::spawn_with`] takes a hook for whatever else a scenario needs
//! around the process (another data dir, e.g. a FUSE mount or a small
//! filesystem for the `lossy` scenarios: set [`Node::data_dir`] before
//! [`Node::restart`]). Every process is SIGKILLed when the [`Region`] is
//! dropped, before its namespaces are deleted; logs are in
//! `region.dir/<name>.log` and are printed by [`Region::dump_logs`].

#![allow(dead_code)]

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::netns::Net;
use crate::support::{free_ports, wait_healthy, Proc, S3};

pub const ROOT_ID: &str = "FAULTSUITEROOTKEY001";
pub const ROOT_SECRET: &str = "fault-suite-secret-0123456789abcdefghijk";
pub const CLUSTER: &str = "cluster-secret-of-the-fault-suite";
pub const FAKETIME_LIB: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
const HEALTHY: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Meta,
    Datanode,
    Gateway,
    /// `godwit server`: a single-node region.
    Server,
}

/// One process of the region, restartable with the same flags.
pub struct Node {
    pub role: Role,
    pub name: String,
    /// 1-based id (meta and datanode node ids).
    pub id: u64,
    pub ip: IpAddr,
    pub port: u16,
    pub admin: u16,
    pub data_dir: PathBuf,
    /// Index in the region's [`Net`], when it has one.
    pub slot: usize,
    /// Flags after `godwit <role>`, with `{data}` for the data dir.
    pub args: Vec<String>,
    pub envs: Vec<(String, String)>,
    /// libfaketime's offset file, when the node runs under it.
    pub clock_file: Option<PathBuf>,
    pub proc: Option<Proc>,
    log_dir: PathBuf,
    netns: Option<String>,
    restarts: usize,
}

impl Node {
    pub fn url(&self) -> String {
        format!("http://{}:{}", self.ip, self.port)
    }

    pub fn admin_url(&self) -> String {
        format!("http://{}:{}", self.ip, self.admin)
    }

    pub fn pid(&self) -> i32 {
        self.proc.as_ref().expect("running").child.id() as i32
    }

    /// Starts the process (again, if it ran before).
    pub fn spawn(&mut self) {
        self.spawn_with(|_| {})
    }

    /// As `spawn`, letting the caller adjust the command.
    pub fn spawn_with(&mut self, adjust: impl FnOnce(&mut Command)) {
        let name = if self.restarts == 0 {
            self.name.clone()
        } else {
            format!("{}-restart{}", self.name, self.restarts)
        };
        self.restarts += 1;
        let log = std::fs::File::create(self.log_dir.join(format!("{name}.log"))).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_godwit"));
        let data = self.data_dir.to_str().unwrap().to_string();
        cmd.args(self.args.iter().map(|a| a.replace("{data}", &data)))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null());
        for (k, _) in std::env::vars() {
            if k.starts_with("GODWIT_") || k.starts_with("FAKETIME") || k == "LD_PRELOAD" {
                cmd.env_remove(k);
            }
        }
        for (k, v) in &self.envs {
            cmd.env(k, v);
        }
        if let Some(file) = &self.clock_file {
            cmd.env("LD_PRELOAD", FAKETIME_LIB)
                .env("FAKETIME_TIMESTAMP_FILE", file)
                // Re-read the offset file every second; only the wall
                // clock jumps (an NTP step), not CLOCK_MONOTONIC.
                .env("FAKETIME_CACHE_DURATION", "1")
                .env("DONT_FAKE_MONOTONIC", "1");
        }
        if let Some(ns) = &self.netns {
            use std::os::unix::process::CommandExt;
            let file = std::fs::File::open(format!("/run/netns/{ns}")).expect("namespace");
            unsafe {
                cmd.pre_exec(move || {
                    use std::os::fd::AsRawFd;
                    if libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        adjust(&mut cmd);
        self.proc = Some(Proc {
            child: cmd.spawn().unwrap(),
            name,
        });
    }

    pub async fn wait_healthy(&self) {
        wait_healthy(&self.admin_url(), HEALTHY).await;
    }

    /// Starts it again with the same flags and waits for its /health.
    pub async fn restart(&mut self) {
        self.kill9();
        self.spawn();
        self.wait_healthy().await;
    }

    /// SIGKILL, reaped; the node can be restarted.
    pub fn kill9(&mut self) {
        if let Some(mut p) = self.proc.take() {
            let _ = p.child.kill();
            let _ = p.child.wait();
        }
    }

    /// SIGSTOP: the process holds its sockets but answers nothing.
    pub fn pause(&self) {
        assert_eq!(unsafe { libc::kill(self.pid(), libc::SIGSTOP) }, 0);
    }

    pub fn resume(&self) {
        assert_eq!(unsafe { libc::kill(self.pid(), libc::SIGCONT) }, 0);
    }

    /// Sets the node's wall-clock offset (libfaketime syntax: `+0`,
    /// `+1h`, `-1h`, `+90`), effective within a second.
    pub fn set_clock(&self, offset: &str) {
        let file = self
            .clock_file
            .as_ref()
            .expect("the region was started with RegionSpec::faketime");
        std::fs::write(file, format!("{offset}\n")).unwrap();
    }
}

/// What to start.
#[derive(Clone, Debug)]
pub struct RegionSpec {
    pub metas: usize,
    pub datanodes: usize,
    pub gateways: usize,
    /// Each process in its own network namespace.
    pub netns: bool,
    /// Run every meta and datanode under libfaketime (offset +0 until
    /// [`Node::set_clock`]).
    pub faketime: bool,
    pub meta_flags: Vec<String>,
    pub datanode_flags: Vec<String>,
    pub gateway_flags: Vec<String>,
}

impl Default for RegionSpec {
    fn default() -> Self {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect();
        RegionSpec {
            metas: 3,
            datanodes: 3,
            gateways: 2,
            netns: false,
            faketime: false,
            meta_flags: s(&[
                "--replication-factor",
                "3",
                "--datanode-down-secs",
                "3",
                "--repair-interval-secs",
                "1",
            ]),
            datanode_flags: s(&["--heartbeat-interval-secs", "1", "--gc-interval-secs", "1"]),
            gateway_flags: s(&["--block-size", "1048576"]),
        }
    }
}

/// Why libfaketime cannot be used here, if it cannot.
pub fn faketime_unavailable() -> Option<String> {
    (!Path::new(FAKETIME_LIB).exists()).then(|| {
        format!(
            "{FAKETIME_LIB} is missing (apt-get install -y libfaketime; scripts/ensure-deps.sh)"
        )
    })
}

pub struct Region {
    pub metas: Vec<Node>,
    pub datanodes: Vec<Node>,
    pub gateways: Vec<Node>,
    /// Dropped after the nodes (field order): processes die first.
    pub net: Option<Net>,
    pub dir: tempfile::TempDir,
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Addresses for `n` nodes: in the namespaces, or free ports on loopback.
fn places(net: Option<&Net>, first_slot: usize, n: usize) -> Vec<(IpAddr, u16, u16, usize)> {
    (0..n)
        .map(|i| match net {
            Some(net) => (
                IpAddr::V4(net.ip(first_slot + i)),
                7000,
                7001,
                first_slot + i,
            ),
            None => {
                let [p, a] = free_ports::<2>();
                (IpAddr::from([127, 0, 0, 1]), p, a, first_slot + i)
            }
        })
        .collect()
}

impl Region {
    /// Starts every process and waits until the gateways are healthy.
    /// `Err` when the spec needs namespaces or libfaketime and this
    /// machine has none (the caller prints a SKIPPED row).
    pub async fn start(spec: RegionSpec) -> Result<Region, String> {
        if spec.faketime {
            if let Some(why) = faketime_unavailable() {
                return Err(why);
            }
        }
        let total = spec.metas + spec.datanodes + spec.gateways;
        let net = if spec.netns {
            Some(Net::new(total)?)
        } else {
            None
        };
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_path_buf();
        let meta_places = places(net.as_ref(), 0, spec.metas);
        let dn_places = places(net.as_ref(), spec.metas, spec.datanodes);
        let gw_places = places(net.as_ref(), spec.metas + spec.datanodes, spec.gateways);
        let url = |(ip, port, _, _): &(IpAddr, u16, u16, usize)| format!("http://{ip}:{port}");
        let peers = meta_places
            .iter()
            .enumerate()
            .map(|(i, p)| format!("{}={}", i + 1, url(p)))
            .collect::<Vec<_>>()
            .join(",");
        let endpoints = meta_places.iter().map(url).collect::<Vec<_>>().join(",");
        let secret = vec![("GODWIT_CLUSTER_SECRET".to_string(), CLUSTER.to_string())];
        let mut root = secret.clone();
        root.push(("GODWIT_ACCESS_KEY_ID".into(), ROOT_ID.into()));
        root.push(("GODWIT_SECRET_ACCESS_KEY".into(), ROOT_SECRET.into()));
        let node = |role: Role,
                    name: String,
                    id: u64,
                    p: &(IpAddr, u16, u16, usize),
                    args: Vec<String>,
                    envs: Vec<(String, String)>,
                    clock: bool| {
            let clock_file = clock.then(|| {
                let f = d.join(format!("{name}.faketime"));
                std::fs::write(&f, "+0\n").unwrap();
                f
            });
            Node {
                role,
                id,
                ip: p.0,
                port: p.1,
                admin: p.2,
                data_dir: d.join(&name),
                slot: p.3,
                args,
                envs,
                clock_file,
                proc: None,
                log_dir: d.clone(),
                netns: net.as_ref().map(|n| n.ns(p.3)),
                restarts: 0,
                name,
            }
        };
        let listen = |p: &(IpAddr, u16, u16, usize)| {
            strings(&[
                "--listen",
                &format!("{}:{}", p.0, p.1),
                "--admin-listen",
                &format!("{}:{}", p.0, p.2),
            ])
        };
        let metas: Vec<Node> = meta_places
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut args = strings(&["meta", "--data-dir", "{data}"]);
                args.extend(listen(p));
                args.extend(strings(&[
                    "--node-id",
                    &(i + 1).to_string(),
                    "--peers",
                    &peers,
                ]));
                args.extend(spec.meta_flags.iter().cloned());
                node(
                    Role::Meta,
                    format!("meta{}", i + 1),
                    i as u64 + 1,
                    p,
                    args,
                    root.clone(),
                    spec.faketime,
                )
            })
            .collect();
        let datanodes: Vec<Node> = dn_places
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut args = strings(&["datanode", "--data-dir", "{data}"]);
                args.extend(listen(p));
                args.extend(strings(&[
                    "--node-id",
                    &(i + 1).to_string(),
                    "--zone",
                    &format!("zone-{}", i + 1),
                    "--meta-endpoints",
                    &endpoints,
                ]));
                args.extend(spec.datanode_flags.iter().cloned());
                node(
                    Role::Datanode,
                    format!("dn{}", i + 1),
                    i as u64 + 1,
                    p,
                    args,
                    secret.clone(),
                    spec.faketime,
                )
            })
            .collect();
        let gateways: Vec<Node> = gw_places
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let args = vec![
                    "gateway".to_string(),
                    "--s3-listen".into(),
                    format!("{}:{}", p.0, p.1),
                    "--admin-listen".into(),
                    format!("{}:{}", p.0, p.2),
                    "--meta-endpoints".into(),
                    endpoints.clone(),
                ]
                .into_iter()
                .chain(spec.gateway_flags.iter().cloned())
                .collect();
                node(
                    Role::Gateway,
                    format!("gw{}", i + 1),
                    i as u64 + 1,
                    p,
                    args,
                    secret.clone(),
                    false,
                )
            })
            .collect();
        let mut region = Region {
            metas,
            datanodes,
            gateways,
            net,
            dir,
        };
        for n in region.all_mut() {
            n.spawn();
        }
        for n in region
            .metas
            .iter()
            .chain(&region.datanodes)
            .chain(&region.gateways)
        {
            n.wait_healthy().await;
        }
        Ok(region)
    }

    fn all_mut(&mut self) -> impl Iterator<Item = &mut Node> {
        self.metas
            .iter_mut()
            .chain(self.datanodes.iter_mut())
            .chain(self.gateways.iter_mut())
    }

    /// A SigV4 client of gateway `i`, giving up on a request after 5 s.
    pub fn s3(&self, i: usize) -> Arc<S3> {
        Arc::new(client(&self.gateways[i].url()))
    }

    pub async fn create_bucket(&self, bucket: &str) {
        let s3 = self.s3(0);
        let deadline = Instant::now() + HEALTHY;
        loop {
            match s3.try_send("PUT", bucket, &[], Vec::new()).await {
                Ok(r) if r.status() == 200 => return,
                other => {
                    assert!(
                        Instant::now() < deadline,
                        "create {bucket}: {:?}",
                        other.map(|r| r.status())
                    );
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }

    /// The meta node (index into `metas`) that every answering member
    /// agrees leads, waiting for one.
    pub async fn meta_leader(&self) -> usize {
        let deadline = Instant::now() + HEALTHY;
        loop {
            for m in &self.metas {
                if m.proc.is_none() {
                    continue;
                }
                if let Some(st) = cluster_status(m).await {
                    let agreed = st.leader.filter(|l| {
                        st.members
                            .iter()
                            .filter_map(|m| m.status.as_ref())
                            .all(|s| s.leader == Some(*l))
                    });
                    if let Some(l) = agreed {
                        if let Some(i) = self.metas.iter().position(|m| m.id == l) {
                            return i;
                        }
                    }
                }
            }
            assert!(Instant::now() < deadline, "no agreed meta leader");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits until a meta node other than `old` leads, as seen by `from`.
    pub async fn wait_new_leader(&self, old: usize, from: usize, limit: Duration) -> Option<usize> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(st) = cluster_status(&self.metas[from]).await {
                if let Some(l) = st.leader {
                    if let Some(i) = self.metas.iter().position(|m| m.id == l) {
                        if i != old {
                            return Some(i);
                        }
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        None
    }

    /// Prints the last lines of every log (after a failure).
    pub fn dump_logs(&self, lines: usize) {
        let Ok(dir) = std::fs::read_dir(self.dir.path()) else {
            return;
        };
        for e in dir.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "log") {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                // Backtrace frames are left out: a node's error from
                // `main` (and its message) would scroll out of the tail.
                let all: Vec<&str> = text.lines().filter(|l| !is_frame(l)).collect();
                eprintln!("---- {} (last {lines} lines)", p.display());
                for l in &all[all.len().saturating_sub(lines)..] {
                    eprintln!("{l}");
                }
            }
        }
    }
}

/// A line of a printed backtrace (`  12: name` or `      at file:line`).
fn is_frame(line: &str) -> bool {
    let t = line.trim_start();
    t.len() < line.len()
        && (t.starts_with("at ")
            || t.split_once(": ")
                .is_some_and(|(n, _)| n.chars().all(|c| c.is_ascii_digit())))
}

impl Drop for Region {
    fn drop(&mut self) {
        // A stopped process must be continued to die of SIGKILL promptly
        // (it does anyway, but its sockets close sooner).
        for n in self.all_mut() {
            if let Some(p) = &n.proc {
                unsafe { libc::kill(p.child.id() as i32, libc::SIGCONT) };
            }
            n.kill9();
        }
        if std::thread::panicking() || std::env::var_os("GODWIT_FAULTS_LOGS").is_some() {
            self.dump_logs(30);
        }
    }
}

/// A SigV4 S3 client of `endpoint` whose requests give up after 5 s.
pub fn client(endpoint: &str) -> S3 {
    let mut s3 = S3::new(endpoint, ROOT_ID, ROOT_SECRET);
    s3.http = reqwest::Client::builder()
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(2))
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    s3
}

/// `GET /admin/v1/cluster` of a meta node; None when it does not answer.
pub async fn cluster_status(m: &Node) -> Option<godwit_meta::cluster::ClusterStatus> {
    let mut admin = S3::admin(&m.admin_url(), ROOT_ID, ROOT_SECRET);
    admin.http = reqwest::Client::builder()
        .timeout(Duration::from_secs(3))
        .build()
        .unwrap();
    let r = admin
        .try_send("GET", "/admin/v1/cluster", &[], Vec::new())
        .await
        .ok()?;
    if r.status() != 200 {
        return None;
    }
    r.json().await.ok()
}

/// A single-node `godwit server` region (the replication scenarios), in
/// namespace slot `slot` of `net` or on loopback.
pub fn server_node(net: Option<&Net>, slot: usize, region: &str, dir: &Path) -> Node {
    let p = places(net, slot, 1)[0];
    let args = vec![
        "server".to_string(),
        "--data-dir".into(),
        "{data}".into(),
        "--s3-listen".into(),
        format!("{}:{}", p.0, p.1),
        "--admin-listen".into(),
        format!("{}:{}", p.0, p.2),
        "--region".into(),
        region.into(),
        "--block-size".into(),
        "1048576".into(),
        // Short backoff, many attempts: a partition of a few seconds must
        // not turn tasks FAILED.
        "--replication-backoff-max-ms".into(),
        "500".into(),
        "--replication-max-attempts".into(),
        "100000".into(),
    ];
    let name = format!("server-{region}");
    Node {
        role: Role::Server,
        id: 1,
        ip: p.0,
        port: p.1,
        admin: p.2,
        data_dir: dir.join(&name),
        slot,
        args,
        envs: vec![
            ("GODWIT_ACCESS_KEY_ID".into(), ROOT_ID.into()),
            ("GODWIT_SECRET_ACCESS_KEY".into(), ROOT_SECRET.into()),
        ],
        clock_file: None,
        proc: None,
        log_dir: dir.to_path_buf(),
        netns: net.map(|n| n.ns(slot)),
        restarts: 0,
        name,
    }
}
