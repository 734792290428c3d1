//! Tags: the `<Tagging>` document of Put/GetObjectTagging and
//! Put/GetBucketTagging, and the `x-amz-tagging` header of PutObject,
//! CreateMultipartUpload and CopyObject.
//!
//! Object tags follow S3's object limits
//! (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-tagging.html):
//! at most 10 tags, keys of 1 to 128 and values of at most 256 Unicode
//! characters, keys unique. Bucket tags follow S3's bucket limits: at
//! most 50 tags (more is `BadRequest`), the same key and value lengths,
//! keys unique, no `aws:` key (a system tag). Limit violations are
//! `InvalidTag` with S3's messages.

use std::collections::BTreeMap;

use quick_xml::events::Event;
use serde::Serialize;

use godwit_common::bucket_config::Tag;

use super::responses::Ns;
use crate::error::S3Error;

pub const MAX_TAGS: usize = 10;
pub const MAX_TAG_KEY: usize = 128;
pub const MAX_TAG_VALUE: usize = 256;
/// Most tags on a bucket.
pub const MAX_BUCKET_TAGS: usize = 50;

/// Checks S3's limits on an ordered list of tags and returns them as a
/// map.
pub fn validate_tags(tags: Vec<(String, String)>) -> Result<BTreeMap<String, String>, S3Error> {
    if tags.len() > MAX_TAGS {
        return Err(S3Error::InvalidTag(format!(
            "Object tags cannot be greater than {MAX_TAGS}"
        )));
    }
    let mut out = BTreeMap::new();
    for (key, value) in tags {
        check_lengths(&key, &value)?;
        if key.starts_with("aws:") {
            return Err(S3Error::InvalidTag(
                "Your TagKey cannot be prefixed with aws:".into(),
            ));
        }
        if out.insert(key, value).is_some() {
            return Err(duplicate_key());
        }
    }
    Ok(out)
}

/// Checks S3's limits on a bucket's tags, kept in the order given.
pub fn validate_bucket_tags(tags: Vec<(String, String)>) -> Result<Vec<Tag>, S3Error> {
    if tags.len() > MAX_BUCKET_TAGS {
        return Err(S3Error::BadRequest(format!(
            "Bucket tag count cannot be greater than {MAX_BUCKET_TAGS}"
        )));
    }
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(tags.len());
    for (key, value) in tags {
        check_lengths(&key, &value)?;
        if key.starts_with("aws:") {
            return Err(S3Error::InvalidTag(
                "System tags cannot be added/updated by requester".into(),
            ));
        }
        if !seen.insert(key.clone()) {
            return Err(duplicate_key());
        }
        out.push(Tag { key, value });
    }
    Ok(out)
}

fn check_lengths(key: &str, value: &str) -> Result<(), S3Error> {
    if key.is_empty() {
        return Err(S3Error::InvalidTag(
            "The TagKey you have provided is invalid".into(),
        ));
    }
    if key.chars().count() > MAX_TAG_KEY {
        return Err(S3Error::InvalidTag(format!(
            "The TagKey you have provided is too long, max {MAX_TAG_KEY}"
        )));
    }
    if value.chars().count() > MAX_TAG_VALUE {
        return Err(S3Error::InvalidTag(format!(
            "The TagValue you have provided is too long, max {MAX_TAG_VALUE}"
        )));
    }
    Ok(())
}

fn duplicate_key() -> S3Error {
    S3Error::InvalidTag("Cannot provide multiple Tags with the same key".into())
}

/// `x-amz-tagging: k1=v1&k2=v2` (URL-encoded as a query string; a key
/// without `=` has an empty value). Absent or empty: no tags.
pub fn parse_tagging_header(raw: Option<&str>) -> Result<BTreeMap<String, String>, S3Error> {
    let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(BTreeMap::new());
    };
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(raw.as_bytes())
        .into_owned()
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    if !pairs.iter().all(|(k, _)| seen.insert(k.as_str())) {
        return Err(S3Error::InvalidArgument(
            "The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query \
             parameters without tag name duplicates."
                .into(),
        ));
    }
    validate_tags(pairs)
}

/// Parses an object's `<Tagging>` document: structure errors are
/// `MalformedXML` (`parse_tag_list`); limits, `InvalidTag`.
pub fn parse_tagging(body: &[u8]) -> Result<BTreeMap<String, String>, S3Error> {
    validate_tags(parse_tag_list(body)?)
}

