//! How meta records, Raft entries and meta RPC bodies are encoded: one
//! place, two formats.
//!
//! - **Packed** (today's): a version byte, then MessagePack with field
//!   names (`rmp_serde::to_vec_named`). Self-describing like JSON, so a
//!   field added later with `#[serde(default)]` still reads old records,
//!   but about half the size, and bytes (inline bodies) are stored as
//!   bytes instead of base64 text.
//! - **Json**: what every record, log entry and RPC body was before the
//!   packed format (no version byte; it starts with `{`, `[`, `"`, a digit
//!   or a letter of `null`/`true`/`false`).
//!
//! [`decode`] reads both, told apart by the first byte, so data dirs,
//! snapshots and peers written by an older build keep working. Which
//! format a writer uses is the caller's choice: node-local data (the Raft
//! log) switches at once, while rows that travel to other nodes inside
//! snapshots stay JSON until the cluster says every node reads the packed
//! format (`meta`'s record format, `docs/architecture.md`).
//!
//! A MessagePack document never starts with [`PACKED_V1`] (0xC1 is the
//! one byte the MessagePack spec leaves unused), and no JSON document
//! does either, so the first byte is an unambiguous version tag. A later
//! format takes another unused value (JSON never starts with 0xC0..=0xFF
//! bytes outside a string) and [`decode`] keeps reading this one.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// First byte of a packed (MessagePack, named fields) record, version 1.
pub const PACKED_V1: u8 = 0xC1;

/// `Content-Type` of a packed RPC body.
pub const PACKED_CONTENT_TYPE: &str = "application/vnd.godwit.packed";
/// `Content-Type` of a JSON RPC body.
pub const JSON_CONTENT_TYPE: &str = "application/json";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// The format of builds before the packed one: read by every build.
    Json,
    /// Version byte + MessagePack.
    #[default]
    Packed,
}

impl Format {
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Json => JSON_CONTENT_TYPE,
            Format::Packed => PACKED_CONTENT_TYPE,
        }
    }

    /// The format named by a `Content-Type` (None: neither).
    pub fn from_content_type(ct: &str) -> Option<Format> {
        let essence = ct.split(';').next().unwrap_or("").trim();
        if essence.eq_ignore_ascii_case(PACKED_CONTENT_TYPE) {
            Some(Format::Packed)
        } else if essence.eq_ignore_ascii_case(JSON_CONTENT_TYPE) {
            Some(Format::Json)
        } else {
            None
        }
    }

    /// The format of an encoded document, from its first byte.
    pub fn of(bytes: &[u8]) -> Format {
        match bytes.first() {
            Some(&PACKED_V1) => Format::Packed,
            _ => Format::Json,
        }
    }
}

/// Why a document did not decode.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    #[error("packed: {0}")]
    Packed(#[from] rmp_serde::decode::Error),
}

/// Encodes `v` in `format`. Meta types always serialize (no maps with
/// non-string keys in JSON, no failing `Serialize` impls): a failure is a
/// bug, and panics.
pub fn encode<T: Serialize + ?Sized>(format: Format, v: &T) -> Vec<u8> {
    match format {
        Format::Json => serde_json::to_vec(v).expect("meta types serialize as JSON"),
        Format::Packed => {
            let mut out = Vec::with_capacity(128);
            out.push(PACKED_V1);
            rmp_serde::encode::write_named(&mut out, v).expect("meta types serialize packed");
            out
        }
    }
}

/// Decodes a document in either format (told apart by its first byte).
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    match bytes.split_first() {
        Some((&PACKED_V1, rest)) => Ok(rmp_serde::from_slice(rest)?),
        _ => Ok(serde_json::from_slice(bytes)?),
    }
}

