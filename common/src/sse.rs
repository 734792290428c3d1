//! Server-side encryption of object data: SSE-S3 (data keys sealed by
//! the cluster's key ring) and SSE-C (data keys sealed by the customer's
//! key, which is never stored).
//!
//! **Data.** Every encrypted version has its own random 256-bit data key.
//! Its bytes are cut into chunks of [`CHUNK`] plaintext bytes, each sealed
//! with AES-256-GCM and stored as ciphertext followed by its 16-byte tag.
//! A chunk's nonce is its segment's random base nonce with the chunk index
//! xored into the last eight bytes. A simple object is one segment; a
//! multipart object is one segment per part, each part with a base nonce
//! of its own, so a part uploaded again under the same number never
//! reuses a nonce. A ranged read fetches and opens only the chunks the
//! range touches ([`ReadPlan`]); a chunk that was altered, moved or cut
//! short fails to open.
//!
//! **Keys.** The data key is sealed with AES-256-GCM under a random nonce
//! by a master key of the [`KeyRing`] (SSE-S3; the version used is kept
//! with the object, so rotation never rewrites data) or by the customer's
//! key (SSE-C). The mode is the additional authenticated data, so a key
//! sealed for one mode never opens as the other. Copies between encrypted
//! objects rewrap the data key and share the ciphertext.
//!
//! The key ring lives in a file (JSON: the active version and every
//! version's key, base64) that `godwit admin sse rotate` extends; a running
//! server rereads it when it changes. All cryptography is `ring`'s.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};

use crate::ByteStream;

/// Plaintext bytes per sealed chunk.
pub const CHUNK: u64 = 64 * 1024;
/// Bytes of a GCM tag.
pub const TAG: u64 = 16;
/// Stored bytes of a full chunk.
const SEALED_CHUNK: u64 = CHUNK + TAG;
const KEY_LEN: usize = 32;
pub const NONCE_LEN: usize = 12;
/// How often a key ring file is looked at for changes (at most).
const RELOAD_CHECK: Duration = Duration::from_secs(1);
/// How often a read naming a version the ring lacks may look again: a
/// record naming a lost version must not make every read of it reread
/// the file.
const RELOAD_UNKNOWN: Duration = Duration::from_millis(50);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SseError {
    #[error("server-side encryption is not configured on this server (no key ring)")]
    NoKeyRing,
    #[error("the key ring has no master key version {0}")]
    UnknownKeyVersion(u32),
    /// The sealing key (customer key or master key) is not the one the
    /// data key was sealed with.
    #[error("the key does not open this object's data key")]
    WrongKey,
    #[error("encrypted data failed authentication: {0}")]
    Corrupt(&'static str),
    #[error("key ring: {0}")]
    KeyRing(String),
}

/// How a version's data is encrypted.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum SseMode {
    /// SSE-S3: the data key is sealed by master key `key_version` of the
    /// key ring.
    S3 { key_version: u32 },
    /// SSE-C: the data key is sealed by the customer's key.
    C,
}

impl SseMode {
    fn aad(&self) -> Vec<u8> {
        match self {
            SseMode::S3 { key_version } => format!("godwit-sse-s3:{key_version}").into_bytes(),
            SseMode::C => b"godwit-sse-c".to_vec(),
        }
    }
}

/// What a version (or an upload) keeps to decrypt its data.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct SseInfo {
    pub mode: SseMode,
    /// The data key: nonce, ciphertext and tag.
    #[serde(with = "crate::codec::bytes_or_b64")]
    pub sealed_key: Vec<u8>,
    /// Base nonce of a simple object's one segment; empty on a multipart
    /// object or upload, whose parts carry their own
    /// (`PartSummary::sse_nonce`).
    #[serde(
        default,
        with = "crate::codec::bytes_or_b64",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub nonce: Vec<u8>,
}

impl SseInfo {
    pub fn is_customer(&self) -> bool {
        self.mode == SseMode::C
    }
}

