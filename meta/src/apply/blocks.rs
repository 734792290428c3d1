//! The `blocks` column family: per committed block, its reference count
//! and its placement (the datanodes holding a healthy copy), and the
//! datanode registry's administrative state.
//!
//! Placement lives here, not only in the version records that name the
//! block: a block may be named by several versions (CopyObject) and repair
//! moves copies, so this row is the one truth readers are given
//! (`MetaNode::get_object` overlays it on the manifest).
//!
//! Values: JSON `BlockRecord`. Rows written before placement was kept are
//! an 8-byte big-endian reference count; they read as a record with an
//! empty (unknown) placement, which repair and stray detection leave alone.
//!
//! A block's life (docs/architecture.md, invariant 9: nothing in flight is
//! garbage):
//!
//! 1. `allocate_blocks` records an **intent** (`intents` CF) with a
//!    deadline before the writer sends a byte; the writer renews it while
//!    its body streams.
//! 2. The commit (`PutObject`, `PutPart`) **claims** the blocks in the same
//!    command: each must hold a live intent (consumed into a `blocks` row)
//!    or belong to the copy source, which the command checks still exists.
//!    A block whose intent expired makes the commit fail: the client gets
//!    an error (RequestTimeout), never a 200 for an object GC may eat.
//! 3. When the last reference goes, or an intent expires unclaimed, the
//!    block gets a **grave** (`block_graves` CF) stamped with that time:
//!    a datanode's GC grace counts from it, not from the file's mtime.
//!    Readers still streaming it hold in-memory leases on the leader
//!    (`tier.rs`).

use godwit_common::types::*;
use godwit_common::MetaError;
use serde::{Deserialize, Serialize};

use crate::command::Reply;
use crate::store::overlay::Overlay;
use crate::store::*;

/// An `intents` row.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct IntentRecord {
    /// Past this (proposer clock, ms) the intent is dead: commits naming
    /// the block are refused and the sweep buries it.
    pub deadline_ms: i64,
}

fn grave_id_key(id: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + id.len());
    k.push(b'i');
    k.extend_from_slice(id.as_bytes());
    k
}

fn grave_time_key(since_ms: i64, id: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(9 + id.len());
    k.push(b't');
    k.extend_from_slice(&since_ms.max(0).to_be_bytes());
    k.extend_from_slice(id.as_bytes());
    k
}

/// When `id` lost its last reference (or its intent expired), if it did
/// and the grave was not swept yet.
pub fn grave_since(
    get: impl Fn(&[u8]) -> Result<Option<Vec<u8>>, MetaError>,
    id: &str,
) -> Result<Option<i64>, MetaError> {
    Ok(get(&grave_id_key(id))?
        .and_then(|b| <[u8; 8]>::try_from(b.as_slice()).ok())
        .map(i64::from_be_bytes))
}

fn bury(tx: &mut Overlay, id: &str, since_ms: i64) -> Result<(), MetaError> {
    unbury(tx, id)?;
    tx.put(CF_GRAVES, grave_id_key(id), since_ms.to_be_bytes().to_vec());
    tx.put(CF_GRAVES, grave_time_key(since_ms, id), Vec::new());
    Ok(())
}

fn unbury(tx: &mut Overlay, id: &str) -> Result<(), MetaError> {
    let since = grave_since(|k| tx.get(CF_GRAVES, k), id)?;
    if let Some(since) = since {
        tx.delete(CF_GRAVES, grave_id_key(id));
        tx.delete(CF_GRAVES, grave_time_key(since, id));
    }
    Ok(())
}

pub fn decode_intent(b: &[u8]) -> Result<IntentRecord, MetaError> {
    decode(b)
}

pub(crate) fn record_intents(
    tx: &mut Overlay,
    ids: &[String],
    deadline_ms: i64,
) -> Result<Reply, MetaError> {
    for id in ids {
        tx.put(
            CF_INTENTS,
            id.as_bytes().to_vec(),
            tx.encode(&IntentRecord { deadline_ms }),
        );
    }
    Ok(Reply::Done)
}

pub(crate) fn renew_intents(
    tx: &mut Overlay,
    ids: &[String],
    deadline_ms: i64,
    now_ms: i64,
) -> Result<Reply, MetaError> {
    let mut lost = Vec::new();
    for id in ids {
        match tx.get(CF_INTENTS, id.as_bytes())? {
            Some(b) if decode_intent(&b)?.deadline_ms >= now_ms => {
                tx.put(
                    CF_INTENTS,
                    id.as_bytes().to_vec(),
                    tx.encode(&IntentRecord { deadline_ms }),
                );
            }
            // Expired (the sweep buries it) or already claimed.
            _ => lost.push(id.clone()),
        }
    }
    Ok(Reply::Ids(lost))
}

