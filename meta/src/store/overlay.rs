//! `Overlay`: the pending writes of one `apply` call, readable before they
//! are written. A proposal carries many commands (group commit) and a later
//! command must see what an earlier one wrote (two puts of one key in one
//! entry), yet all of them, plus `last_applied`, must reach rocksdb in one
//! `WriteBatch` so that a crash never applies half an entry.

use std::collections::BTreeMap;
use std::sync::Arc;

use godwit_common::codec::Format;
use godwit_common::MetaError;
use rocksdb::{Direction, IteratorMode, WriteBatch, DB};

use super::{cf, db_err};

pub struct Overlay {
    db: Arc<DB>,
    /// (column family, key) -> Some(value) for a put, None for a delete.
    pending: BTreeMap<(&'static str, Vec<u8>), Option<Vec<u8>>>,
    /// Since the last `savepoint`: each written slot and what it held
    /// before (None: it was not pending), newest last.
    undo: Vec<UndoSlot>,
    /// The proposer's clock of the command being applied (0 when the
    /// command carries none): when a dropped reference buries a block.
    pub now_ms: i64,
    /// The format rows are written in (`super::KEY_RECORD_FORMAT`).
    pub format: Format,
}

/// A (key, value) row.
pub type Row = (Vec<u8>, Vec<u8>);

type UndoSlot = ((&'static str, Vec<u8>), Option<Option<Vec<u8>>>);

impl Overlay {
    pub fn new(db: Arc<DB>) -> Self {
        // Unreadable: JSON, which every member reads.
        let format = super::record_format(&db).unwrap_or(Format::Json);
        Overlay {
            format,
            db,
            pending: BTreeMap::new(),
            undo: Vec::new(),
            now_ms: 0,
        }
    }

    /// Starts a command: a later `rollback` undoes only what follows.
    pub fn savepoint(&mut self) {
        self.undo.clear();
    }

    /// Undoes every write since the last `savepoint` (a refused command
    /// leaves no trace, even if it failed halfway).
    pub fn rollback(&mut self) {
        while let Some((slot, before)) = self.undo.pop() {
            match before {
                Some(v) => self.pending.insert(slot, v),
                None => self.pending.remove(&slot),
            };
        }
    }

    fn write(&mut self, cf_name: &'static str, key: Vec<u8>, value: Option<Vec<u8>>) {
        let before = self.pending.insert((cf_name, key.clone()), value);
        self.undo.push(((cf_name, key), before));
    }

    pub fn get(&self, cf_name: &'static str, key: &[u8]) -> Result<Option<Vec<u8>>, MetaError> {
        if let Some(v) = self.pending.get(&(cf_name, key.to_vec())) {
            return Ok(v.clone());
        }
        self.db.get_cf(cf(&self.db, cf_name), key).map_err(db_err)
    }

    /// `v` encoded as a row of this state machine.
    pub fn encode<T: serde::Serialize>(&self, v: &T) -> Vec<u8> {
        super::encode(self.format, v)
    }

    pub fn put(&mut self, cf_name: &'static str, key: Vec<u8>, value: Vec<u8>) {
        self.write(cf_name, key, Some(value));
    }

    pub fn delete(&mut self, cf_name: &'static str, key: Vec<u8>) {
        self.write(cf_name, key, None);
    }

    /// The first live (key, value) with this prefix, in key order, seen
    /// through the pending writes.
    pub fn first_with_prefix(
        &self,
        cf_name: &'static str,
        prefix: &[u8],
    ) -> Result<Option<Row>, MetaError> {
        Ok(self
            .scan_prefix_limit(cf_name, prefix, 1)?
            .into_iter()
            .next())
    }

    /// Every live (key, value) with this prefix, in key order, seen through
    /// the pending writes.
    pub fn scan_prefix(&self, cf_name: &'static str, prefix: &[u8]) -> Result<Vec<Row>, MetaError> {
        self.scan_prefix_limit(cf_name, prefix, usize::MAX)
    }

    /// At most `limit` live rows with this prefix, in key order.
    pub fn scan_prefix_limit(
        &self,
        cf_name: &'static str,
        prefix: &[u8],
        limit: usize,
    ) -> Result<Vec<Row>, MetaError> {
        self.scan_from(cf_name, prefix, prefix, limit)
    }

    /// At most `limit` live rows with this prefix and a key `>= start`, in
    /// key order, seen through the pending writes.
    pub fn scan_from(
        &self,
        cf_name: &'static str,
        prefix: &[u8],
        start: &[u8],
        limit: usize,
    ) -> Result<Vec<Row>, MetaError> {
        let start = if start < prefix { prefix } else { start };
        // Pending writes under the prefix, in key order.
        let lower = (cf_name, start.to_vec());
        let mut pend = self
            .pending
            .range(lower..)
            .take_while(|((c, k), _)| *c == cf_name && k.starts_with(prefix))
            .peekable();
        let mut db_it = self
            .db
            .iterator_cf(
                cf(&self.db, cf_name),
                IteratorMode::From(start, Direction::Forward),
            )
            .map_while(|item| match item {
                Ok((k, v)) if k.starts_with(prefix) => Some(Ok((k.to_vec(), v.to_vec()))),
                Ok(_) => None,
                Err(e) => Some(Err(db_err(e))),
            })
            .peekable();

        let mut out = Vec::new();
        while out.len() < limit {
            let db_next = match db_it.peek() {
                Some(Err(_)) => return Err(db_it.next().unwrap().unwrap_err()),
                Some(Ok((k, _))) => Some(k.clone()),
                None => None,
            };
            let pend_next = pend.peek().map(|((_, k), _)| k.clone());
            match (db_next, pend_next) {
                (None, None) => break,
                // A pending write shadows the stored value of the same key.
                (Some(d), Some(p)) if p <= d => {
                    if p == d {
                        db_it.next();
                    }
                    let ((_, k), v) = pend.next().unwrap();
                    if let Some(v) = v {
                        out.push((k.clone(), v.clone()));
                    }
                }
                (None, Some(_)) => {
                    let ((_, k), v) = pend.next().unwrap();
                    if let Some(v) = v {
                        out.push((k.clone(), v.clone()));
                    }
                }
                (Some(_), _) => out.push(db_it.next().unwrap()?),
            }
        }
        Ok(out)
    }

    /// The pending writes as one rocksdb batch (built where it is written:
    /// `WriteBatch` is not Send).
    pub fn into_batch(self, batch: &mut WriteBatch) {
        for ((cf_name, k), v) in self.pending {
            match v {
                Some(v) => batch.put_cf(cf(&self.db, cf_name), k, v),
                None => batch.delete_cf(cf(&self.db, cf_name), k),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{open_db, CF_OBJECTS};

    #[test]
    fn pending_writes_shadow_and_merge_with_stored_rows() {
        let dir = tempfile::tempdir().unwrap();
        let db = open_db(dir.path()).unwrap();
        let objects = cf(&db, CF_OBJECTS);
        db.put_cf(objects, b"p/a", b"1").unwrap();
        db.put_cf(objects, b"p/c", b"3").unwrap();
        db.put_cf(objects, b"q", b"x").unwrap();

        let mut o = Overlay::new(db.clone());
        o.put(CF_OBJECTS, b"p/b".to_vec(), b"2".to_vec());
        o.delete(CF_OBJECTS, b"p/a".to_vec());
        o.put(CF_OBJECTS, b"p/c".to_vec(), b"33".to_vec());
        let rows = o.scan_prefix(CF_OBJECTS, b"p/").unwrap();
        assert_eq!(
            rows,
            vec![
                (b"p/b".to_vec(), b"2".to_vec()),
                (b"p/c".to_vec(), b"33".to_vec())
            ]
        );
        assert_eq!(o.get(CF_OBJECTS, b"p/a").unwrap(), None);
        assert_eq!(
            o.first_with_prefix(CF_OBJECTS, b"p/").unwrap().unwrap().0,
            b"p/b".to_vec()
        );

        o.savepoint();
        o.delete(CF_OBJECTS, b"p/b".to_vec());
        o.put(CF_OBJECTS, b"p/d".to_vec(), b"4".to_vec());
        o.rollback();
        let keys: Vec<_> = o
            .scan_prefix(CF_OBJECTS, b"p/")
            .unwrap()
            .into_iter()
            .map(|r| r.0)
            .collect();
        assert_eq!(keys, vec![b"p/b".to_vec(), b"p/c".to_vec()]);
    }
}