/// Stored bytes of `plain` bytes of plaintext.
pub fn stored_len(plain: u64) -> u64 {
    plain + plain.div_ceil(CHUNK) * TAG
}

/// A fresh random base nonce for a segment.
pub fn new_nonce() -> [u8; NONCE_LEN] {
    let mut n = [0u8; NONCE_LEN];
    SystemRandom::new()
        .fill(&mut n)
        .expect("the system's random source works");
    n
}

/// A version's data key (never stored in the clear).
#[derive(Clone)]
pub struct DataKey([u8; KEY_LEN]);

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DataKey(..)")
    }
}

impl DataKey {
    pub fn random() -> DataKey {
        let mut k = [0u8; KEY_LEN];
        SystemRandom::new()
            .fill(&mut k)
            .expect("the system's random source works");
        DataKey(k)
    }

    fn aead(&self) -> LessSafeKey {
        LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &self.0).expect("a 256-bit key"))
    }

    /// Seals this key by `kek` for `mode`.
    fn seal(&self, kek: &[u8; KEY_LEN], mode: &SseMode) -> Vec<u8> {
        let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, kek).expect("a 256-bit key"));
        let nonce = new_nonce();
        let mut out = nonce.to_vec();
        let mut body = self.0.to_vec();
        let tag = key
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(mode.aad()),
                &mut body,
            )
            .expect("sealing 32 bytes");
        out.extend_from_slice(&body);
        out.extend_from_slice(tag.as_ref());
        out
    }

    fn open(sealed: &[u8], kek: &[u8; KEY_LEN], mode: &SseMode) -> Result<DataKey, SseError> {
        if sealed.len() != NONCE_LEN + KEY_LEN + TAG as usize {
            return Err(SseError::Corrupt("sealed data key of the wrong length"));
        }
        let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, kek).expect("a 256-bit key"));
        let nonce = Nonce::try_assume_unique_for_key(&sealed[..NONCE_LEN])
            .map_err(|_| SseError::Corrupt("nonce"))?;
        let mut body = sealed[NONCE_LEN..].to_vec();
        let plain = key
            .open_in_place(nonce, Aad::from(mode.aad()), &mut body)
            .map_err(|_| SseError::WrongKey)?;
        let mut k = [0u8; KEY_LEN];
        k.copy_from_slice(plain);
        Ok(DataKey(k))
    }
}

/// An SSE-C key as the request gave it (its MD5 already checked by the
/// gateway).
#[derive(Clone)]
pub struct CustomerKey(pub [u8; KEY_LEN]);

impl std::fmt::Debug for CustomerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CustomerKey(..)")
    }
}

impl CustomerKey {
    /// A fresh data key sealed by this key, and its record.
    pub fn new_data_key(&self, nonce: Vec<u8>) -> (DataKey, SseInfo) {
        let dek = DataKey::random();
        let info = self.seal(&dek, nonce);
        (dek, info)
    }

    /// `dek` sealed by this key.
    pub fn seal(&self, dek: &DataKey, nonce: Vec<u8>) -> SseInfo {
        SseInfo {
            sealed_key: dek.seal(&self.0, &SseMode::C),
            mode: SseMode::C,
            nonce,
        }
    }

    /// The data key of an SSE-C version; WrongKey unless this is the key
    /// it was written with.
    pub fn open(&self, info: &SseInfo) -> Result<DataKey, SseError> {
        if info.mode != SseMode::C {
            return Err(SseError::WrongKey);
        }
        DataKey::open(&info.sealed_key, &self.0, &SseMode::C)
    }
}

/// The key ring file: the version new data keys are sealed with, and
/// every version's master key (base64 of 32 bytes).
#[derive(Serialize, Deserialize, Debug, Clone)]
struct RingFile {
    active: u32,
    keys: BTreeMap<u32, String>,
}

#[derive(Clone)]
struct Ring {
    active: u32,
    keys: BTreeMap<u32, [u8; KEY_LEN]>,
}

