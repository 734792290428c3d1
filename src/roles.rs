//! Wiring of the roles: `server` (all in one process, in-process doors)
//! and `meta` / `datanode` / `gateway` (one role each, network doors).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use godwit_common::cluster::ClusterSecret;
use godwit_common::net::MetaClient;
use godwit_common::types::{AccessKey, Account, DatanodeInfo};
use godwit_common::{AdminMeta, BlockMeta, BlockStore};
use godwit_datanode::{Datanode, DatanodeConfig};
use godwit_gateway::{Gateway, GatewayConfig};
use godwit_meta::{MetaConfig, MetaNode};
use godwit_replication::Replicator;
use tokio_util::sync::CancellationToken;

use crate::admin::server::{AdminState, MetaHandles};
use crate::config::{
    DatanodeRoleConfig, DatanodeTier, GatewayRoleConfig, IoBackend, MetaRoleConfig,
    ReplicatorRoleConfig, ServerConfig, Storage,
};
use crate::credentials::{self, RootCredentials};
use crate::listen;
use crate::routing::{LocalRouter, NetworkRouter};

/// The datanode id of the all-in-one server's single datanode.
const LOCAL_DATANODE_ID: u64 = 1;

use godwit_common::clock::now_ms;

/// Makes sure the root account exists, makes the configured root key the
/// stored root key of that account (replacing a root key whose secret
/// changed), and gives keys stored before accounts existed their accounts
/// (`AdminMeta::adopt_keys`, a no-op once done).
async fn install_root_key(meta: &dyn AdminMeta, creds: &RootCredentials) -> anyhow::Result<()> {
    let root = meta
        .put_account(Account {
            id: Account::new_id(),
            name: "root".into(),
            email: None,
            created_ms: now_ms(),
            is_root: true,
        })
        .await?;
    let key = AccessKey {
        access_key_id: creds.access_key_id.clone(),
        secret_access_key: creds.secret_access_key.clone(),
        name: "root".into(),
        created_ms: now_ms(),
        is_root: true,
        account: root.id.clone(),
    };
    let stored = meta.put_access_key(key.clone()).await?;
    if stored.secret_access_key != key.secret_access_key
        || !stored.is_root
        || stored.account != root.id
    {
        meta.delete_access_key(&key.access_key_id).await?;
        meta.put_access_key(key).await?;
    }
    let adopted = meta.adopt_keys().await?;
    if adopted > 0 {
        tracing::info!(adopted, "keys from before accounts now have accounts");
    }
    Ok(())
}

fn gateway_config(
    region: &str,
    s: &Storage,
    domains: &[String],
    default_public_access_block: bool,
    sse_keys: crate::config::SharedKeyRing,
) -> GatewayConfig {
    GatewayConfig {
        region: region.to_string(),
        inline_threshold: s.inline_threshold,
        block_size: s.block_size,
        max_object_size: 5 << 40,
        domains: domains.to_vec(),
        default_public_access_block,
        sse_keys,
    }
}

/// Starts the admin listener at once (so /health answers 503 while the
/// roles start) and returns the readiness flag.
async fn start_admin(
    addr: &str,
    meta: Option<MetaHandles>,
    serving: &listen::Serving,
    shutdown: &CancellationToken,
    tasks: &mut Vec<tokio::task::JoinHandle<anyhow::Result<()>>>,
) -> anyhow::Result<(Arc<AdminState>, std::net::SocketAddr)> {
    let state = Arc::new(AdminState::new(meta));
    let listener = listen::bind(addr).await?;
    let local = listener.local_addr()?;
    tracing::info!(addr = %local, scheme = serving.scheme(), "admin listener");
    let (dashboard, lag_sampler) =
        crate::admin::ui::Dashboard::start(state.clone(), local, shutdown.clone());
    tasks.push(lag_sampler);
    tasks.push(tokio::spawn(listen::serve(
        listener,
        crate::admin::server::router(state.clone()).merge(dashboard),
        serving.clone(),
        shutdown.clone(),
    )));
    Ok((state, local))
}

async fn join_all(tasks: Vec<tokio::task::JoinHandle<anyhow::Result<()>>>) -> anyhow::Result<()> {
    for t in tasks {
        t.await.context("listener task panicked")??;
    }
    Ok(())
}