/// Reads `<Tagging><TagSet><Tag><Key/><Value/></Tag>...</TagSet></Tagging>`
/// into its (key, value) pairs in document order, unchecked, by hand:
/// serde's text trimming would strip spaces that belong to keys and
/// values. Structure errors are `MalformedXML`.
pub fn parse_tag_list(body: &[u8]) -> Result<Vec<(String, String)>, S3Error> {
    let mut reader = quick_xml::Reader::from_reader(body);
    let mut path: Vec<String> = Vec::new();
    let mut text = String::new();
    let mut tags: Vec<(String, String)> = Vec::new();
    let mut key: Option<String> = None;
    let mut value: Option<String> = None;
    let mut saw_root = false;
    let mut saw_tag_set = false;
    loop {
        match reader.read_event().map_err(|_| S3Error::MalformedXML)? {
            Event::Start(e) => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                match (path.len(), name.as_str()) {
                    (0, "Tagging") if !saw_root => saw_root = true,
                    (0, _) => return Err(S3Error::MalformedXML),
                    (1, "TagSet") => saw_tag_set = true,
                    (2, "Tag") if path[1] == "TagSet" => {
                        key = None;
                        value = None;
                    }
                    _ => {}
                }
                path.push(name);
                text.clear();
            }
            Event::Empty(e) => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                match (path.len(), name.as_str()) {
                    // `<Tagging/>` has no TagSet: malformed below.
                    (0, "Tagging") if !saw_root => saw_root = true,
                    (0, _) => return Err(S3Error::MalformedXML),
                    (1, "TagSet") => saw_tag_set = true,
                    (3, "Key") => key = Some(String::new()),
                    (3, "Value") => value = Some(String::new()),
                    // `<Tag/>`: a tag without a key.
                    (2, "Tag") => return Err(S3Error::MalformedXML),
                    _ => {}
                }
            }
            Event::Text(t) => {
                text.push_str(&t.unescape().map_err(|_| S3Error::MalformedXML)?);
            }
            Event::CData(c) => {
                text.push_str(std::str::from_utf8(&c).map_err(|_| S3Error::MalformedXML)?);
            }
            Event::End(_) => {
                let name = path.pop().ok_or(S3Error::MalformedXML)?;
                let in_tag = path.len() == 3 && path[1] == "TagSet" && path[2] == "Tag";
                match (path.len(), name.as_str()) {
                    (3, "Key") if in_tag => key = Some(std::mem::take(&mut text)),
                    (3, "Value") if in_tag => value = Some(std::mem::take(&mut text)),
                    (2, "Tag") if path[1] == "TagSet" => {
                        // Key and Value are both required by the schema.
                        match (key.take(), value.take()) {
                            (Some(k), Some(v)) => tags.push((k, v)),
                            _ => return Err(S3Error::MalformedXML),
                        }
                    }
                    _ => {}
                }
                text.clear();
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !saw_root || !saw_tag_set || !path.is_empty() {
        return Err(S3Error::MalformedXML);
    }
    Ok(tags)
}

#[derive(Serialize, Debug)]
struct TaggingOut<'a> {
    #[serde(rename = "@xmlns")]
    xmlns: Ns,
    #[serde(rename = "TagSet")]
    tag_set: TagSetOut<'a>,
}

#[derive(Serialize, Debug)]
struct TagSetOut<'a> {
    #[serde(rename = "Tag")]
    tag: Vec<TagOut<'a>>,
}

#[derive(Serialize, Debug)]
struct TagOut<'a> {
    #[serde(rename = "Key")]
    key: &'a str,
    #[serde(rename = "Value")]
    value: &'a str,
}

/// The GetObjectTagging document.
pub fn render_tagging(tags: &BTreeMap<String, String>) -> Result<String, S3Error> {
    let doc = TaggingOut {
        xmlns: Ns::default(),
        tag_set: TagSetOut {
            tag: tags
                .iter()
                .map(|(k, v)| TagOut { key: k, value: v })
                .collect(),
        },
    };
    super::render("Tagging", &doc)
}