/// The commit of `data` takes its blocks: each holds a live intent, which
/// it consumes, or belongs to `copy_source`'s version, which must still
/// exist (`add_refs` then counts the references).
pub(crate) fn claim_blocks(
    tx: &mut Overlay,
    data: &ObjectData,
    copy_source: Option<&VersionRef>,
    now_ms: i64,
) -> Result<(), MetaError> {
    let source_ids: std::collections::HashSet<String> = match copy_source {
        None => Default::default(),
        Some(src) => {
            let Some(v) = super::objects::load_version(tx, &src.bucket, &src.key, &src.version_id)?
            else {
                // Deleted since the copy read it (S3 answers the same for
                // a source that is gone).
                return Err(MetaError::NoSuchKey);
            };
            v.data.block_ids().map(str::to_string).collect()
        }
    };
    for id in data.block_ids() {
        match tx.get(CF_INTENTS, id.as_bytes())? {
            Some(b) => {
                let intent = decode_intent(&b)?;
                if intent.deadline_ms < now_ms {
                    return Err(MetaError::IntentExpired(format!(
                        "the reservation of block {id} expired before the upload committed"
                    )));
                }
                tx.delete(CF_INTENTS, id.as_bytes().to_vec());
            }
            None if source_ids.contains(id) => {}
            None => {
                return Err(MetaError::IntentExpired(format!(
                    "block {id} holds no reservation"
                )))
            }
        }
    }
    Ok(())
}