/// The address a role registers for itself: `https://host:port` when its
/// listeners serve TLS (peers then call it over https), else `host:port`.
fn advertised(addr: &str, serving: &listen::Serving) -> String {
    match serving.scheme() {
        "https" if !addr.contains("://") => format!("https://{addr}"),
        _ => addr.to_string(),
    }
}

/// A running all-in-one server (for in-process tests and `run_server`).
pub struct ServerHandle {
    pub s3_addr: std::net::SocketAddr,
    pub admin_addr: std::net::SocketAddr,
    pub root: RootCredentials,
    /// Cancel to stop; then await `stopped`.
    pub shutdown: CancellationToken,
    pub stopped: tokio::task::JoinHandle<anyhow::Result<()>>,
}

/// Runs the all-in-one server until SIGTERM/SIGINT.
pub async fn run_server(cfg: ServerConfig) -> anyhow::Result<()> {
    let handle = start_server(cfg).await?;
    listen::cancel_on_signal(handle.shutdown.clone());
    handle.stopped.await.context("server task panicked")?
}

/// Starts every role in this process and returns once the S3 listener
/// serves.
pub async fn start_server(cfg: ServerConfig) -> anyhow::Result<ServerHandle> {
    godwit_common::disk::create_dir_durable(&cfg.data_dir)
        .with_context(|| format!("creating {}", cfg.data_dir.display()))?;
    let shutdown = CancellationToken::new();
    let serving = cfg.net.start(&shutdown)?;
    let mut tasks = Vec::new();
    let (admin, admin_addr) =
        start_admin(&cfg.admin_listen, None, &serving, &shutdown, &mut tasks).await?;
    let s3_listener = listen::bind(&cfg.s3_listen).await?;
    let s3_addr = s3_listener.local_addr()?;

    let secret = ClusterSecret::new(&credentials::cluster_secret(&cfg.data_dir)?);
    let root = credentials::root_credentials(&cfg.data_dir)?;
    let meta = MetaNode::open(MetaConfig {
        node_id: 1,
        data_dir: cfg.data_dir.join("meta"),
        advertise_addr: "127.0.0.1:0".into(),
        cluster_secret: secret.clone(),
        inline_threshold: cfg.storage.inline_threshold,
        min_part_size: cfg.storage.min_part_size,
        replication_factor: cfg.tier.replication_factor,
        bootstrap: true,
        snapshot_chunk_size: godwit_meta::DEFAULT_SNAPSHOT_CHUNK_SIZE,
        reserve_bytes: cfg.storage.meta_reserve_bytes,
        clock: cfg.storage.meta_clock.clone(),
    })
    .await?;
    meta.set_replication_max_attempts(cfg.replication.max_attempts);
    // Readers live in this process: none outlives a restart of meta.
    meta.set_datanode_policy(godwit_meta::DatanodePolicy {
        lease_guard: Duration::ZERO,
        ..cfg.tier.policy.clone()
    });
    let datanode = Datanode::open(DatanodeConfig {
        node_id: LOCAL_DATANODE_ID,
        data_dir: cfg.data_dir.join("datanode"),
        cluster_secret: secret.clone(),
        force_threadpool: cfg.storage.io_backend == IoBackend::Threadpool,
        direct_io: cfg.storage.direct_io,
        reserve_bytes: cfg.storage.reserve_bytes,
    })
    .await?;
    meta.register_datanode(DatanodeInfo {
        id: LOCAL_DATANODE_ID,
        addr: "in-process".into(),
        zone: cfg.datanode_tier.zone.clone(),
    })
    .await?;
    install_root_key(meta.as_ref(), &root).await?;
    let gc = datanode.spawn_gc(
        meta.clone(),
        cfg.storage.gc_grace,
        cfg.storage.gc_interval,
        shutdown.clone(),
    );

    let (heartbeat, scrubber) = start_datanode_upkeep(
        &datanode,
        meta.clone(),
        "in-process",
        &cfg.datanode_tier,
        &shutdown,
    );

    let nodes: HashMap<u64, Arc<dyn BlockStore>> =
        HashMap::from([(LOCAL_DATANODE_ID, datanode.clone() as Arc<dyn BlockStore>)]);
    let router: Arc<dyn godwit_common::BlockRouter> =
        Arc::new(LocalRouter::new(nodes, cfg.storage.io_deadline).report_to(meta.clone()));
    meta.start_repair(router.clone());
    meta.start_lifecycle(cfg.storage.lifecycle);
    let gateway = Gateway::new(
        gateway_config(
            &cfg.region,
            &cfg.storage,
            &cfg.domains,
            cfg.default_public_access_block,
            cfg.sse_keys.clone(),
        ),
        meta.clone(),
        meta.clone(),
        router.clone(),
    );
    let replicator = Replicator::new(
        godwit_replication::ReplicatorConfig {
            sse_keys: cfg.sse_keys.clone(),
            ..cfg.replication.clone()
        },
        meta.clone(),
        meta.clone(),
        router,
    )
    .spawn(shutdown.clone());
    admin.set_meta(MetaHandles::of(meta.clone()));
    admin.set_meta_node(meta.clone(), root.clone());
    admin.set_on_key_created(Arc::new({
        let gateway = gateway.clone();
        move |id: &str| gateway.key_created(id)
    }));
    tracing::info!(addr = %s3_listener.local_addr()?, scheme = serving.scheme(), region = %cfg.region, data_dir = %cfg.data_dir.display(), "S3 listener");
    tasks.push(tokio::spawn(listen::serve(
        s3_listener,
        gateway.router(),
        serving.clone(),
        shutdown.clone(),
    )));
    admin.ready.store(true, Ordering::Release);

    let stopped = tokio::spawn(async move {
        let result = join_all(tasks).await;
        let _ = gc.await;
        let _ = heartbeat.await;
        let _ = scrubber.await;
        let _ = replicator.await;
        meta.shutdown().await;
        tracing::info!("stopped");
        result
    });
    Ok(ServerHandle {
        s3_addr,
        admin_addr,
        root,
        shutdown,
        stopped,
    })
}