impl Ring {
    fn parse(text: &str) -> Result<Ring, SseError> {
        let file: RingFile =
            serde_json::from_str(text).map_err(|e| SseError::KeyRing(e.to_string()))?;
        let mut keys = BTreeMap::new();
        for (version, b64) in file.keys {
            keys.insert(version, decode_key(&b64)?);
        }
        if !keys.contains_key(&file.active) {
            return Err(SseError::KeyRing(format!(
                "the active version {} has no key",
                file.active
            )));
        }
        Ok(Ring {
            active: file.active,
            keys,
        })
    }

    fn to_file(&self) -> RingFile {
        RingFile {
            active: self.active,
            keys: self.keys.iter().map(|(v, k)| (*v, B64.encode(k))).collect(),
        }
    }
}

fn decode_key(b64: &str) -> Result<[u8; KEY_LEN], SseError> {
    let raw = B64
        .decode(b64.trim())
        .map_err(|e| SseError::KeyRing(format!("a key is not base64: {e}")))?;
    raw.try_into()
        .map_err(|_| SseError::KeyRing("a master key must be 32 bytes".into()))
}

fn random_key() -> [u8; KEY_LEN] {
    DataKey::random().0
}

/// Where a file-backed ring stands: when it was last looked at, and the
/// modification time it had when read.
struct FileWatch {
    path: PathBuf,
    checked: Instant,
    modified: Option<SystemTime>,
}

/// The cluster's master keys for SSE-S3, by version.
pub struct KeyRing {
    ring: RwLock<Ring>,
    file: Option<Mutex<FileWatch>>,
}

impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyRing")
            .field("active", &self.active_version())
            .finish_non_exhaustive()
    }
}

impl KeyRing {
    /// A ring of one master key (version 1), e.g. from
    /// `GODWIT_SSE_MASTER_KEY`.
    pub fn from_master_key(b64: &str) -> Result<KeyRing, SseError> {
        let mut keys = BTreeMap::new();
        keys.insert(1, decode_key(b64)?);
        Ok(KeyRing {
            ring: RwLock::new(Ring { active: 1, keys }),
            file: None,
        })
    }

    /// The ring in `path`, reread whenever the file changes.
    pub fn from_file(path: &Path) -> Result<KeyRing, SseError> {
        let (ring, modified) = read_ring(path)?;
        Ok(KeyRing {
            ring: RwLock::new(ring),
            file: Some(Mutex::new(FileWatch {
                path: path.to_path_buf(),
                checked: Instant::now(),
                modified,
            })),
        })
    }

    /// The ring in `path`, made with one fresh key if there is no file
    /// (readable by its owner only).
    pub fn open_or_create(path: &Path) -> Result<KeyRing, SseError> {
        if !path.exists() {
            let mut keys = BTreeMap::new();
            keys.insert(1, random_key());
            write_ring(path, &Ring { active: 1, keys })?;
        }
        KeyRing::from_file(path)
    }

    /// Adds a fresh master key to the ring file at `path` and makes it
    /// the active one; returns its version. Earlier versions stay, so
    /// every data key they sealed still opens.
    pub fn rotate_file(path: &Path) -> Result<u32, SseError> {
        let (mut ring, _) = read_ring(path)?;
        let version = ring.keys.keys().next_back().copied().unwrap_or(0) + 1;
        ring.keys.insert(version, random_key());
        ring.active = version;
        write_ring(path, &ring)?;
        Ok(version)
    }

    /// The version new data keys are sealed with.
    pub fn active_version(&self) -> u32 {
        self.ring.read().unwrap_or_else(|p| p.into_inner()).active
    }

    /// Every version the ring holds.
    pub fn versions(&self) -> Vec<u32> {
        let ring = self.ring.read().unwrap_or_else(|p| p.into_inner());
        ring.keys.keys().copied().collect()
    }

    /// Rereads the file if it changed since it was read (checked at most
    /// once per [`RELOAD_CHECK`]). A file that no longer parses leaves
    /// the ring as it was.
    fn refresh(&self) {
        self.reload(false)
    }

