//! ListObjects, ListObjectVersions, ListMultipartUploads and ListParts as
//! rocksdb range scans.
//!
//! A delimiter listing never walks the keys under a common prefix: once a
//! prefix `P` is emitted the iterator seeks to the first key after
//! everything starting with `P` (`prefix_successor`). Likewise, after the
//! newest version of a key the object listing seeks past the key's older
//! versions.
//!
//! Markers are exclusive, and a common prefix at or before the marker is
//! not repeated: a page that ended on `photos/` continues after it.

use godwit_common::types::*;
use godwit_common::MetaError;
use rocksdb::{DBRawIterator, DB};

use crate::store::*;

fn utf8(b: &[u8]) -> Result<String, MetaError> {
    String::from_utf8(b.to_vec()).map_err(|_| MetaError::Internal("stored key is not UTF-8".into()))
}

/// NoSuchBucket unless `name` exists: the row is looked at in place, not
/// copied or decoded (a bucket record carries its policy and
/// configuration documents, kilobytes that an object read does not need).
pub(crate) fn check_bucket(db: &DB, name: &str) -> Result<(), MetaError> {
    match db
        .get_pinned_cf(cf(db, CF_BUCKETS), name.as_bytes())
        .map_err(db_err)?
    {
        Some(_) => Ok(()),
        None => Err(MetaError::NoSuchBucket),
    }
}

pub(crate) fn load_bucket(db: &DB, name: &str) -> Result<BucketInfo, MetaError> {
    match db
        .get_cf(cf(db, CF_BUCKETS), name.as_bytes())
        .map_err(db_err)?
    {
        Some(b) => decode(&b),
        None => Err(MetaError::NoSuchBucket),
    }
}

/// The first encoded row of a key greater than `key` (rows are
/// `bucket \0 key \0 ...` and keys hold no `\0`).
fn after_key(bucket: &str, key: &str) -> Vec<u8> {
    let mut k = key_prefix(bucket, key);
    *k.last_mut().unwrap() = 1;
    k
}

/// The common prefix `user_key` rolls up into, if any.
fn common_prefix<'a>(
    user_key: &'a [u8],
    prefix: &str,
    delimiter: Option<&str>,
) -> Option<&'a [u8]> {
    let delim = delimiter.filter(|d| !d.is_empty())?.as_bytes();
    let rest = &user_key[prefix.len()..];
    let at = rest.windows(delim.len()).position(|w| w == delim)?;
    Some(&user_key[..prefix.len() + at + delim.len()])
}

/// Positions `it` after every row of `bucket` starting with `cp`. Returns
/// false when nothing can follow.
fn seek_past_prefix(it: &mut DBRawIterator, bucket: &str, cp: &[u8]) -> bool {
    let mut p = bucket_prefix(bucket);
    p.extend_from_slice(cp);
    match prefix_successor(&p) {
        Some(s) => {
            it.seek(&s);
            true
        }
        None => false,
    }
}

fn is_at_or_before(cp: &[u8], marker: Option<&str>) -> bool {
    marker.is_some_and(|m| cp <= m.as_bytes())
}

type RowRef<'a> = (&'a [u8], &'a [u8]);

/// The current row of `it` if it is still under `prefix`.
fn current<'a>(it: &'a DBRawIterator, prefix: &[u8]) -> Result<Option<RowRef<'a>>, MetaError> {
    if !it.valid() {
        it.status().map_err(db_err)?;
        return Ok(None);
    }
    let (k, v) = (it.key().unwrap(), it.value().unwrap());
    Ok(k.starts_with(prefix).then_some((k, v)))
}

fn stripped(mut v: ObjectVersion) -> ObjectVersion {
    v.data = ObjectData::Inline(Vec::new());
    v
}