pub async fn run_meta(cfg: MetaRoleConfig) -> anyhow::Result<()> {
    godwit_common::disk::create_dir_durable(&cfg.data_dir)?;
    let shutdown = CancellationToken::new();
    listen::cancel_on_signal(shutdown.clone());
    let serving = cfg.net.start(&shutdown)?;
    let mut tasks = Vec::new();
    let (admin, _) = start_admin(&cfg.admin_listen, None, &serving, &shutdown, &mut tasks).await?;
    let internal = listen::bind(&cfg.listen).await?;
    let secret = ClusterSecret::new(&cfg.cluster_secret);
    let root = credentials::root_credentials(&cfg.data_dir)?;
    // With --peers, the address the group knows this node by is its entry.
    let advertise = cfg
        .peers
        .get(&cfg.node_id)
        .cloned()
        .unwrap_or_else(|| advertised(&cfg.advertise, &serving));
    let meta = MetaNode::open(MetaConfig {
        node_id: cfg.node_id,
        data_dir: cfg.data_dir.join("meta"),
        advertise_addr: advertise,
        cluster_secret: secret,
        inline_threshold: cfg.storage.inline_threshold,
        min_part_size: cfg.storage.min_part_size,
        replication_factor: cfg.tier.replication_factor,
        bootstrap: cfg.bootstrap && cfg.peers.is_empty(),
        snapshot_chunk_size: cfg.snapshot_chunk_size,
        reserve_bytes: cfg.storage.meta_reserve_bytes,
        clock: cfg.storage.meta_clock.clone(),
    })
    .await?;
    meta.set_datanode_policy(cfg.tier.policy.clone());
    // The repair loop (active on the leader) reaches datanodes through
    // their registry, read from this node itself.
    let block_router = NetworkRouter::new(
        ClusterSecret::new(&cfg.cluster_secret),
        cfg.storage.io_deadline,
    );
    block_router.spawn_refresh(meta.clone(), Duration::from_secs(5));
    meta.start_repair(block_router);
    meta.start_lifecycle(cfg.storage.lifecycle);
    // Replicator roles decide when a task has failed for good
    // (`--replication-max-attempts`); meta adds no lower limit of its own.
    meta.set_replication_max_attempts(u32::MAX);
    // Serve Raft before joining: the peers must reach this node to elect.
    tasks.push(tokio::spawn(listen::serve(
        internal,
        godwit_meta::router(meta.clone()),
        serving.clone(),
        shutdown.clone(),
    )));
    if !cfg.peers.is_empty() {
        meta.join_peers(&cfg.peers).await?;
    }
    admin.set_meta_node(meta.clone(), root.clone());
    // The root key is a Raft write: it waits for a quorum (the other meta
    // nodes may start later), and the node is ready once it is stored.
    let ready = tokio::spawn({
        let meta = meta.clone();
        let admin = admin.clone();
        let shutdown = shutdown.clone();
        let node_id = cfg.node_id;
        async move {
            let mut attempts = 0u32;
            loop {
                match install_root_key(meta.as_ref(), &root).await {
                    Ok(()) => break,
                    Err(e) => {
                        // Every 10 s.
                        if attempts.is_multiple_of(20) {
                            tracing::info!(error = %e, "waiting for a meta quorum");
                        }
                        attempts += 1;
                        tokio::select! {
                            _ = shutdown.cancelled() => return,
                            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                        }
                    }
                }
            }
            admin.set_meta(MetaHandles::of(meta));
            admin.ready.store(true, Ordering::Release);
            tracing::info!(node_id, "meta role ready");
        }
    });
    tracing::info!(listen = %cfg.listen, node_id = cfg.node_id, "meta role serving");
    let result = join_all(tasks).await;
    ready.abort();
    meta.shutdown().await;
    result
}