    fn reload_now(&self) {
        self.reload(true)
    }

    fn reload(&self, now: bool) {
        let Some(watch) = &self.file else { return };
        let mut w = watch.lock().unwrap_or_else(|p| p.into_inner());
        let every = if now { RELOAD_UNKNOWN } else { RELOAD_CHECK };
        if w.checked.elapsed() < every {
            return;
        }
        w.checked = Instant::now();
        let modified = std::fs::metadata(&w.path).and_then(|m| m.modified()).ok();
        if modified == w.modified {
            return;
        }
        match read_ring(&w.path) {
            Ok((ring, modified)) => {
                tracing::info!(active = ring.active, "SSE key ring reloaded");
                *self.ring.write().unwrap_or_else(|p| p.into_inner()) = ring;
                w.modified = modified;
            }
            Err(e) => tracing::warn!(error = %e, "SSE key ring file changed but does not read"),
        }
    }

    /// A fresh data key sealed by the active master key, and its record.
    pub fn new_data_key(&self, nonce: Vec<u8>) -> (DataKey, SseInfo) {
        let dek = DataKey::random();
        let info = self.seal(&dek, nonce);
        (dek, info)
    }

    /// `dek` sealed by the active master key.
    pub fn seal(&self, dek: &DataKey, nonce: Vec<u8>) -> SseInfo {
        self.refresh();
        let ring = self.ring.read().unwrap_or_else(|p| p.into_inner());
        let mode = SseMode::S3 {
            key_version: ring.active,
        };
        SseInfo {
            sealed_key: dek.seal(&ring.keys[&ring.active], &mode),
            mode,
            nonce,
        }
    }

    /// The data key of an SSE-S3 version.
    pub fn open(&self, info: &SseInfo) -> Result<DataKey, SseError> {
        let SseMode::S3 { key_version } = info.mode else {
            return Err(SseError::WrongKey);
        };
        self.refresh();
        let kek = {
            let lookup = |ring: &Ring| ring.keys.get(&key_version).copied();
            let found = lookup(&self.ring.read().unwrap_or_else(|p| p.into_inner()));
            match found {
                Some(k) => k,
                None => {
                    // A version made by a rotation this process has not
                    // seen yet (checked at once, not after a second).
                    self.reload_now();
                    lookup(&self.ring.read().unwrap_or_else(|p| p.into_inner()))
                        .ok_or(SseError::UnknownKeyVersion(key_version))?
                }
            }
        };
        DataKey::open(&info.sealed_key, &kek, &info.mode)
    }
}

fn read_ring(path: &Path) -> Result<(Ring, Option<SystemTime>), SseError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| SseError::KeyRing(format!("reading {}: {e}", path.display())))?;
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    Ok((Ring::parse(&text)?, modified))
}

/// Writes the ring whole (a temporary file renamed over the old one),
/// readable by its owner only.
fn write_ring(path: &Path, ring: &Ring) -> Result<(), SseError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let err = |e: std::io::Error| SseError::KeyRing(format!("writing {}: {e}", path.display()));
    let text = serde_json::to_string_pretty(&ring.to_file()).expect("a ring serializes");
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(err)?;
    f.write_all(text.as_bytes()).map_err(err)?;
    f.sync_all().map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}

/// The nonce of chunk `index` of a segment with base nonce `base`.
fn chunk_nonce(base: &[u8; NONCE_LEN], index: u64) -> Nonce {
    let mut n = *base;
    for (b, i) in n[4..].iter_mut().zip(index.to_be_bytes()) {
        *b ^= i;
    }
    Nonce::assume_unique_for_key(n)
}

/// A segment's base nonce from its stored bytes.
pub fn base_nonce(raw: &[u8]) -> Result<[u8; NONCE_LEN], SseError> {
    raw.try_into()
        .map_err(|_| SseError::Corrupt("base nonce of the wrong length"))
}

