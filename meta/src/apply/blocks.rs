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

use godwit_common::types::*;
use godwit_common::MetaError;
use serde::{Deserialize, Serialize};

use crate::command::Reply;
use crate::store::overlay::Overlay;
use crate::store::*;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct BlockRecord {
    /// Committed versions and live parts naming the block.
    pub refs: u64,
    pub size: u64,
    /// Datanodes holding a copy; empty for a pre-placement row (unknown).
    pub nodes: Vec<NodeId>,
}

/// Decodes a `blocks` value (either format).
pub fn decode_record(id: &str, b: &[u8]) -> Result<BlockRecord, MetaError> {
    if b.len() == 8 {
        return Ok(BlockRecord {
            refs: u64::from_be_bytes(b.try_into().expect("8 bytes")),
            ..Default::default()
        });
    }
    serde_json::from_slice(b)
        .map_err(|e| MetaError::Internal(format!("corrupt block record {id}: {e}")))
}

pub fn read_record(tx: &Overlay, id: &str) -> Result<Option<BlockRecord>, MetaError> {
    tx.get(CF_BLOCKS, id.as_bytes())?
        .map(|b| decode_record(id, &b))
        .transpose()
}

fn write_record(tx: &mut Overlay, id: &str, rec: &BlockRecord) {
    tx.put(CF_BLOCKS, id.as_bytes().to_vec(), encode(rec));
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
            Some(r) if r.refs <= 1 => tx.delete(CF_BLOCKS, id.as_bytes().to_vec()),
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
    tx.put(CF_DATANODES, key, encode(&DatanodeRecord { info, state }));
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
    tx.put(CF_DATANODES, key, encode(&rec));
    Ok(Reply::Done)
}
