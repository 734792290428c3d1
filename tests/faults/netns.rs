//! Network namespaces for real partitions: one namespace per node, each
//! with a veth whose other end is a port of a bridge living in a hub
//! namespace of its own (so the host's firewall, Docker's included, never
//! sees the traffic), and one veth from the host into the bridge so the
//! test's clients reach every node. Partitions are nftables drops inside
//! the nodes' namespaces (a dropped packet is silence, as a cut cable: TCP
//! hangs, it is not refused).
//!
//! Everything is deleted when the [`Net`] is dropped, also while a panic
//! unwinds; namespaces left by a killed test run are collected by the
//! next one (their names carry the pid of the run that made them).
//!
//! ```ignore
//! let Some(net) = Net::new(3)? else { skip };  // None: no root or no netns
//! let ip = net.ip(0);                          // node 0's address
//! cmd.pre_exec(net.enter(0));                  // run a process inside
//! net.cut(0, 1);                               // drop 0 <-> 1 both ways
//! net.heal();                                  // drop no more
//! ```

#![allow(dead_code)]

use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Namespaces and the bridge between them.
pub struct Net {
    /// `gwf<pid>-<n>`: namespaces are `<tag>-hub` and `<tag>-<i>`.
    tag: String,
    /// The third octet of 10.213.X.0/24.
    subnet: u8,
    nodes: usize,
    /// The host's end of its veth into the bridge.
    host_if: String,
    /// Pairs cut so far.
    cuts: Vec<(usize, usize)>,
}

/// Runs a command, returning its stderr when it fails.
fn run(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args[0]))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Why namespaces cannot be used here, if they cannot.
pub fn unavailable() -> Option<String> {
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    for tool in ["ip", "nft"] {
        if Command::new(tool).arg("-V").output().is_err() {
            return Some(format!("`{tool}` is not installed"));
        }
    }
    let probe = format!("gwf{}-probe", std::process::id());
    if let Err(e) = run(&["ip", "netns", "add", &probe]) {
        return Some(format!("cannot create a network namespace: {e}"));
    }
    let _ = run(&["ip", "netns", "del", &probe]);
    None
}

/// Deletes namespaces and host links left by runs whose process is gone.
fn collect_leftovers() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some(rest) = name.strip_prefix("gwf") else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = run(&["ip", "netns", "del", name]);
        }
    }
}

