//! Request documents: CreateBucketConfiguration, VersioningConfiguration,
//! CompleteMultipartUpload and Delete. Anything malformed is MalformedXML.

use godwit_common::types::Checksums;
use quick_xml::events::Event;
use serde::Deserialize;

use crate::error::S3Error;

#[derive(Deserialize, Debug, Default, PartialEq, Eq)]
pub struct CreateBucketConfiguration {
    #[serde(rename = "LocationConstraint", default)]
    pub location_constraint: Option<String>,
}

#[derive(Deserialize, Debug, Default, PartialEq, Eq)]
pub struct VersioningConfigurationIn {
    #[serde(rename = "Status", default)]
    pub status: Option<String>,
    #[serde(rename = "MfaDelete", default)]
    pub mfa_delete: Option<String>,
}

#[derive(Deserialize, Debug, PartialEq, Eq)]
pub struct CompleteMultipartUpload {
    #[serde(rename = "Part", default)]
    pub parts: Vec<CompletePart>,
}

#[derive(Deserialize, Debug, PartialEq, Eq)]
pub struct CompletePart {
    #[serde(rename = "PartNumber")]
    pub part_number: u32,
    #[serde(rename = "ETag")]
    pub etag: String,
    #[serde(rename = "ChecksumCRC32", default)]
    pub crc32: Option<String>,
    #[serde(rename = "ChecksumCRC32C", default)]
    pub crc32c: Option<String>,
    #[serde(rename = "ChecksumCRC64NVME", default)]
    pub crc64nvme: Option<String>,
    #[serde(rename = "ChecksumSHA1", default)]
    pub sha1: Option<String>,
    #[serde(rename = "ChecksumSHA256", default)]
    pub sha256: Option<String>,
}

impl CompletePart {
    /// The checksums the client listed for this part.
    pub fn checksums(&self) -> Checksums {
        Checksums {
            crc32: self.crc32.clone(),
            crc32c: self.crc32c.clone(),
            crc64nvme: self.crc64nvme.clone(),
            sha1: self.sha1.clone(),
            sha256: self.sha256.clone(),
            crc64ecma: None,
            checksum_type: None,
        }
    }
}

/// CompleteMultipartUpload: at least one part, each with a number and an
/// ETag (https://docs.aws.amazon.com/AmazonS3/latest/API/API_CompleteMultipartUpload.html).
pub fn parse_complete(body: &[u8]) -> Result<CompleteMultipartUpload, S3Error> {
    let doc: CompleteMultipartUpload = super::parse(body)?;
    if doc.parts.is_empty() {
        return Err(S3Error::MalformedXML);
    }
    Ok(doc)
}

/// An empty body means "no configuration" (the default region).
pub fn parse_create_bucket(body: &[u8]) -> Result<CreateBucketConfiguration, S3Error> {
    if body.iter().all(|b| b.is_ascii_whitespace()) {
        return Ok(CreateBucketConfiguration::default());
    }
    super::parse(body)
}

pub fn parse_versioning(body: &[u8]) -> Result<VersioningConfigurationIn, S3Error> {
    super::parse(body)
}

/// At most this many keys in one DeleteObjects request.
pub const MAX_DELETE_KEYS: usize = 1000;

#[derive(Debug, Default, PartialEq, Eq)]
pub struct DeleteRequest {
    pub quiet: bool,
    pub objects: Vec<DeleteObjectId>,
}

#[derive(Debug, Default, PartialEq, Eq, Clone)]
pub struct DeleteObjectId {
    pub key: String,
    pub version_id: Option<String>,
}

