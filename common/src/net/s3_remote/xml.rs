//! The S3 XML documents the remote client writes (Tagging,
//! CompleteMultipartUpload) and reads (error bodies, the
//! InitiateMultipartUpload, ListParts and CompleteMultipartUpload answers),
//! as serde types for quick-xml.
//!
//! Answers are read the way the AWS SDKs read them: unknown elements are
//! skipped, and a part without a number or an ETag is left out of a page
//! rather than failing it. Numbers and flags are kept as text and parsed
//! here, so one odd value costs its element, not the whole answer.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::client::{CompletePart, RemotePart};

/// The namespace S3 puts on its request and answer documents.
const S3_NS: &str = "http://s3.amazonaws.com/doc/2006-03-01/";

/// PutObjectTagging body.
#[derive(Serialize)]
struct Tagging<'a> {
    #[serde(rename = "@xmlns")]
    xmlns: &'static str,
    #[serde(rename = "TagSet")]
    tag_set: TagSet<'a>,
}

#[derive(Serialize)]
struct TagSet<'a> {
    #[serde(rename = "Tag")]
    tags: Vec<Tag<'a>>,
}

#[derive(Serialize)]
struct Tag<'a> {
    #[serde(rename = "Key")]
    key: &'a str,
    #[serde(rename = "Value")]
    value: &'a str,
}

/// CompleteMultipartUpload body.
#[derive(Serialize)]
struct CompleteMultipartUpload {
    #[serde(rename = "@xmlns")]
    xmlns: &'static str,
    #[serde(rename = "Part")]
    parts: Vec<CompletedPart>,
}

#[derive(Serialize)]
struct CompletedPart {
    #[serde(rename = "PartNumber")]
    number: u32,
    /// Quoted, as S3 lists it.
    #[serde(rename = "ETag")]
    etag: String,
    #[serde(rename = "ChecksumCRC32", skip_serializing_if = "Option::is_none")]
    crc32: Option<String>,
    #[serde(rename = "ChecksumCRC32C", skip_serializing_if = "Option::is_none")]
    crc32c: Option<String>,
    #[serde(rename = "ChecksumCRC64NVME", skip_serializing_if = "Option::is_none")]
    crc64nvme: Option<String>,
    #[serde(rename = "ChecksumSHA1", skip_serializing_if = "Option::is_none")]
    sha1: Option<String>,
    #[serde(rename = "ChecksumSHA256", skip_serializing_if = "Option::is_none")]
    sha256: Option<String>,
}

/// Any S3 error body: `<Error><Code>..</Code><Message>..</Message>...`.
#[derive(Deserialize)]
struct ErrorBody {
    #[serde(rename = "Code")]
    code: Option<String>,
}

#[derive(Deserialize)]
struct InitiateMultipartUploadResult {
    #[serde(rename = "UploadId")]
    upload_id: Option<String>,
}

#[derive(Deserialize)]
struct ListPartsResult {
    #[serde(rename = "IsTruncated")]
    is_truncated: Option<String>,
    #[serde(rename = "NextPartNumberMarker")]
    next_part_number_marker: Option<String>,
    #[serde(rename = "Part", default)]
    parts: Vec<ListedPart>,
}

#[derive(Deserialize)]
struct ListedPart {
    #[serde(rename = "PartNumber")]
    number: Option<String>,
    #[serde(rename = "ETag")]
    etag: Option<String>,
    #[serde(rename = "Size")]
    size: Option<String>,
}

#[derive(Deserialize)]
struct CompleteMultipartUploadResult {
    #[serde(rename = "ETag")]
    etag: Option<String>,
}

/// What a 200 to CompleteMultipartUpload can carry: the root element names
/// which (S3 may answer 200 and report the failure in the body,
/// <https://docs.aws.amazon.com/AmazonS3/latest/API/API_CompleteMultipartUpload.html>).
#[derive(Deserialize)]
enum CompleteAnswer {
    CompleteMultipartUploadResult(CompleteMultipartUploadResult),
    Error(ErrorBody),
}