impl Net {
    /// `nodes` namespaces on one bridge; `Err` with the reason when
    /// namespaces are not available (the caller prints a SKIPPED row).
    pub fn new(nodes: usize) -> Result<Net, String> {
        if let Some(why) = unavailable() {
            return Err(why);
        }
        collect_leftovers();
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tag = format!("gwf{}-{n}", std::process::id());
        // A /24 no interface of the host uses yet.
        let used = Command::new("ip")
            .args(["-o", "-4", "addr"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
            .unwrap_or_default();
        let start = (std::process::id() as usize * 7 + n as usize) % 250;
        let subnet = (0..250)
            .map(|i| ((start + i) % 250 + 1) as u8)
            .find(|s| !used.contains(&format!("10.213.{s}.")))
            .ok_or("no free 10.213.X.0/24")?;
        // The host link's name must be short (15 bytes) and unique.
        let host_if = format!("gwfh{}x{subnet}", std::process::id() % 100_000);
        let mut net = Net {
            tag,
            subnet,
            nodes,
            host_if,
            cuts: Vec::new(),
        };
        net.build()
            .map_err(|e| format!("building the namespaces: {e}"))?;
        Ok(net)
    }

    fn hub(&self) -> String {
        format!("{}-hub", self.tag)
    }

    /// Node `i`'s namespace name.
    pub fn ns(&self, i: usize) -> String {
        format!("{}-{i}", self.tag)
    }

    /// Node `i`'s address (10.213.X.(i+1)).
    pub fn ip(&self, i: usize) -> Ipv4Addr {
        Ipv4Addr::new(10, 213, self.subnet, i as u8 + 1)
    }

    fn host_ip(&self) -> Ipv4Addr {
        Ipv4Addr::new(10, 213, self.subnet, 254)
    }

    fn build(&mut self) -> Result<(), String> {
        let hub = self.hub();
        run(&["ip", "netns", "add", &hub])?;
        let inhub = |args: &[&str]| {
            let mut a = vec!["ip", "netns", "exec", &hub];
            a.extend_from_slice(args);
            run(&a)
        };
        inhub(&["ip", "link", "add", "br0", "type", "bridge"])?;
        inhub(&["ip", "link", "set", "br0", "up"])?;
        inhub(&["ip", "link", "set", "lo", "up"])?;
        // The host's port.
        let host_ip = format!("{}/24", self.host_ip());
        run(&[
            "ip",
            "link",
            "add",
            &self.host_if,
            "type",
            "veth",
            "peer",
            "name",
            "hostport",
            "netns",
            &hub,
        ])?;
        run(&["ip", "addr", "add", &host_ip, "dev", &self.host_if])?;
        run(&["ip", "link", "set", &self.host_if, "up"])?;
        inhub(&["ip", "link", "set", "hostport", "master", "br0"])?;
        inhub(&["ip", "link", "set", "hostport", "up"])?;
        for i in 0..self.nodes {
            let ns = self.ns(i);
            run(&["ip", "netns", "add", &ns])?;
            let port = format!("p{i}");
            run(&[
                "ip", "netns", "exec", &ns, "ip", "link", "add", "eth0", "type", "veth", "peer",
                "name", &port, "netns", &hub,
            ])?;
            let inns = |args: &[&str]| {
                let mut a = vec!["ip", "netns", "exec", &ns];
                a.extend_from_slice(args);
                run(&a)
            };
            let ip = format!("{}/24", self.ip(i));
            inns(&["ip", "addr", "add", &ip, "dev", "eth0"])?;
            inns(&["ip", "link", "set", "eth0", "up"])?;
            inns(&["ip", "link", "set", "lo", "up"])?;
            inhub(&["ip", "link", "set", &port, "master", "br0"])?;
            inhub(&["ip", "link", "set", &port, "up"])?;
            // The table partitions are made in; empty until a cut.
            inns(&["nft", "add", "table", "inet", "godwit_faults"])?;
            for (chain, hook) in [("in", "input"), ("out", "output")] {
                let spec = format!("{{ type filter hook {hook} priority 0 ; policy accept ; }}");
                inns(&["nft", "add", "chain", "inet", "godwit_faults", chain, &spec])?;
            }
        }
        Ok(())
    }

    /// A `pre_exec` hook that moves the child into node `i`'s namespace.
    /// The namespace file is opened here, before the fork.
    pub fn enter(&self, i: usize) -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static {
        use std::os::fd::AsRawFd;
        // Owned by the hook, so closed when the Command is dropped: an fd
        // held open would keep the namespace alive after its deletion.
        let file =
            std::fs::File::open(format!("/run/netns/{}", self.ns(i))).expect("namespace file");
        move || {
            if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        }
    }

    fn nft(&self, i: usize, rule: &str) -> Result<(), String> {
        let ns = self.ns(i);
        let mut a = vec!["ip", "netns", "exec", &ns, "nft"];
        a.extend(rule.split(' '));
        run(&a)
    }

    /// Drops every packet between nodes `a` and `b`, both ways.
    pub fn cut(&mut self, a: usize, b: usize) {
        for (x, y) in [(a, b), (b, a)] {
            let peer = self.ip(y);
            self.nft(
                x,
                &format!("add rule inet godwit_faults in ip saddr {peer} drop"),
            )
            .unwrap();
            self.nft(
                x,
                &format!("add rule inet godwit_faults out ip daddr {peer} drop"),
            )
            .unwrap();
        }
        self.cuts.push((a, b));
    }

    /// Cuts every node of `side` from every node of `other`.
    pub fn partition(&mut self, side: &[usize], other: &[usize]) {
        for &a in side {
            for &b in other {
                self.cut(a, b);
            }
        }
    }

    /// Removes every cut.
    pub fn heal(&mut self) {
        for i in 0..self.nodes {
            for chain in ["in", "out"] {
                self.nft(i, &format!("flush chain inet godwit_faults {chain}"))
                    .unwrap();
            }
        }
        self.cuts.clear();
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth ends inside it, and so
        // their peers; the host's link goes with the hub's end.
        for i in 0..self.nodes {
            let _ = run(&["ip", "netns", "del", &self.ns(i)]);
        }
        let _ = run(&["ip", "netns", "del", &self.hub()]);
        let _ = run(&["ip", "link", "del", &self.host_if]);
    }
}