/// Bytes in a serde type: a base64 string in JSON (an array of numbers
/// would be 3-4x larger), raw bytes in the packed format. Reads either
/// whatever the format, so a JSON record read through a buffering
/// deserializer (internally tagged enums, `flatten`) still decodes.
pub mod bytes_or_b64 {
    use base64::Engine;
    use serde::de::{Error, SeqAccess, Visitor};
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(v))
        } else {
            s.serialize_bytes(v)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("bytes or a base64 string")
            }
            fn visit_str<E: Error>(self, s: &str) -> Result<Vec<u8>, E> {
                base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .map_err(E::custom)
            }
            fn visit_bytes<E: Error>(self, b: &[u8]) -> Result<Vec<u8>, E> {
                Ok(b.to_vec())
            }
            fn visit_byte_buf<E: Error>(self, b: Vec<u8>) -> Result<Vec<u8>, E> {
                Ok(b)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(b) = seq.next_element::<u8>()? {
                    out.push(b);
                }
                Ok(out)
            }
        }
        if d.is_human_readable() {
            d.deserialize_str(V)
        } else {
            d.deserialize_bytes(V)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    enum Tagged {
        Inline {
            #[serde(with = "bytes_or_b64")]
            data: Vec<u8>,
        },
        Blocks {
            ids: Vec<String>,
        },
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
    struct Record {
        name: String,
        size: u64,
        neg: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        opt: Option<String>,
        meta: BTreeMap<String, String>,
        body: Tagged,
        #[serde(with = "bytes_or_b64")]
        raw: Vec<u8>,
    }

    fn sample() -> Record {
        Record {
            name: "k\u{0}é".into(),
            size: u64::MAX,
            neg: i64::MIN,
            opt: None,
            meta: [("a".to_string(), "b".to_string())].into(),
            body: Tagged::Inline {
                data: vec![0, 1, 2, 255],
            },
            raw: (0..=255).collect(),
        }
    }

    #[test]
    fn both_formats_round_trip_and_decode_tells_them_apart() {
        let r = sample();
        for f in [Format::Json, Format::Packed] {
            let b = encode(f, &r);
            assert_eq!(Format::of(&b), f);
            assert_eq!(decode::<Record>(&b).unwrap(), r, "{f:?}");
        }
        let blocks = Record {
            body: Tagged::Blocks {
                ids: vec!["x".into()],
            },
            opt: Some("o".into()),
            ..r
        };
        assert_eq!(
            decode::<Record>(&encode(Format::Packed, &blocks)).unwrap(),
            blocks
        );
    }

    #[test]
    fn packed_bytes_are_raw_and_smaller_than_json() {
        let r = sample();
        let json = encode(Format::Json, &r);
        let packed = encode(Format::Packed, &r);
        assert_eq!(packed[0], PACKED_V1);
        assert!(
            packed.len() < json.len() * 3 / 4,
            "{} vs {}",
            packed.len(),
            json.len()
        );
        // The 256 raw bytes appear verbatim (no base64).
        let raw: Vec<u8> = (0..=255).collect();
        assert!(packed.windows(256).any(|w| w == raw.as_slice()));
    }

    #[test]
    fn records_written_by_older_builds_still_decode() {
        // A JSON record as builds before the packed format wrote it.
        let old = br#"{"name":"k","size":3,"neg":-1,"meta":{},"body":{"kind":"inline","data":"AAEC"},"raw":""}"#;
        let r: Record = decode(old).unwrap();
        assert_eq!(
            r.body,
            Tagged::Inline {
                data: vec![0, 1, 2]
            }
        );
        assert_eq!(r.opt, None);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bad in [
            &[][..],
            &[PACKED_V1],
            &[PACKED_V1, 0xFF, 0],
            b"{",
            &[0xC1, 0x93, 1],
        ] {
            assert!(decode::<Record>(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn content_types_name_formats() {
        assert_eq!(
            Format::from_content_type("application/vnd.godwit.packed"),
            Some(Format::Packed)
        );
        assert_eq!(
            Format::from_content_type("application/json; charset=utf-8"),
            Some(Format::Json)
        );
        assert_eq!(Format::from_content_type("text/plain"), None);
    }
}