/// The outcome a CompleteMultipartUpload answer reports.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Completed {
    /// The object's ETag, unquoted (empty when the answer names none).
    Done(String),
    /// An `<Error>` document and its code, if it has one.
    Failed(Option<String>),
}

/// One ListParts page: its parts, and the marker of the next page when the
/// listing is truncated.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct PartsPage {
    pub parts: Vec<RemotePart>,
    pub next_marker: Option<String>,
}

/// The PutObjectTagging document for `tags`.
pub(super) fn tagging(tags: &BTreeMap<String, String>) -> Result<String, quick_xml::SeError> {
    let doc = Tagging {
        xmlns: S3_NS,
        tag_set: TagSet {
            tags: tags.iter().map(|(key, value)| Tag { key, value }).collect(),
        },
    };
    quick_xml::se::to_string_with_root("Tagging", &doc)
}

/// The CompleteMultipartUpload document for the parts in order, each
/// with its checksum when it has one (S3 wants every part's for an upload
/// with a COMPOSITE checksum).
pub(super) fn complete_multipart_upload(
    parts: &[CompletePart],
) -> Result<String, quick_xml::SeError> {
    let doc = CompleteMultipartUpload {
        xmlns: S3_NS,
        parts: parts
            .iter()
            .map(|p| {
                let value = |name: &str| {
                    p.checksum
                        .as_ref()
                        .filter(|c| c.algorithm == name)
                        .map(|c| c.value.clone())
                };
                CompletedPart {
                    number: p.number,
                    etag: format!("\"{}\"", p.etag),
                    crc32: value("CRC32"),
                    crc32c: value("CRC32C"),
                    crc64nvme: value("CRC64NVME"),
                    sha1: value("SHA1"),
                    sha256: value("SHA256"),
                }
            })
            .collect(),
    };
    quick_xml::se::to_string_with_root("CompleteMultipartUpload", &doc)
}

/// Deserializes an answer, refusing one with a DOCTYPE anywhere: S3
/// sends none, and quick-xml 0.37's deserializer panics on a DOCTYPE
/// between two runs of text (`<a>x<!DOCTYPE y>z</a>`; found by the
/// gateway's `fuzz_xml_request_bodies`, fixed upstream in
/// tafia/quick-xml#964). A remote
/// is another party: its answer must not take the replicator down.
fn from_str<T: serde::de::DeserializeOwned>(body: &str) -> Result<T, quick_xml::DeError> {
    let mut reader = quick_xml::Reader::from_str(body);
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::DocType(_)) => {
                return Err(quick_xml::DeError::Custom("DOCTYPE in an answer".into()))
            }
            Ok(quick_xml::events::Event::Eof) | Err(_) => break,
            Ok(_) => {}
        }
    }
    quick_xml::de::from_str(body)
}

/// The `<Code>` of an S3 error body; `None` for a body that is not one
/// (empty, HTML from a proxy, ...).
pub fn error_code(body: &str) -> Option<String> {
    from_str::<ErrorBody>(body).ok()?.code
}

