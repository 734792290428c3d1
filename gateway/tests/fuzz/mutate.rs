//! Structured mutation of real inputs: a seed taken from the captured
//! requests or test documents, then a few edits (bit flips, inserted,
//! deleted or repeated spans, and tokens that parsers treat specially).
//! Proptest shrinks the list of edits, so a failure reports the seed and
//! the fewest edits that still break it.

use proptest::prelude::*;
use proptest::sample::select;

/// Bytes that mean something to some parser here: separators, number
/// edges, Unicode whitespace that `str::trim` strips (but a byte-offset
/// parser may not expect), XML and percent-encoding specials.
pub const TOKENS: &[&str] = &[
    "\u{2000}",
    "\u{a0}",
    "\u{3000}",
    "\u{85}",
    "\u{feff}",
    "é",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "4294967296",
    "99991231T235959Z",
    "00000000T000000Z",
    "604801",
    "-1",
    "0",
    "ffffffffffffffff",
    "10000000000000000",
    "-",
    "=",
    "&",
    ";",
    ",",
    ":",
    "/",
    "?",
    "+",
    "*",
    "\"",
    " ",
    "\t",
    "\r\n",
    "\n",
    "%",
    "%2",
    "%zz",
    "%00",
    "%FF",
    "%2F",
    "<",
    ">",
    "</",
    "/>",
    "<![CDATA[x]]>",
    "<?xml version=\"1.0\"?>",
    "<!DOCTYPE a [<!ENTITY e \"x\">]>",
    "&amp;",
    "&#0;",
    "&#x110000;",
    "&#xD800;",
    "&e;",
    "W/",
    "bytes=",
    "chunk-signature=",
    "x-amz-trailer-signature:",
    "X-Amz-Expires=",
    "X-Amz-Date=",
    "AWS4-HMAC-SHA256",
    "OSS4-HMAC-SHA256",
    "aws4_request",
    "aliyun_v4_request",
    "Credential=",
    "SignedHeaders=",
    "Signature=",
];

/// One edit; positions are taken modulo the input length.
#[derive(Clone, Debug)]
pub enum Edit {
    Flip {
        at: usize,
        bit: u8,
    },
    Set {
        at: usize,
        byte: u8,
    },
    Insert {
        at: usize,
        bytes: Vec<u8>,
    },
    Delete {
        at: usize,
        len: usize,
    },
    Repeat {
        at: usize,
        len: usize,
        times: usize,
    },
    Token {
        at: usize,
        token: usize,
        replace: usize,
    },
}

/// One byte-level edit.
pub fn edit_strategy() -> impl Strategy<Value = Edit> {
    let at = any::<usize>();
    prop_oneof![
        1 => (at, 0u8..8).prop_map(|(at, bit)| Edit::Flip { at, bit }),
        1 => (at, any::<u8>()).prop_map(|(at, byte)| Edit::Set { at, byte }),
        1 => (at, proptest::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(at, bytes)| Edit::Insert { at, bytes }),
        1 => (at, 1usize..32).prop_map(|(at, len)| Edit::Delete { at, len }),
        1 => (at, 1usize..64, 1usize..16)
            .prop_map(|(at, len, times)| Edit::Repeat { at, len, times }),
        3 => (at, 0..TOKENS.len(), 0usize..4)
            .prop_map(|(at, token, replace)| Edit::Token { at, token, replace }),
    ]
}

/// Applies `edits` to `input` in order.
pub fn apply(mut input: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let len = input.len();
        let pos = |at: usize| if len == 0 { 0 } else { at % (len + 1) };
        match e {
            Edit::Flip { at, bit } if len > 0 => input[at % len] ^= 1 << bit,
            Edit::Set { at, byte } if len > 0 => input[at % len] = *byte,
            Edit::Insert { at, bytes } => {
                let p = pos(*at);
                input.splice(p..p, bytes.iter().copied());
            }
            Edit::Delete { at, len: n } if len > 0 => {
                let p = at % len;
                input.drain(p..(p + n).min(len));
            }
            Edit::Repeat { at, len: n, times } if len > 0 => {
                let p = at % len;
                let span = input[p..(p + n).min(len)].to_vec();
                let copies: Vec<u8> = span.repeat(*times);
                input.splice(p..p, copies);
            }
            Edit::Token { at, token, replace } => {
                let p = pos(*at);
                let end = (p + replace).min(len);
                input.splice(p..end, TOKENS[*token].bytes());
            }
            _ => {}
        }
    }
    input
}

/// A seed with up to `max_edits` edits.
pub fn mutated(seeds: Vec<Vec<u8>>, max_edits: usize) -> impl Strategy<Value = Vec<u8>> {
    (
        select(seeds),
        proptest::collection::vec(edit_strategy(), 0..=max_edits),
    )
        .prop_map(|(seed, edits)| apply(seed, &edits))
}

/// Mostly mutated seeds, sometimes arbitrary bytes.
pub fn input(seeds: Vec<Vec<u8>>, max_len: usize) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => mutated(seeds, 6),
        1 => proptest::collection::vec(any::<u8>(), 0..max_len),
    ]
}

/// As `input`, as text (invalid UTF-8 replaced), for parsers of `&str`.
pub fn text(seeds: Vec<Vec<u8>>, max_len: usize) -> impl Strategy<Value = String> {
    input(seeds, max_len).prop_map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Seeds from string literals.
pub fn seeds(items: &[&str]) -> Vec<Vec<u8>> {
    items.iter().map(|s| s.as_bytes().to_vec()).collect()
}