/// Intents past their deadline become graves; graves older than `keep_ms`
/// are forgotten (a datanode then falls back to its file's age, which is
/// older still). At most `max` of each per command.
pub(crate) fn sweep(
    tx: &mut Overlay,
    now_ms: i64,
    keep_ms: i64,
    max: usize,
) -> Result<Reply, MetaError> {
    let mut n = 0u64;
    let expired: Vec<(Vec<u8>, i64)> = tx
        .scan_prefix(CF_INTENTS, b"")?
        .into_iter()
        .filter_map(|(k, v)| match decode_intent(&v) {
            Ok(i) if i.deadline_ms < now_ms => Some(Ok((k, i.deadline_ms))),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        })
        .take(max)
        .collect::<Result<_, _>>()?;
    for (k, deadline) in expired {
        let id = String::from_utf8_lossy(&k).into_owned();
        tx.delete(CF_INTENTS, k);
        bury(tx, &id, deadline)?;
        n += 1;
    }
    let cutoff = now_ms - keep_ms;
    let old: Vec<Vec<u8>> = tx
        .scan_prefix_limit(CF_GRAVES, b"t", max)?
        .into_iter()
        .map(|(k, _)| k)
        .take_while(|k| {
            k.len() > 9 && i64::from_be_bytes(k[1..9].try_into().expect("8 bytes")) < cutoff
        })
        .collect();
    for k in old {
        let id = String::from_utf8_lossy(&k[9..]).into_owned();
        tx.delete(CF_GRAVES, grave_id_key(&id));
        tx.delete(CF_GRAVES, k);
        n += 1;
    }
    Ok(Reply::Count(n))
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct BlockRecord {
    /// Committed versions and live parts naming the block.
    pub refs: u64,
    pub size: u64,
    /// Datanodes holding a copy; empty for a pre-placement row (unknown).
    pub nodes: Vec<NodeId>,
}

/// Decodes a `blocks` value: a record (JSON or packed), or the bare
/// big-endian reference count of the first builds (8 bytes; a packed
/// record is longer and starts with `codec::PACKED_V1`, which no real
/// count does).
pub fn decode_record(id: &str, b: &[u8]) -> Result<BlockRecord, MetaError> {
    if b.len() == 8 && b[0] != godwit_common::codec::PACKED_V1 {
        return Ok(BlockRecord {
            refs: u64::from_be_bytes(b.try_into().expect("8 bytes")),
            ..Default::default()
        });
    }
    godwit_common::codec::decode(b)
        .map_err(|e| MetaError::Internal(format!("corrupt block record {id}: {e}")))
}

pub fn read_record(tx: &Overlay, id: &str) -> Result<Option<BlockRecord>, MetaError> {
    tx.get(CF_BLOCKS, id.as_bytes())?
        .map(|b| decode_record(id, &b))
        .transpose()
}

fn write_record(tx: &mut Overlay, id: &str, rec: &BlockRecord) {
    tx.put(CF_BLOCKS, id.as_bytes().to_vec(), tx.encode(rec));
}

fn block_refs(data: &ObjectData) -> &[BlockRef] {
    match data {
        ObjectData::Inline(_) => &[],
        ObjectData::Blocks(b) => b,
    }
}

/// One more committed version or live part names each of these blocks
/// (a CopyObject may name blocks that already have references: their
/// placement stays as repair left it).
pub(crate) fn add_refs(tx: &mut Overlay, data: &ObjectData) -> Result<(), MetaError> {
    for b in block_refs(data) {
        // Referenced again (a part completed into an object): not garbage.
        unbury(tx, &b.id)?;
        let rec = match read_record(tx, &b.id)? {
            None => BlockRecord {
                refs: 1,
                size: b.size,
                nodes: b.nodes.clone(),
            },
            Some(mut r) => {
                r.refs += 1;
                if r.nodes.is_empty() {
                    // An old row learns its placement from the manifest.
                    r.nodes = b.nodes.clone();
                    r.size = b.size;
                }
                r
            }
        };
        write_record(tx, &b.id, &rec);
    }
    Ok(())
}

/// A version or part naming these blocks is gone; a block whose count
/// reaches zero loses its row and becomes garbage for the datanodes.
pub(crate) fn drop_refs(tx: &mut Overlay, data: &ObjectData) -> Result<(), MetaError> {
    for id in data.block_ids() {
        match read_record(tx, id)? {
            // Never below zero: a missing row is already "unreferenced".
            None => {}
            Some(r) if r.refs <= 1 => {
                tx.delete(CF_BLOCKS, id.as_bytes().to_vec());
                let now = tx.now_ms;
                bury(tx, id, now)?;
            }
            Some(mut r) => {
                r.refs -= 1;
                write_record(tx, id, &r);
            }
        }
    }
    Ok(())
}

pub(crate) fn update_placement(
    tx: &mut Overlay,
    id: &str,
    expect: Vec<NodeId>,
    nodes: Vec<NodeId>,
) -> Result<Reply, MetaError> {
    if nodes.is_empty() {
        return Err(MetaError::InvalidArgument(
            "a placement names at least one datanode".into(),
        ));
    }
    let Some(mut rec) = read_record(tx, id)? else {
        // Deleted since the repair looked: the new copies are strays,
        // which the datanodes' GC removes.
        return Ok(Reply::Done);
    };
    if rec.nodes != expect {
        return Err(MetaError::InvalidRequest(format!(
            "placement of block {id} changed"
        )));
    }
    rec.nodes = nodes;
    write_record(tx, id, &rec);
    Ok(Reply::Done)
}

/// A `datanodes` row: the registration plus the admin state (an added
/// field, so rows written before it decode as `Active`).
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct DatanodeRecord {
    #[serde(flatten)]
    pub info: DatanodeInfo,
    #[serde(default)]
    pub state: DatanodeState,
}

/// Registration keeps the admin state: a decommissioned node that
/// restarts does not come back as a placement target.
pub(crate) fn register_datanode(tx: &mut Overlay, info: DatanodeInfo) -> Result<Reply, MetaError> {
    let key = info.id.to_be_bytes().to_vec();
    let state = match tx.get(CF_DATANODES, &key)? {
        Some(b) => decode::<DatanodeRecord>(&b)?.state,
        None => DatanodeState::Active,
    };
    tx.put(
        CF_DATANODES,
        key,
        tx.encode(&DatanodeRecord { info, state }),
    );
    Ok(Reply::Done)
}

pub(crate) fn set_datanode_state(
    tx: &mut Overlay,
    id: NodeId,
    state: DatanodeState,
) -> Result<Reply, MetaError> {
    let key = id.to_be_bytes().to_vec();
    let Some(b) = tx.get(CF_DATANODES, &key)? else {
        return Err(MetaError::InvalidArgument(format!("no datanode {id}")));
    };
    let mut rec: DatanodeRecord = decode(&b)?;
    // Decommissioned is final; asking to decommission again is a no-op.
    if rec.state == DatanodeState::Decommissioned && state != DatanodeState::Decommissioned {
        return Err(MetaError::InvalidRequest(format!(
            "datanode {id} is decommissioned"
        )));
    }
    rec.state = state;
    tx.put(CF_DATANODES, key, tx.encode(&rec));
    Ok(Reply::Done)
}