pub fn list_objects(db: &DB, q: &ListObjectsQuery) -> Result<ListObjectsPage, MetaError> {
    check_bucket(db, &q.bucket)?;
    let mut page = ListObjectsPage::default();
    if q.max_keys == 0 {
        return Ok(page);
    }
    let mut scan = bucket_prefix(&q.bucket);
    scan.extend_from_slice(q.prefix.as_bytes());
    let mut start = scan.clone();
    if let Some(sa) = &q.start_after {
        start = start.max(after_key(&q.bucket, sa));
    }
    let mut it = db.raw_iterator_cf(cf(db, CF_OBJECTS));
    it.seek(&start);
    let mut count = 0usize;
    // `it` always rests on the newest version of a key here.
    while let Some((k, v)) = current(&it, &scan)? {
        let user_key = user_key_of(k, q.bucket.len()).to_vec();
        let latest: ObjectVersion = decode(v)?;
        let key_str = utf8(&user_key)?;
        if let Some(cp) = common_prefix(&user_key, &q.prefix, q.delimiter.as_deref()) {
            if is_at_or_before(cp, q.start_after.as_deref()) {
                if !seek_past_prefix(&mut it, &q.bucket, cp) {
                    break;
                }
                continue;
            }
            // A prefix shows only if some key under it is visible.
            if !latest.is_delete_marker {
                if count == q.max_keys {
                    page.is_truncated = true;
                    break;
                }
                let cp = utf8(cp)?;
                page.next_marker = Some(cp.clone());
                page.common_prefixes.push(cp.clone());
                count += 1;
                if !seek_past_prefix(&mut it, &q.bucket, cp.as_bytes()) {
                    break;
                }
                continue;
            }
        } else if !latest.is_delete_marker {
            if count == q.max_keys {
                page.is_truncated = true;
                break;
            }
            let mut o = stripped(latest);
            o.is_latest = true;
            page.objects.push(o);
            page.next_marker = Some(key_str.clone());
            count += 1;
        }
        // Skip the older versions of this key.
        it.seek(after_key(&q.bucket, &key_str));
    }
    if !page.is_truncated {
        page.next_marker = None;
    }
    Ok(page)
}

pub fn list_versions(db: &DB, q: &ListVersionsQuery) -> Result<ListVersionsPage, MetaError> {
    check_bucket(db, &q.bucket)?;
    let mut page = ListVersionsPage::default();
    if q.max_keys == 0 {
        return Ok(page);
    }
    let mut scan = bucket_prefix(&q.bucket);
    scan.extend_from_slice(q.prefix.as_bytes());
    let key_marker = q.key_marker.as_deref().filter(|m| !m.is_empty());
    let mut start = scan.clone();
    // The key of the row before `it`, to know which row is a key's newest.
    let mut prev_key: Option<Vec<u8>> = None;
    if let Some(km) = key_marker {
        let vid_marker = q.version_id_marker.as_deref().filter(|m| !m.is_empty());
        let seq = match vid_marker {
            Some(vid) => db
                .get_cf(
                    cf(db, CF_VERSION_INDEX),
                    version_index_key(&q.bucket, km, vid),
                )
                .map_err(db_err)?,
            None => None,
        };
        let from = match seq {
            // Just after that version: older versions of the key follow.
            Some(seq) if seq.len() == 8 => {
                let mut k = object_key(
                    &q.bucket,
                    km,
                    u64::from_be_bytes(seq.as_slice().try_into().unwrap()),
                );
                k.push(0);
                k
            }
            // No (known) version marker: after every version of the key.
            _ => after_key(&q.bucket, km),
        };
        if from > start {
            start = from;
            prev_key = Some(km.as_bytes().to_vec());
        }
    }
    let mut it = db.raw_iterator_cf(cf(db, CF_OBJECTS));
    it.seek(&start);
    let mut count = 0usize;
    while let Some((k, v)) = current(&it, &scan)? {
        let user_key = user_key_of(k, q.bucket.len()).to_vec();
        if let Some(cp) = common_prefix(&user_key, &q.prefix, q.delimiter.as_deref()) {
            if !is_at_or_before(cp, key_marker) {
                if count == q.max_keys {
                    page.is_truncated = true;
                    break;
                }
                let cp = utf8(cp)?;
                page.next_key_marker = Some(cp.clone());
                page.next_version_id_marker = None;
                page.common_prefixes.push(cp);
                count += 1;
            }
            if !seek_past_prefix(&mut it, &q.bucket, cp) {
                break;
            }
            continue;
        }
        if count == q.max_keys {
            page.is_truncated = true;
            break;
        }
        let mut version: ObjectVersion = decode(v)?;
        version.is_latest = prev_key.as_deref() != Some(&user_key[..]);
        page.next_key_marker = Some(version.key.clone());
        page.next_version_id_marker = Some(version.version_id.clone());
        page.versions.push(stripped(version));
        count += 1;
        prev_key = Some(user_key);
        it.next();
    }
    if !page.is_truncated {
        page.next_key_marker = None;
        page.next_version_id_marker = None;
    }
    Ok(page)
}