/// Encrypts one segment as it streams: plaintext in, sealed chunks out.
/// Plaintext is copied once, into the buffer its chunk is sealed in.
pub struct Sealer {
    key: LessSafeKey,
    base: [u8; NONCE_LEN],
    index: u64,
    /// The chunk being filled (room for its tag reserved).
    pending: BytesMut,
}

impl Sealer {
    pub fn new(dek: &DataKey, base: [u8; NONCE_LEN]) -> Sealer {
        Sealer {
            key: dek.aead(),
            base,
            index: 0,
            pending: BytesMut::with_capacity(SEALED_CHUNK as usize),
        }
    }

    /// Seals the pending chunk and hands it out.
    fn seal_pending(&mut self) -> Bytes {
        let tag = self
            .key
            .seal_in_place_separate_tag(
                chunk_nonce(&self.base, self.index),
                Aad::empty(),
                &mut self.pending,
            )
            .expect("a chunk is far below GCM's limit");
        self.pending.extend_from_slice(tag.as_ref());
        self.index += 1;
        let sealed = self.pending.split().freeze();
        self.pending.reserve(SEALED_CHUNK as usize);
        sealed
    }

    /// Takes plaintext; returns the chunks it completed, sealed (none
    /// while the current chunk is not full).
    pub fn push(&mut self, mut data: &[u8]) -> Vec<Bytes> {
        let mut out = Vec::new();
        while !data.is_empty() {
            let take = (CHUNK as usize - self.pending.len()).min(data.len());
            self.pending.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.pending.len() == CHUNK as usize {
                out.push(self.seal_pending());
            }
        }
        out
    }

    /// Seals the last, partial chunk (None if there is none).
    pub fn finish(&mut self) -> Option<Bytes> {
        (!self.pending.is_empty()).then(|| self.seal_pending())
    }
}

/// Encrypts a whole stream (one segment).
pub fn seal_stream(plain: ByteStream, dek: &DataKey, base: [u8; NONCE_LEN]) -> ByteStream {
    let sealer = Sealer::new(dek, base);
    let stream = futures::stream::unfold(
        (plain, Some(sealer)),
        |(mut plain, mut sealer)| async move {
            loop {
                let s = sealer.as_mut()?;
                match plain.next().await {
                    Some(Ok(chunk)) => {
                        let out = s.push(&chunk);
                        if !out.is_empty() {
                            let items: Vec<std::io::Result<Bytes>> =
                                out.into_iter().map(Ok).collect();
                            return Some((items, (plain, sealer)));
                        }
                    }
                    Some(Err(e)) => return Some((vec![Err(e)], (plain, None))),
                    None => {
                        let last = s.finish()?;
                        return Some((vec![Ok(last)], (plain, None)));
                    }
                }
            }
        },
    )
    .flat_map(futures::stream::iter);
    Box::pin(stream)
}

/// One segment of encrypted data: its plaintext length and base nonce.
#[derive(Clone, Debug)]
pub struct SegmentKey {
    pub plain_len: u64,
    pub nonce: [u8; NONCE_LEN],
}

/// The segments of a version's data, in order: one for a simple object,
/// one per part of a multipart one.
pub fn segments_of(
    info: &SseInfo,
    size: u64,
    parts: &[(u64, &[u8])],
) -> Result<Vec<SegmentKey>, SseError> {
    if parts.is_empty() || !info.nonce.is_empty() {
        return Ok(vec![SegmentKey {
            plain_len: size,
            nonce: base_nonce(&info.nonce)?,
        }]);
    }
    parts
        .iter()
        .map(|(len, nonce)| {
            Ok(SegmentKey {
                plain_len: *len,
                nonce: base_nonce(nonce)?,
            })
        })
        .collect()
}

/// One chunk a read opens: its stored length, nonce and the plaintext
/// bytes of it the read keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
struct PlannedChunk {
    stored: usize,
    nonce: [u8; NONCE_LEN],
    index: u64,
    skip: usize,
    take: usize,
}