/// The GetBucketTagging document: the bucket's tags in the order put.
pub fn render_tag_list(tags: &[Tag]) -> Result<String, S3Error> {
    let doc = TaggingOut {
        xmlns: Ns::default(),
        tag_set: TagSetOut {
            tag: tags
                .iter()
                .map(|t| TagOut {
                    key: &t.key,
                    value: &t.value,
                })
                .collect(),
        },
    };
    super::render("Tagging", &doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(tags: &[(&str, &str)]) -> String {
        let mut s =
            String::from("<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet>");
        for (k, v) in tags {
            s.push_str(&format!("<Tag><Key>{k}</Key><Value>{v}</Value></Tag>"));
        }
        s.push_str("</TagSet></Tagging>");
        s
    }

    fn invalid_tag(r: Result<BTreeMap<String, String>, S3Error>) -> String {
        match r {
            Err(S3Error::InvalidTag(m)) => m,
            other => panic!("expected InvalidTag, got {other:?}"),
        }
    }

    #[test]
    fn tagging_document_keeps_spaces_entities_and_empty_values() {
        let body = "<Tagging><TagSet><Tag><Value> v 1 </Value><Key> a&amp;b </Key></Tag>\
                    <Tag><Key>empty</Key><Value/></Tag><Tag><Key>e2</Key><Value></Value></Tag>\
                    </TagSet></Tagging>";
        let tags = parse_tagging(body.as_bytes()).unwrap();
        assert_eq!(tags.len(), 3);
        assert_eq!(tags[" a&b "], " v 1 ");
        assert_eq!(tags["empty"], "");
        assert_eq!(tags["e2"], "");
        // An empty TagSet removes every tag.
        assert!(parse_tagging(b"<Tagging><TagSet/></Tagging>")
            .unwrap()
            .is_empty());
        assert!(parse_tagging(b"<Tagging><TagSet></TagSet></Tagging>")
            .unwrap()
            .is_empty());
    }

    #[test]
    fn tagging_document_structure_errors_are_malformed_xml() {
        for body in [
            "",
            "not xml",
            "<Tagging>",
            "<Tagging/>",
            "<Tagging></Tagging>",
            "<Other><TagSet/></Other>",
            "<Tagging><TagSet><Tag><Key>k</Key></Tag></TagSet></Tagging>",
            "<Tagging><TagSet><Tag><Value>v</Value></Tag></TagSet></Tagging>",
            "<Tagging><TagSet><Tag/></TagSet></Tagging>",
            "<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tagging><Tagging/>",
        ] {
            assert!(
                matches!(parse_tagging(body.as_bytes()), Err(S3Error::MalformedXML)),
                "{body}"
            );
        }
    }

    #[test]
    fn tag_limits_are_invalid_tag_with_s3_messages() {
        let eleven: Vec<(String, String)> = (0..11)
            .map(|i| (format!("k{i}"), "v".to_string()))
            .collect();
        let refs: Vec<(&str, &str)> = eleven
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            invalid_tag(parse_tagging(doc(&refs).as_bytes())),
            "Object tags cannot be greater than 10"
        );
        assert_eq!(
            parse_tagging(doc(&refs[..10]).as_bytes()).unwrap().len(),
            10
        );

        let k128 = "k".repeat(128);
        let k129 = "k".repeat(129);
        assert!(parse_tagging(doc(&[(&k128, "v")]).as_bytes()).is_ok());
        assert_eq!(
            invalid_tag(parse_tagging(doc(&[(&k129, "v")]).as_bytes())),
            "The TagKey you have provided is too long, max 128"
        );
        // Characters, not bytes.
        let wide = "é".repeat(128);
        assert!(parse_tagging(doc(&[(&wide, "v")]).as_bytes()).is_ok());

        let v256 = "v".repeat(256);
        let v257 = "v".repeat(257);
        assert!(parse_tagging(doc(&[("k", &v256)]).as_bytes()).is_ok());
        assert_eq!(
            invalid_tag(parse_tagging(doc(&[("k", &v257)]).as_bytes())),
            "The TagValue you have provided is too long, max 256"
        );
        assert_eq!(
            invalid_tag(parse_tagging(doc(&[("k", "1"), ("k", "2")]).as_bytes())),
            "Cannot provide multiple Tags with the same key"
        );
        assert_eq!(
            invalid_tag(parse_tagging(doc(&[("", "v")]).as_bytes())),
            "The TagKey you have provided is invalid"
        );
        assert_eq!(
            invalid_tag(parse_tagging(doc(&[("aws:x", "v")]).as_bytes())),
            "Your TagKey cannot be prefixed with aws:"
        );
    }

    #[test]
    fn bucket_tags_keep_their_order_and_have_bucket_limits() {
        let list = |n: usize| -> Vec<(String, String)> {
            (0..n).map(|i| (format!("k{i}"), format!("v{i}"))).collect()
        };
        let fifty = validate_bucket_tags(list(50)).unwrap();
        assert_eq!(fifty.len(), 50);
        assert_eq!(fifty[1].key, "k1");
        match validate_bucket_tags(list(51)) {
            Err(S3Error::BadRequest(m)) => {
                assert_eq!(m, "Bucket tag count cannot be greater than 50")
            }
            other => panic!("{other:?}"),
        }
        let one = |k: &str, v: &str| validate_bucket_tags(vec![(k.into(), v.into())]);
        let m = |r: Result<Vec<Tag>, S3Error>| match r {
            Err(S3Error::InvalidTag(m)) => m,
            other => panic!("expected InvalidTag, got {other:?}"),
        };
        assert_eq!(
            m(one("aws:team", "x")),
            "System tags cannot be added/updated by requester"
        );
        assert!(one("team:aws:x", "x").is_ok());
        assert!(one(&"k".repeat(128), &"v".repeat(256)).is_ok());
        assert!(m(one(&"k".repeat(129), "v")).contains("max 128"));
        assert!(m(one("k", &"v".repeat(257))).contains("max 256"));
        assert_eq!(m(one("", "v")), "The TagKey you have provided is invalid");
        assert_eq!(
            m(validate_bucket_tags(vec![
                ("a".into(), "1".into()),
                ("a".into(), "2".into())
            ])),
            "Cannot provide multiple Tags with the same key"
        );
        let doc = render_tag_list(&[
            Tag {
                key: "z".into(),
                value: "1".into(),
            },
            Tag {
                key: "a".into(),
                value: "<2>".into(),
            },
        ])
        .unwrap();
        assert!(
            doc.ends_with(
                "<TagSet><Tag><Key>z</Key><Value>1</Value></Tag><Tag><Key>a</Key>\
                 <Value>&lt;2&gt;</Value></Tag></TagSet></Tagging>"
            ),
            "{doc}"
        );
        assert_eq!(
            parse_tag_list(doc.as_bytes()).unwrap(),
            [
                ("z".to_string(), "1".to_string()),
                ("a".into(), "<2>".into())
            ]
        );
    }

    #[test]
    fn tagging_header_is_a_url_encoded_query() {
        let tags = parse_tagging_header(Some("a%20b=x%26y&k=v%3D1&plus=a+b&novalue")).unwrap();
        assert_eq!(tags["a b"], "x&y");
        assert_eq!(tags["k"], "v=1");
        assert_eq!(tags["plus"], "a b");
        assert_eq!(tags["novalue"], "");
        assert!(parse_tagging_header(None).unwrap().is_empty());
        assert!(parse_tagging_header(Some("")).unwrap().is_empty());
        assert!(matches!(
            parse_tagging_header(Some("a=1&a=2")),
            Err(S3Error::InvalidArgument(_))
        ));
        let eleven: Vec<String> = (0..11).map(|i| format!("k{i}=v")).collect();
        assert!(matches!(
            parse_tagging_header(Some(&eleven.join("&"))),
            Err(S3Error::InvalidTag(_))
        ));
    }

    #[test]
    fn tagging_renders_with_namespace_in_key_order() {
        let tags = BTreeMap::from([
            ("b".to_string(), "2".to_string()),
            ("a".to_string(), "x<y".to_string()),
        ]);
        assert_eq!(
            render_tagging(&tags).unwrap(),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
             <TagSet><Tag><Key>a</Key><Value>x&lt;y</Value></Tag><Tag><Key>b</Key><Value>2</Value></Tag>\
             </TagSet></Tagging>"
        );
        let empty = render_tagging(&BTreeMap::new()).unwrap();
        assert!(
            empty.contains("<TagSet/>") || empty.contains("<TagSet></TagSet>"),
            "{empty}"
        );
    }
}