pub fn list_uploads(db: &DB, q: &ListUploadsQuery) -> Result<ListUploadsPage, MetaError> {
    check_bucket(db, &q.bucket)?;
    let mut page = ListUploadsPage::default();
    if q.max_uploads == 0 {
        return Ok(page);
    }
    let mut scan = bucket_prefix(&q.bucket);
    scan.extend_from_slice(q.prefix.as_bytes());
    let key_marker = q.key_marker.as_deref().filter(|m| !m.is_empty());
    let mut start = scan.clone();
    if let Some(km) = key_marker {
        let from = match q.upload_id_marker.as_deref().filter(|m| !m.is_empty()) {
            // Uploads of the marker key with a later id, then later keys.
            Some(uid) => {
                let mut k = upload_key(&q.bucket, km, uid);
                k.push(0);
                k
            }
            None => after_key(&q.bucket, km),
        };
        start = start.max(from);
    }
    let mut it = db.raw_iterator_cf(cf(db, CF_UPLOADS));
    it.seek(&start);
    let mut count = 0usize;
    while let Some((k, v)) = current(&it, &scan)? {
        let user_key = user_key_of(k, q.bucket.len()).to_vec();
        if let Some(cp) = common_prefix(&user_key, &q.prefix, q.delimiter.as_deref()) {
            let cp = cp.to_vec();
            if !is_at_or_before(&cp, key_marker) {
                if count == q.max_uploads {
                    page.is_truncated = true;
                    break;
                }
                let cp = utf8(&cp)?;
                page.next_key_marker = Some(cp.clone());
                page.next_upload_id_marker = None;
                page.common_prefixes.push(cp);
                count += 1;
            }
            if !seek_past_prefix(&mut it, &q.bucket, &cp) {
                break;
            }
            continue;
        }
        if count == q.max_uploads {
            page.is_truncated = true;
            break;
        }
        let upload: UploadInfo = decode(v)?;
        page.next_key_marker = Some(upload.key.clone());
        page.next_upload_id_marker = Some(upload.upload_id.clone());
        page.uploads.push(upload);
        count += 1;
        it.next();
    }
    if !page.is_truncated {
        page.next_key_marker = None;
        page.next_upload_id_marker = None;
    }
    Ok(page)
}

pub fn list_parts(
    db: &DB,
    upload_id: &str,
    marker: u32,
    max: usize,
) -> Result<ListPartsPage, MetaError> {
    let mut page = ListPartsPage::default();
    if max == 0 || marker == u32::MAX {
        return Ok(page);
    }
    let scan = parts_prefix(upload_id);
    let mut it = db.raw_iterator_cf(cf(db, CF_PARTS));
    it.seek(part_key(upload_id, marker + 1));
    while let Some((_, v)) = current(&it, &scan)? {
        if page.parts.len() == max {
            page.is_truncated = true;
            break;
        }
        page.parts.push(decode(v)?);
        it.next();
    }
    if page.is_truncated {
        page.next_part_number_marker = page.parts.last().map(|p| p.number);
    }
    Ok(page)
}