/// A datanode's heartbeat and scrubber tasks.
fn start_datanode_upkeep(
    datanode: &Arc<Datanode>,
    meta: Arc<dyn BlockMeta>,
    advertise: &str,
    tier: &DatanodeTier,
    shutdown: &CancellationToken,
) -> (tokio::task::JoinHandle<()>, tokio::task::JoinHandle<()>) {
    let heartbeat = datanode.spawn_heartbeat(
        meta.clone(),
        advertise.to_string(),
        tier.zone.clone(),
        tier.heartbeat_interval,
        shutdown.clone(),
    );
    let scrubber = datanode.spawn_scrubber(meta, tier.scrub.clone(), shutdown.clone());
    (heartbeat, scrubber)
}

/// Retries a start-up call until meta answers (roles may start in any order).
async fn until_ok<T, F, Fut>(what: &str, mut f: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        match f().await {
            Ok(v) => return Ok(v),
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::info!(error = %e, "{what}: retrying");
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            Err(e) => return Err(e.context(what.to_string())),
        }
    }
}

pub async fn run_datanode(cfg: DatanodeRoleConfig) -> anyhow::Result<()> {
    godwit_common::disk::create_dir_durable(&cfg.data_dir)?;
    let shutdown = CancellationToken::new();
    listen::cancel_on_signal(shutdown.clone());
    let serving = cfg.net.start(&shutdown)?;
    // Gateways and meta reach this node at its registered address.
    let advertise = advertised(&cfg.advertise, &serving);
    let mut tasks = Vec::new();
    let secret = ClusterSecret::new(&cfg.meta.cluster_secret);
    let meta = Arc::new(MetaClient::new(cfg.meta.endpoints.clone(), secret.clone()));
    let (admin, _) = start_admin(&cfg.admin_listen, None, &serving, &shutdown, &mut tasks).await?;
    let internal = listen::bind(&cfg.listen).await?;
    let datanode = Datanode::open(DatanodeConfig {
        node_id: cfg.node_id,
        data_dir: cfg.data_dir.clone(),
        cluster_secret: secret,
        force_threadpool: cfg.storage.io_backend == IoBackend::Threadpool,
        direct_io: cfg.storage.direct_io,
        reserve_bytes: cfg.storage.reserve_bytes,
    })
    .await?;
    tasks.push(tokio::spawn(listen::serve(
        internal,
        godwit_datanode::router(datanode.clone()),
        serving.clone(),
        shutdown.clone(),
    )));
    let info = DatanodeInfo {
        id: cfg.node_id,
        addr: advertise.clone(),
        zone: cfg.tier.zone.clone(),
    };
    until_ok("registering with meta", || async {
        Ok(meta.register_datanode(info.clone()).await?)
    })
    .await?;
    let gc = datanode.spawn_gc(
        meta.clone(),
        cfg.storage.gc_grace,
        cfg.storage.gc_interval,
        shutdown.clone(),
    );
    let (heartbeat, scrubber) =
        start_datanode_upkeep(&datanode, meta.clone(), &advertise, &cfg.tier, &shutdown);
    admin.ready.store(true, Ordering::Release);
    tracing::info!(listen = %cfg.listen, node_id = cfg.node_id, zone = ?cfg.tier.zone, "datanode role ready");
    let result = join_all(tasks).await;
    let _ = gc.await;
    let _ = heartbeat.await;
    let _ = scrubber.await;
    result
}