/// How to read plaintext `[start, end)` of encrypted data: the stored
/// span to fetch, and the chunks in it.
#[derive(Debug)]
pub struct ReadPlan {
    /// Stored bytes to read, `[stored_start, stored_end)`.
    pub stored_start: u64,
    pub stored_end: u64,
    chunks: VecDeque<PlannedChunk>,
    /// Segments not yet expanded into `chunks`, with what each keeps.
    pending: VecDeque<(SegmentKey, u64, u64)>,
}

impl ReadPlan {
    /// The plan for plaintext `[start, end)` of `segments`.
    pub fn new(segments: &[SegmentKey], start: u64, end: u64) -> ReadPlan {
        let mut plan = ReadPlan {
            stored_start: 0,
            stored_end: 0,
            chunks: VecDeque::new(),
            pending: VecDeque::new(),
        };
        let (mut plain_base, mut stored_base) = (0u64, 0u64);
        let mut first = true;
        for seg in segments {
            let (lo, hi) = (start.max(plain_base), end.min(plain_base + seg.plain_len));
            if lo < hi {
                let (rel_lo, rel_hi) = (lo - plain_base, hi - plain_base);
                let first_chunk = rel_lo / CHUNK;
                let last_chunk = (rel_hi - 1) / CHUNK;
                if first {
                    plan.stored_start = stored_base + first_chunk * SEALED_CHUNK;
                    first = false;
                }
                plan.stored_end =
                    stored_base + ((last_chunk + 1) * SEALED_CHUNK).min(stored_len(seg.plain_len));
                plan.pending.push_back((seg.clone(), rel_lo, rel_hi));
            }
            plain_base += seg.plain_len;
            stored_base += stored_len(seg.plain_len);
            if plain_base >= end {
                break;
            }
        }
        plan
    }

    fn next_chunk(&mut self) -> Option<PlannedChunk> {
        if self.chunks.is_empty() {
            let (seg, lo, hi) = self.pending.pop_front()?;
            // A segment's chunks are listed when the read reaches it
            // (at most 82k for a 5 GiB part).
            for index in lo / CHUNK..=(hi - 1) / CHUNK {
                let chunk_lo = index * CHUNK;
                let plain = CHUNK.min(seg.plain_len - chunk_lo);
                let skip = lo.saturating_sub(chunk_lo);
                let keep_to = (hi - chunk_lo).min(plain);
                self.chunks.push_back(PlannedChunk {
                    stored: (plain + TAG) as usize,
                    nonce: seg.nonce,
                    index,
                    skip: skip as usize,
                    take: (keep_to - skip) as usize,
                });
            }
        }
        self.chunks.pop_front()
    }
}

fn corrupt(what: &'static str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, SseError::Corrupt(what))
}