/// Parses `<Delete>` by hand: serde's text trimming would strip spaces
/// that are part of keys.
pub fn parse_delete(body: &[u8]) -> Result<DeleteRequest, S3Error> {
    let mut reader = quick_xml::Reader::from_reader(body);
    let mut path: Vec<String> = Vec::new();
    let mut text = String::new();
    let mut req = DeleteRequest::default();
    let mut current: Option<DeleteObjectId> = None;
    let mut saw_root = false;
    loop {
        match reader.read_event().map_err(|_| S3Error::MalformedXML)? {
            Event::Start(e) => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                if path.is_empty() {
                    if name != "Delete" || saw_root {
                        return Err(S3Error::MalformedXML);
                    }
                    saw_root = true;
                }
                if path.len() == 1 && name == "Object" {
                    current = Some(DeleteObjectId::default());
                }
                path.push(name);
                text.clear();
            }
            Event::Empty(e) => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                if path.is_empty() {
                    // `<Delete/>`: a document without objects.
                    if name != "Delete" {
                        return Err(S3Error::MalformedXML);
                    }
                    saw_root = true;
                } else if path.len() == 2 && name == "Key" {
                    if let Some(obj) = current.as_mut() {
                        obj.key.clear();
                    }
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
                match (path.len(), name.as_str()) {
                    (1, "Quiet") => req.quiet = text.trim().eq_ignore_ascii_case("true"),
                    (1, "Object") => {
                        let obj = current.take().ok_or(S3Error::MalformedXML)?;
                        req.objects.push(obj);
                        if req.objects.len() > MAX_DELETE_KEYS {
                            return Err(S3Error::MalformedXML);
                        }
                    }
                    (2, "Key") => {
                        if let Some(obj) = current.as_mut() {
                            obj.key = std::mem::take(&mut text);
                        }
                    }
                    (2, "VersionId") => {
                        if let Some(obj) = current.as_mut() {
                            let v = text.trim();
                            obj.version_id = (!v.is_empty()).then(|| v.to_string());
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
    if !saw_root || !path.is_empty() || req.objects.is_empty() {
        return Err(S3Error::MalformedXML);
    }
    Ok(req)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_multipart_parses_parts_and_checksums() {
        let body = br#"<?xml version="1.0" encoding="UTF-8"?>
<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Part><ETag>"aaa"</ETag><ChecksumCRC32>7W96eg==</ChecksumCRC32><PartNumber>1</PartNumber></Part>
  <Part><PartNumber>2</PartNumber><ETag>bbb</ETag></Part>
</CompleteMultipartUpload>"#;
        let doc = parse_complete(body).unwrap();
        assert_eq!(doc.parts.len(), 2);
        assert_eq!(doc.parts[0].part_number, 1);
        assert_eq!(doc.parts[0].etag, "\"aaa\"");
        assert_eq!(doc.parts[0].crc32.as_deref(), Some("7W96eg=="));
        assert_eq!(doc.parts[1].etag, "bbb");
        assert_eq!(doc.parts[1].crc32, None);
    }

    #[test]
    fn complete_multipart_rejects_bad_xml_and_zero_parts() {
        assert!(matches!(
            parse_complete(b"<CompleteMultipartUpload>"),
            Err(S3Error::MalformedXML)
        ));
        assert!(matches!(
            parse_complete(b"<CompleteMultipartUpload></CompleteMultipartUpload>"),
            Err(S3Error::MalformedXML)
        ));
        assert!(matches!(
            parse_complete(b"<CompleteMultipartUpload><Part><PartNumber>x</PartNumber><ETag>a</ETag></Part></CompleteMultipartUpload>"),
            Err(S3Error::MalformedXML)
        ));
        assert!(matches!(
            parse_complete(b"not xml"),
            Err(S3Error::MalformedXML)
        ));
    }

    #[test]
    fn create_bucket_configuration() {
        let body = br#"<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>"#;
        assert_eq!(
            parse_create_bucket(body)
                .unwrap()
                .location_constraint
                .as_deref(),
            Some("eu-west-1")
        );
        assert_eq!(parse_create_bucket(b"").unwrap().location_constraint, None);
        assert_eq!(
            parse_create_bucket(b"<CreateBucketConfiguration/>")
                .unwrap()
                .location_constraint,
            None
        );
        assert!(matches!(
            parse_create_bucket(b"<CreateBucketConfiguration>"),
            Err(S3Error::MalformedXML)
        ));
    }

    #[test]
    fn versioning_configuration() {
        let body = br#"<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>"#;
        assert_eq!(
            parse_versioning(body).unwrap().status.as_deref(),
            Some("Enabled")
        );
        assert!(matches!(
            parse_versioning(b"<VersioningConfiguration><Status>"),
            Err(S3Error::MalformedXML)
        ));
    }

    #[test]
    fn delete_keeps_spaces_and_entities_in_keys() {
        let body = br#"<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Quiet>true</Quiet>
<Object><Key> spaced key </Key></Object>
<Object><Key>a&amp;b&lt;c</Key><VersionId>v1</VersionId></Object></Delete>"#;
        let req = parse_delete(body).unwrap();
        assert!(req.quiet);
        assert_eq!(
            req.objects,
            vec![
                DeleteObjectId {
                    key: " spaced key ".into(),
                    version_id: None
                },
                DeleteObjectId {
                    key: "a&b<c".into(),
                    version_id: Some("v1".into())
                },
            ]
        );
    }

    #[test]
    fn delete_rejects_malformed_empty_and_too_many() {
        assert!(matches!(
            parse_delete(b"<Delete><Object><Key>a</Key></Object>"),
            Err(S3Error::MalformedXML)
        ));
        assert!(matches!(
            parse_delete(b"<Delete></Delete>"),
            Err(S3Error::MalformedXML)
        ));
        assert!(matches!(
            parse_delete(b"<Other><Object><Key>a</Key></Object></Other>"),
            Err(S3Error::MalformedXML)
        ));
        let mut many = String::from("<Delete>");
        for i in 0..1001 {
            many.push_str(&format!("<Object><Key>k{i}</Key></Object>"));
        }
        many.push_str("</Delete>");
        assert!(matches!(
            parse_delete(many.as_bytes()),
            Err(S3Error::MalformedXML)
        ));
        let ok = many.replacen("<Object><Key>k0</Key></Object>", "", 1);
        assert_eq!(parse_delete(ok.as_bytes()).unwrap().objects.len(), 1000);
    }
}