pub async fn run_gateway(cfg: GatewayRoleConfig) -> anyhow::Result<()> {
    let shutdown = CancellationToken::new();
    listen::cancel_on_signal(shutdown.clone());
    let serving = cfg.net.start(&shutdown)?;
    let mut tasks = Vec::new();
    let secret = ClusterSecret::new(&cfg.meta.cluster_secret);
    let meta = Arc::new(MetaClient::new(cfg.meta.endpoints.clone(), secret.clone()));
    let (admin, _) = start_admin(&cfg.admin_listen, None, &serving, &shutdown, &mut tasks).await?;
    let s3_listener = listen::bind(&cfg.s3_listen).await?;
    let router = NetworkRouter::new(secret, cfg.storage.io_deadline);
    // Serve only once a datanode is known: a gateway that started before
    // its datanodes registered would otherwise fail writes until the next
    // refresh.
    until_ok("waiting for a registered datanode", || async {
        match router.refresh(meta.as_ref()).await? {
            0 => anyhow::bail!("no datanode registered yet"),
            _ => Ok(()),
        }
    })
    .await?;
    router.spawn_refresh(meta.clone(), Duration::from_secs(5));
    router.report_to(meta.clone());
    let gateway = Gateway::new(
        gateway_config(
            &cfg.region,
            &cfg.storage,
            &cfg.domains,
            cfg.default_public_access_block,
            cfg.sse_keys.clone(),
        ),
        meta.clone(),
        meta.clone(),
        router,
    );
    admin.set_meta(MetaHandles::of(meta));
    admin.set_on_key_created(Arc::new({
        let gateway = gateway.clone();
        move |id: &str| gateway.key_created(id)
    }));
    tasks.push(tokio::spawn(listen::serve(
        s3_listener,
        gateway.router(),
        serving.clone(),
        shutdown.clone(),
    )));
    admin.ready.store(true, Ordering::Release);
    tracing::info!(s3 = %cfg.s3_listen, scheme = serving.scheme(), "gateway role ready");
    join_all(tasks).await
}

pub async fn run_replicator(cfg: ReplicatorRoleConfig) -> anyhow::Result<()> {
    let shutdown = CancellationToken::new();
    listen::cancel_on_signal(shutdown.clone());
    let serving = cfg.net.start(&shutdown)?;
    let mut tasks = Vec::new();
    let secret = ClusterSecret::new(&cfg.meta.cluster_secret);
    let meta = Arc::new(MetaClient::new(cfg.meta.endpoints.clone(), secret.clone()));
    let (admin, _) = start_admin(&cfg.admin_listen, None, &serving, &shutdown, &mut tasks).await?;
    let router = NetworkRouter::new(secret, godwit_common::block_api::DEFAULT_IO_DEADLINE);
    until_ok("waiting for a registered datanode", || async {
        match router.refresh(meta.as_ref()).await? {
            0 => anyhow::bail!("no datanode registered yet"),
            _ => Ok(()),
        }
    })
    .await?;
    router.spawn_refresh(meta.clone(), Duration::from_secs(5));
    router.report_to(meta.clone());
    let worker = Replicator::new(
        godwit_replication::ReplicatorConfig {
            sse_keys: cfg.sse_keys,
            ..cfg.replication
        },
        meta.clone(),
        meta.clone(),
        router,
    )
    .spawn(shutdown.clone());
    admin.set_meta(MetaHandles::of(meta));
    admin.ready.store(true, Ordering::Release);
    tracing::info!("replicator role ready");
    let result = join_all(tasks).await;
    let _ = worker.await;
    result
}