/// Decrypts `stored` (the bytes `[plan.stored_start, plan.stored_end)`)
/// into the plaintext the plan asked for, one chunk at a time.
pub fn open_stream(stored: ByteStream, plan: ReadPlan, dek: &DataKey) -> ByteStream {
    struct State {
        stored: ByteStream,
        plan: ReadPlan,
        key: LessSafeKey,
        buf: BytesMut,
    }
    let state = State {
        stored,
        plan,
        key: dek.aead(),
        buf: BytesMut::new(),
    };
    let stream = futures::stream::unfold(Some(state), |st| async move {
        let mut st = st?;
        let chunk = st.plan.next_chunk()?;
        while st.buf.len() < chunk.stored {
            match st.stored.next().await {
                // A piece held nowhere else becomes the buffer itself,
                // so whole chunks open in place without a copy (a block
                // read in one piece); otherwise its bytes are copied in.
                Some(Ok(b)) if st.buf.is_empty() => match b.try_into_mut() {
                    Ok(whole) => st.buf = whole,
                    Err(shared) => st.buf.extend_from_slice(&shared),
                },
                Some(Ok(b)) => st.buf.extend_from_slice(&b),
                Some(Err(e)) => return Some((Err(e), None)),
                None => return Some((Err(corrupt("encrypted data ended early")), None)),
            }
        }
        let mut sealed = st.buf.split_to(chunk.stored);
        let opened = st.key.open_in_place(
            chunk_nonce(&chunk.nonce, chunk.index),
            Aad::empty(),
            &mut sealed,
        );
        if opened.is_err() {
            return Some((Err(corrupt("a chunk does not open")), None));
        }
        sealed.truncate(chunk.stored - TAG as usize);
        let piece = sealed.freeze().slice(chunk.skip..chunk.skip + chunk.take);
        Some((Ok(piece), Some(st)))
    });
    Box::pin(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seal_all(dek: &DataKey, base: [u8; NONCE_LEN], data: &[u8], cuts: usize) -> Vec<u8> {
        let mut s = Sealer::new(dek, base);
        let mut out = Vec::new();
        for piece in data.chunks(cuts.max(1)) {
            for sealed in s.push(piece) {
                out.extend_from_slice(&sealed);
            }
        }
        out.extend_from_slice(&s.finish().unwrap_or_default());
        out
    }

    async fn read(
        stored: &[u8],
        segs: &[SegmentKey],
        dek: &DataKey,
        start: u64,
        end: u64,
    ) -> Result<Vec<u8>, std::io::Error> {
        let plan = ReadPlan::new(segs, start, end);
        let to = (plan.stored_end as usize).min(stored.len());
        let span = Bytes::copy_from_slice(&stored[plan.stored_start as usize..to]);
        // The span handed over three ways, which must read alike: in odd
        // pieces held nowhere else, as a network gives them (copied into
        // the buffer); in pieces of several chunks held nowhere else, as
        // a block read gives them (opened in place); in slices of one
        // shared buffer (copied).
        let ways: [Vec<Bytes>; 3] = [
            span.chunks(7_001).map(Bytes::copy_from_slice).collect(),
            span.chunks(150_001).map(Bytes::copy_from_slice).collect(),
            (0..span.len())
                .step_by(90_001)
                .map(|at| span.slice(at..(at + 90_001).min(span.len())))
                .collect(),
        ];
        let mut outcomes = Vec::new();
        for pieces in ways {
            let pieces = pieces.into_iter().map(Ok);
            let plan = ReadPlan::new(segs, start, end);
            let mut s = open_stream(Box::pin(futures::stream::iter(pieces)), plan, dek);
            let mut out = Vec::new();
            let mut failed = None;
            while let Some(b) = s.next().await {
                match b {
                    Ok(b) => out.extend_from_slice(&b),
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            outcomes.push(match failed {
                Some(e) => Err(e),
                None => Ok(out),
            });
        }
        let first = outcomes.remove(0);
        for other in &outcomes {
            match (&first, other) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "the ways of handing pieces over agree"),
                (Err(_), Err(_)) => {}
                _ => panic!("one way of handing pieces over failed, another did not"),
            }
        }
        first
    }

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 31 % 251) as u8).collect()
    }

    #[tokio::test]
    async fn every_range_of_a_multi_segment_object_reads_back() {
        let dek = DataKey::random();
        let lens = [CHUNK as usize * 2 + 5, 1, CHUNK as usize, 100];
        let mut stored = Vec::new();
        let mut plain = Vec::new();
        let mut segs = Vec::new();
        for (i, len) in lens.iter().enumerate() {
            let bytes = data(*len + i);
            let nonce = new_nonce();
            let sealed = seal_all(&dek, nonce, &bytes, 10_000 + i);
            assert_eq!(sealed.len() as u64, stored_len(bytes.len() as u64));
            stored.extend_from_slice(&sealed);
            plain.extend_from_slice(&bytes);
            segs.push(SegmentKey {
                plain_len: bytes.len() as u64,
                nonce,
            });
        }
        let n = plain.len() as u64;
        let edges = [
            0,
            1,
            CHUNK - 1,
            CHUNK,
            CHUNK + 1,
            2 * CHUNK + 5,
            2 * CHUNK + 6,
            2 * CHUNK + 8,
            3 * CHUNK + 8,
            n - 1,
            n,
        ];
        for &a in &edges {
            for &b in &edges {
                if a < b {
                    let got = read(&stored, &segs, &dek, a, b).await.unwrap();
                    assert_eq!(got, plain[a as usize..b as usize], "{a}..{b}");
                }
            }
        }
    }

    #[tokio::test]
    async fn an_altered_or_moved_chunk_fails_to_open() {
        let dek = DataKey::random();
        let nonce = new_nonce();
        let plain = data(3 * CHUNK as usize);
        let stored = seal_all(&dek, nonce, &plain, 4096);
        let segs = [SegmentKey {
            plain_len: plain.len() as u64,
            nonce,
        }];
        let mut flipped = stored.clone();
        flipped[SEALED_CHUNK as usize + 3] ^= 1;
        assert!(read(&flipped, &segs, &dek, 0, 3 * CHUNK).await.is_err());
        // Chunks 0 and 1 swapped.
        let mut swapped = stored.clone();
        let c = SEALED_CHUNK as usize;
        swapped[..2 * c].rotate_left(c);
        assert!(read(&swapped, &segs, &dek, 0, CHUNK).await.is_err());
        // Another key.
        assert!(read(&stored, &segs, &DataKey::random(), 0, 10)
            .await
            .is_err());
        // Cut short.
        assert!(read(&stored[..stored.len() - 1], &segs, &dek, 0, 3 * CHUNK)
            .await
            .is_err());
    }

    #[test]
    fn a_customer_key_opens_only_what_it_sealed() {
        let ck = CustomerKey([7u8; 32]);
        let (dek, info) = ck.new_data_key(new_nonce().to_vec());
        assert_eq!(ck.open(&info).unwrap().0, dek.0);
        assert_eq!(
            CustomerKey([8u8; 32]).open(&info).unwrap_err(),
            SseError::WrongKey
        );
        // A key sealed for SSE-C does not pass for SSE-S3 under the same
        // bytes.
        let ring = KeyRing::from_master_key(&B64.encode([7u8; 32])).unwrap();
        let forged = SseInfo {
            mode: SseMode::S3 { key_version: 1 },
            ..info
        };
        assert_eq!(ring.open(&forged).unwrap_err(), SseError::WrongKey);
    }

    #[test]
    fn rotation_keeps_old_versions_opening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ring.json");
        let ring = KeyRing::open_or_create(&path).unwrap();
        assert_eq!(ring.active_version(), 1);
        let (dek1, info1) = ring.new_data_key(vec![]);
        assert_eq!(KeyRing::rotate_file(&path).unwrap(), 2);
        let ring = KeyRing::from_file(&path).unwrap();
        let (_, info2) = ring.new_data_key(vec![]);
        assert_eq!(info2.mode, SseMode::S3 { key_version: 2 });
        assert_eq!(ring.open(&info1).unwrap().0, dek1.0);
        assert_eq!(ring.versions(), vec![1, 2]);
        let mode = std::fs::metadata(&path).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(mode.permissions().mode() & 0o777, 0o600);
    }

    #[tokio::test]
    async fn a_sealed_stream_is_the_sealed_chunks_in_order() {
        let dek = DataKey::random();
        let nonce = new_nonce();
        let plain = data(2 * CHUNK as usize + 999);
        let pieces: Vec<std::io::Result<Bytes>> = plain
            .chunks(20_000)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let mut s = seal_stream(Box::pin(futures::stream::iter(pieces)), &dek, nonce);
        let mut streamed = Vec::new();
        while let Some(b) = s.next().await {
            streamed.extend_from_slice(&b.unwrap());
        }
        assert_eq!(streamed, seal_all(&dek, nonce, &plain, 777));
    }

    #[test]
    fn stored_lengths() {
        assert_eq!(stored_len(0), 0);
        assert_eq!(stored_len(1), 17);
        assert_eq!(stored_len(CHUNK), CHUNK + 16);
        assert_eq!(stored_len(CHUNK + 1), CHUNK + 1 + 32);
    }
}