/// The `<Status>` of a `VersioningConfiguration` answer (None: never
/// versioned, or not such a document).
pub(super) fn versioning_status(body: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct VersioningConfiguration {
        #[serde(rename = "Status", default)]
        status: Option<String>,
    }
    from_str::<VersioningConfiguration>(body)
        .ok()?
        .status
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The upload id of an InitiateMultipartUpload answer, if it names one.
pub(super) fn upload_id(body: &str) -> Option<String> {
    from_str::<InitiateMultipartUploadResult>(body)
        .ok()?
        .upload_id
        .filter(|id| !id.is_empty())
}

/// A ListParts page. An answer that does not parse reads as a last, empty
/// page: what was listed so far stands.
pub(super) fn list_parts_page(body: &str) -> PartsPage {
    let Ok(page) = from_str::<ListPartsResult>(body) else {
        return PartsPage {
            parts: Vec::new(),
            next_marker: None,
        };
    };
    let parts = page
        .parts
        .into_iter()
        .filter_map(|p| {
            Some(RemotePart {
                number: p.number?.trim().parse().ok()?,
                etag: unquote(&p.etag?),
                size: p.size.and_then(|s| s.trim().parse().ok()).unwrap_or(0),
            })
        })
        .collect();
    let truncated = page.is_truncated.is_some_and(|v| v.trim() == "true");
    PartsPage {
        parts,
        next_marker: page
            .next_part_number_marker
            .map(|m| m.trim().to_string())
            .filter(|_| truncated),
    }
}

/// The outcome of a 200 answer to CompleteMultipartUpload. An answer that
/// is neither document counts as done, with no ETag.
pub(super) fn completed(body: &str) -> Completed {
    match from_str::<CompleteAnswer>(body) {
        Ok(CompleteAnswer::Error(e)) => Completed::Failed(e.code),
        Ok(CompleteAnswer::CompleteMultipartUploadResult(r)) => {
            Completed::Done(r.etag.as_deref().map(unquote).unwrap_or_default())
        }
        Err(_) => Completed::Done(String::new()),
    }
}

#[derive(Deserialize)]
struct CopyObjectResult {
    #[serde(rename = "ETag")]
    etag: Option<String>,
}

/// The ETag (unquoted) of a CopyObjectResult, if the answer is one.
pub(super) fn copy_result_etag(body: &str) -> Option<String> {
    from_str::<CopyObjectResult>(body)
        .ok()?
        .etag
        .as_deref()
        .map(unquote)
}

/// The PutObjectRetention document (`until`: RFC 3339).
pub(super) fn retention(mode: &str, until: &str) -> String {
    format!(
        "<Retention xmlns=\"{S3_NS}\"><Mode>{}</Mode><RetainUntilDate>{}</RetainUntilDate></Retention>",
        quick_xml::escape::escape(mode),
        quick_xml::escape::escape(until)
    )
}

/// The PutObjectLegalHold document.
pub(super) fn legal_hold(on: bool) -> String {
    let status = if on { "ON" } else { "OFF" };
    format!("<LegalHold xmlns=\"{S3_NS}\"><Status>{status}</Status></LegalHold>")
}

/// An ETag without its quotes.
pub(super) fn unquote(s: &str) -> String {
    s.trim().trim_matches('"').to_string()
}

/// CreateBucket body naming a region.
pub fn create_bucket_configuration(region: &str) -> String {
    format!(
        "<CreateBucketConfiguration xmlns=\"{S3_NS}\">\
         <LocationConstraint>{}</LocationConstraint></CreateBucketConfiguration>",
        quick_xml::escape::escape(region)
    )
}

/// PutBucketVersioning body (`Enabled` or `Suspended`).
pub fn versioning_configuration(status: &str) -> String {
    format!(
        "<VersioningConfiguration xmlns=\"{S3_NS}\"><Status>{}</Status>\
         </VersioningConfiguration>",
        quick_xml::escape::escape(status)
    )
}

/// One page of ListObjectsV2.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ListPage {
    pub keys: Vec<String>,
    /// The continuation token of the next page; `None` on the last.
    pub next_token: Option<String>,
}

/// The part of a ListObjectsV2 answer the clients read.
#[derive(Deserialize)]
struct ListBucketResult {
    #[serde(rename = "IsTruncated")]
    is_truncated: Option<String>,
    #[serde(rename = "NextContinuationToken")]
    next_continuation_token: Option<String>,
    #[serde(rename = "Contents", default)]
    contents: Vec<ListedObject>,
}

#[derive(Deserialize)]
struct ListedObject {
    #[serde(rename = "Key")]
    key: Option<String>,
    #[serde(rename = "Size")]
    size: Option<String>,
    #[serde(rename = "ETag")]
    etag: Option<String>,
    #[serde(rename = "LastModified")]
    last_modified: Option<String>,
}

/// One key of a ListObjectsV2 page, with what the listing says of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedEntry {
    pub key: String,
    pub size: u64,
    /// Unquoted.
    pub etag: String,
    /// As listed (ISO 8601, e.g. `2026-12-03T13:50:26.000Z`).
    pub last_modified: String,
}

/// A ListObjectsV2 page with sizes, ETags and times.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct EntriesPage {
    pub entries: Vec<ListedEntry>,
    /// More keys follow the last one.
    pub truncated: bool,
}

/// The entries of a ListObjectsV2 answer. An answer that does not parse
/// reads as an empty last page.
pub fn list_entries_page(xml: &str) -> EntriesPage {
    let Ok(page) = quick_xml::de::from_str::<ListBucketResult>(xml) else {
        return EntriesPage::default();
    };
    EntriesPage {
        truncated: page.is_truncated.is_some_and(|v| v.trim() == "true"),
        entries: page
            .contents
            .into_iter()
            .filter_map(|c| {
                Some(ListedEntry {
                    key: c.key?,
                    size: c.size.and_then(|s| s.trim().parse().ok()).unwrap_or(0),
                    etag: c.etag.as_deref().map(unquote).unwrap_or_default(),
                    last_modified: c.last_modified.unwrap_or_default().trim().to_string(),
                })
            })
            .collect(),
    }
}

/// Keys and continuation token of a ListObjectsV2 answer. An answer that
/// does not parse reads as an empty last page.
pub fn list_objects_page(xml: &str) -> ListPage {
    let Ok(page) = quick_xml::de::from_str::<ListBucketResult>(xml) else {
        return ListPage::default();
    };
    let truncated = page.is_truncated.is_some_and(|v| v.trim() == "true");
    ListPage {
        keys: page.contents.into_iter().filter_map(|c| c.key).collect(),
        next_token: page.next_continuation_token.filter(|_| truncated),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::s3_remote::PartChecksum;

    #[test]
    fn list_parts_answer_parses() {
        let xml = "<ListPartsResult><Bucket>b</Bucket><IsTruncated>false</IsTruncated>\
                   <Part><PartNumber>1</PartNumber><ETag>&quot;aa&quot;</ETag><Size>5</Size></Part>\
                   <Part><PartNumber>2</PartNumber><ETag>\"bb\"</ETag><Size>7</Size></Part>\
                   </ListPartsResult>";
        let page = list_parts_page(xml);
        assert_eq!(
            page.parts
                .iter()
                .map(|p| (p.number, p.etag.as_str(), p.size))
                .collect::<Vec<_>>(),
            vec![(1, "aa", 5), (2, "bb", 7)]
        );
        assert_eq!(page.next_marker, None);
    }

    #[test]
    fn list_parts_page_follows_truncation_and_skips_broken_parts() {
        let xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
                   <ListPartsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
                   <IsTruncated>true</IsTruncated><NextPartNumberMarker> 3 </NextPartNumberMarker>\
                   <Part><PartNumber>x</PartNumber><ETag>\"a\"</ETag></Part>\
                   <Part><PartNumber>2</PartNumber><Size>1</Size></Part>\
                   <Part><LastModified>2026-01-01T00:00:00.000Z</LastModified>\
                   <PartNumber>3</PartNumber><ETag>\"c\"</ETag></Part>\
                   </ListPartsResult>";
        let page = list_parts_page(xml);
        assert_eq!(
            page.parts,
            vec![RemotePart {
                number: 3,
                etag: "c".into(),
                size: 0
            }]
        );
        assert_eq!(page.next_marker.as_deref(), Some("3"));
        assert_eq!(list_parts_page("not xml").parts, Vec::new());
    }

    #[test]
    fn error_codes_and_upload_ids_are_read_and_unescaped() {
        assert_eq!(
            error_code(
                "<?xml version=\"1.0\"?><Error><Code>SlowDown</Code><Message>m</Message></Error>"
            )
            .as_deref(),
            Some("SlowDown")
        );
        assert_eq!(error_code(""), None);
        assert_eq!(error_code("<html><body>bad gateway</body></html>"), None);
        assert_eq!(
            upload_id(
                "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key>\
                       <UploadId>up/1=&amp;x</UploadId></InitiateMultipartUploadResult>"
            )
            .as_deref(),
            Some("up/1=&x")
        );
        assert_eq!(
            upload_id("<InitiateMultipartUploadResult><UploadId></UploadId></InitiateMultipartUploadResult>"),
            None
        );
    }

    #[test]
    fn a_complete_answer_is_a_result_or_an_error() {
        assert_eq!(
            completed("<CompleteMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
                       <Location>l</Location><ETag>&quot;abc-2&quot;</ETag></CompleteMultipartUploadResult>"),
            Completed::Done("abc-2".into())
        );
        assert_eq!(
            completed("<?xml version=\"1.0\"?>\n\n<Error><Code>InternalError</Code></Error>"),
            Completed::Failed(Some("InternalError".into()))
        );
        assert_eq!(completed("<Error></Error>"), Completed::Failed(None));
    }

    #[test]
    fn lock_documents_and_copy_answers() {
        assert_eq!(
            retention("GOVERNANCE", "2030-01-01T00:00:00Z"),
            format!("<Retention xmlns=\"{S3_NS}\"><Mode>GOVERNANCE</Mode><RetainUntilDate>2030-01-01T00:00:00Z</RetainUntilDate></Retention>")
        );
        assert_eq!(
            legal_hold(false),
            format!("<LegalHold xmlns=\"{S3_NS}\"><Status>OFF</Status></LegalHold>")
        );
        let ok = r#"<?xml version="1.0" encoding="UTF-8"?>
<CopyObjectResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LastModified>2026-01-01T00:00:00.000Z</LastModified><ETag>&quot;abc&quot;</ETag></CopyObjectResult>"#;
        assert_eq!(copy_result_etag(ok).as_deref(), Some("abc"));
        assert_eq!(error_code(ok), None);
        // S3 may answer a copy 200 with an error document.
        let failed = "<Error><Code>InternalError</Code><Message>x</Message></Error>";
        assert_eq!(error_code(failed).as_deref(), Some("InternalError"));
    }

    #[test]
    fn request_documents_escape_their_text() {
        let tags = BTreeMap::from([
            ("a<b".to_string(), "x&y".to_string()),
            ("k".to_string(), "v".to_string()),
        ]);
        assert_eq!(
            tagging(&tags).unwrap(),
            "<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet>\
             <Tag><Key>a&lt;b</Key><Value>x&amp;y</Value></Tag><Tag><Key>k</Key><Value>v</Value></Tag>\
             </TagSet></Tagging>"
        );
        assert_eq!(
            complete_multipart_upload(&[
                CompletePart::new(1, "e1"),
                CompletePart {
                    checksum: Some(PartChecksum {
                        algorithm: "SHA256",
                        value: "c2hh".into()
                    }),
                    ..CompletePart::new(2, "e&2")
                }
            ])
            .unwrap(),
            "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
             <Part><PartNumber>1</PartNumber><ETag>\"e1\"</ETag></Part>\
             <Part><PartNumber>2</PartNumber><ETag>\"e&amp;2\"</ETag>\
             <ChecksumSHA256>c2hh</ChecksumSHA256></Part>\
             </CompleteMultipartUpload>"
        );
    }

    #[test]
    fn list_page_parsing_reads_keys_and_token() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>bench/</Prefix>
<KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>
<NextContinuationToken>tok&amp;1</NextContinuationToken>
<Contents><Key>bench/a&amp;b</Key><Size>1</Size></Contents>
<Contents><Key>bench/&#233;&lt;</Key><Size>1</Size></Contents></ListBucketResult>"#;
        assert_eq!(
            list_objects_page(xml),
            ListPage {
                keys: vec!["bench/a&b".into(), "bench/é<".into()],
                next_token: Some("tok&1".into()),
            }
        );
        let last = "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>";
        assert_eq!(list_objects_page(last), ListPage::default());
    }
}
