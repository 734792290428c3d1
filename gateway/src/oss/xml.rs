//! OSS response documents that differ from S3's in shape (not only in the
//! namespace, which `wire::finish` removes from the shared ones). No root
//! carries a namespace: oss2 finds no element of a namespaced document.
//!
//! Elements oss2 requires are always present, even empty: its parsers use
//! `_find_tag`, which raises when an element is missing (for instance
//! `NextPartNumberMarker` of ListParts, `NextKeyMarker` of
//! ListMultipartUploads, `Type` and `StorageClass` of listed objects).

use serde::Serialize;

/// Elements with the same shape in both dialects.
pub use crate::xml::responses::{CommonPrefix, DeleteMarkerEntry, Owner};

/// OSS's storage class name for what Godwit stores.
pub const STANDARD: &str = "Standard";

/// `2026-11-30T04:00:00.000Z`: OSS timestamps in XML. oss2 accepts
/// `.000` milliseconds and nothing else (`utils._ISO8601_RE`), so the
/// milliseconds are dropped.
pub fn iso8601_s(ms: i64) -> String {
    crate::xml::iso8601_ms(ms.div_euclid(1000) * 1000)
}

/// Seconds since the epoch (GetBucketStat's `LastModifiedTime`).
pub fn unix_secs(ms: i64) -> i64 {
    ms.div_euclid(1000)
}

/// `oss-<region>`: how OSS names a region in `Location` elements.
pub fn location(region: &str) -> String {
    if region.starts_with("oss-") {
        region.to_string()
    } else {
        format!("oss-{region}")
    }
}

// ---- service ----

/// OSS's ListBuckets (GetService): the paging elements come first, and
/// only when the request paged (`Prefix`, `Marker`, `MaxKeys`) or the
/// page is truncated (`IsTruncated`, `NextMarker`).
#[derive(Serialize, Debug)]
pub struct ListAllMyBucketsResult {
    #[serde(rename = "Prefix", skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    #[serde(rename = "Marker", skip_serializing_if = "Option::is_none")]
    pub marker: Option<String>,
    #[serde(rename = "MaxKeys", skip_serializing_if = "Option::is_none")]
    pub max_keys: Option<usize>,
    #[serde(rename = "IsTruncated", skip_serializing_if = "Option::is_none")]
    pub is_truncated: Option<bool>,
    #[serde(rename = "NextMarker", skip_serializing_if = "Option::is_none")]
    pub next_marker: Option<String>,
    #[serde(rename = "Owner")]
    pub owner: Owner,
    #[serde(rename = "Buckets")]
    pub buckets: Buckets,
}

#[derive(Serialize, Debug)]
pub struct Buckets {
    #[serde(rename = "Bucket")]
    pub bucket: Vec<BucketEntry>,
}

#[derive(Serialize, Debug)]
pub struct BucketEntry {
    #[serde(rename = "CreationDate")]
    pub creation_date: String,
    #[serde(rename = "ExtranetEndpoint")]
    pub extranet_endpoint: String,
    #[serde(rename = "IntranetEndpoint")]
    pub intranet_endpoint: String,
    #[serde(rename = "Location")]
    pub location: String,
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Region")]
    pub region: String,
    #[serde(rename = "StorageClass")]
    pub storage_class: &'static str,
}

// ---- bucket ----

/// `GET /bucket?location`: `<LocationConstraint>oss-REGION</LocationConstraint>`.
#[derive(Serialize, Debug)]
pub struct LocationConstraint {
    #[serde(rename = "$text")]
    pub location: String,
}

#[derive(Serialize, Debug)]
pub struct BucketInfo {
    #[serde(rename = "Bucket")]
    pub bucket: BucketDetail,
}

#[derive(Serialize, Debug)]
pub struct BucketDetail {
    #[serde(rename = "AccessMonitor")]
    pub access_monitor: &'static str,
    #[serde(rename = "CreationDate")]
    pub creation_date: String,
    #[serde(rename = "CrossRegionReplication")]
    pub cross_region_replication: &'static str,
    #[serde(rename = "DataRedundancyType")]
    pub data_redundancy_type: &'static str,
    #[serde(rename = "ExtranetEndpoint")]
    pub extranet_endpoint: String,
    #[serde(rename = "IntranetEndpoint")]
    pub intranet_endpoint: String,
    #[serde(rename = "Location")]
    pub location: String,
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Region")]
    pub region: String,
    #[serde(rename = "StorageClass")]
    pub storage_class: &'static str,
    #[serde(rename = "TransferAcceleration")]
    pub transfer_acceleration: &'static str,
    #[serde(rename = "Versioning", skip_serializing_if = "Option::is_none")]
    pub versioning: Option<&'static str>,
    #[serde(rename = "Owner")]
    pub owner: Owner,
    #[serde(rename = "AccessControlList")]
    pub acl: AccessControlList,
    #[serde(rename = "Comment")]
    pub comment: String,
    #[serde(rename = "ServerSideEncryptionRule")]
    pub encryption: EncryptionSummary,
}

/// GetBucketInfo's summary of the default encryption.
#[derive(Serialize, Debug)]
pub struct EncryptionSummary {
    /// The algorithm, or `None` (OSS's word) without a rule.
    #[serde(rename = "SSEAlgorithm")]
    pub algorithm: &'static str,
}

#[derive(Serialize, Debug)]
pub struct BucketStat {
    #[serde(rename = "Storage")]
    pub storage: u64,
    #[serde(rename = "ObjectCount")]
    pub object_count: u64,
    #[serde(rename = "MultipartUploadCount")]
    pub multipart_upload_count: u64,
    #[serde(rename = "LiveChannelCount")]
    pub live_channel_count: u64,
    #[serde(rename = "LastModifiedTime")]
    pub last_modified_time: i64,
    #[serde(rename = "StandardStorage")]
    pub standard_storage: u64,
    #[serde(rename = "StandardObjectCount")]
    pub standard_object_count: u64,
}

/// OSS ACLs are one canned value, not grants: `private`, `public-read`,
/// `public-read-write`, or `default` for an object that follows its bucket.
#[derive(Serialize, Debug)]
pub struct AccessControlList {
    #[serde(rename = "Grant")]
    pub grant: &'static str,
}

#[derive(Serialize, Debug)]
pub struct AccessControlPolicy {
    #[serde(rename = "Owner")]
    pub owner: Owner,
    #[serde(rename = "AccessControlList")]
    pub acl: AccessControlList,
}

// ---- listings ----

/// ListObjects (v1) and ListObjectsV2 (`list-type=2`).
#[derive(Serialize, Debug, Default)]
pub struct ListBucketResult {
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Prefix")]
    pub prefix: String,
    #[serde(rename = "Marker", skip_serializing_if = "Option::is_none")]
    pub marker: Option<String>,
    #[serde(rename = "ContinuationToken", skip_serializing_if = "Option::is_none")]
    pub continuation_token: Option<String>,
    #[serde(rename = "StartAfter", skip_serializing_if = "Option::is_none")]
    pub start_after: Option<String>,
    #[serde(rename = "MaxKeys")]
    pub max_keys: usize,
    #[serde(rename = "Delimiter")]
    pub delimiter: String,
    #[serde(rename = "EncodingType", skip_serializing_if = "Option::is_none")]
    pub encoding_type: Option<String>,
    #[serde(rename = "IsTruncated")]
    pub is_truncated: bool,
    #[serde(rename = "NextMarker", skip_serializing_if = "Option::is_none")]
    pub next_marker: Option<String>,
    #[serde(
        rename = "NextContinuationToken",
        skip_serializing_if = "Option::is_none"
    )]
    pub next_continuation_token: Option<String>,
    #[serde(rename = "KeyCount", skip_serializing_if = "Option::is_none")]
    pub key_count: Option<usize>,
    #[serde(rename = "Contents")]
    pub contents: Vec<ObjectEntry>,
    #[serde(rename = "CommonPrefixes")]
    pub common_prefixes: Vec<CommonPrefix>,
}

#[derive(Serialize, Debug)]
pub struct ObjectEntry {
    #[serde(rename = "Key")]
    pub key: String,
    #[serde(rename = "LastModified")]
    pub last_modified: String,
    #[serde(rename = "ETag")]
    pub etag: String,
    /// `Normal`, `Multipart`, `Symlink` or `Appendable`.
    #[serde(rename = "Type")]
    pub kind: &'static str,
    #[serde(rename = "Size")]
    pub size: u64,
    #[serde(rename = "StorageClass")]
    pub storage_class: &'static str,
    #[serde(rename = "Owner", skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
}

/// ListObjectVersions (`GET /bucket?versions`). oss2 requires
/// `Delimiter`, `KeyMarker`, `VersionIdMarker` and each version's `Type`.
#[derive(Serialize, Debug, Default)]
pub struct ListVersionsResult {
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Prefix")]
    pub prefix: String,
    #[serde(rename = "KeyMarker")]
    pub key_marker: String,
    #[serde(rename = "VersionIdMarker")]
    pub version_id_marker: String,
    #[serde(rename = "NextKeyMarker", skip_serializing_if = "Option::is_none")]
    pub next_key_marker: Option<String>,
    #[serde(
        rename = "NextVersionIdMarker",
        skip_serializing_if = "Option::is_none"
    )]
    pub next_version_id_marker: Option<String>,
    #[serde(rename = "MaxKeys")]
    pub max_keys: usize,
    #[serde(rename = "Delimiter")]
    pub delimiter: String,
    #[serde(rename = "EncodingType", skip_serializing_if = "Option::is_none")]
    pub encoding_type: Option<String>,
    #[serde(rename = "IsTruncated")]
    pub is_truncated: bool,
    #[serde(rename = "Version")]
    pub versions: Vec<VersionEntry>,
    #[serde(rename = "DeleteMarker")]
    pub delete_markers: Vec<DeleteMarkerEntry>,
    #[serde(rename = "CommonPrefixes")]
    pub common_prefixes: Vec<CommonPrefix>,
}

#[derive(Serialize, Debug)]
pub struct VersionEntry {
    #[serde(rename = "Key")]
    pub key: String,
    #[serde(rename = "VersionId")]
    pub version_id: String,
    #[serde(rename = "IsLatest")]
    pub is_latest: bool,
    #[serde(rename = "LastModified")]
    pub last_modified: String,
    #[serde(rename = "ETag")]
    pub etag: String,
    #[serde(rename = "Type")]
    pub kind: &'static str,
    #[serde(rename = "Size")]
    pub size: u64,
    #[serde(rename = "StorageClass")]
    pub storage_class: &'static str,
    #[serde(rename = "Owner")]
    pub owner: Owner,
}

/// DeleteMultipleObjects: S3's `Deleted`/`Error` entries, plus
/// `EncodingType` when keys are URL-encoded (the Go SDK always asks for
/// `encoding-type=url` and unescapes every returned key).
#[derive(Serialize, Debug, Default)]
pub struct DeleteResult {
    #[serde(rename = "EncodingType", skip_serializing_if = "Option::is_none")]
    pub encoding_type: Option<String>,
    #[serde(rename = "Deleted")]
    pub deleted: Vec<crate::xml::responses::Deleted>,
    #[serde(rename = "Error")]
    pub errors: Vec<crate::xml::responses::DeleteError>,
}

#[derive(Serialize, Debug, Default)]
pub struct ListPartsResult {
    #[serde(rename = "Bucket")]
    pub bucket: String,
    #[serde(rename = "EncodingType", skip_serializing_if = "Option::is_none")]
    pub encoding_type: Option<String>,
    #[serde(rename = "Key")]
    pub key: String,
    #[serde(rename = "UploadId")]
    pub upload_id: String,
    #[serde(rename = "StorageClass")]
    pub storage_class: &'static str,
    #[serde(rename = "PartNumberMarker")]
    pub part_number_marker: u32,
    /// Always present (oss2 requires it): the next marker when truncated,
    /// else the last part listed (0 for none).
    #[serde(rename = "NextPartNumberMarker")]
    pub next_part_number_marker: u32,
    #[serde(rename = "MaxParts")]
    pub max_parts: usize,
    #[serde(rename = "IsTruncated")]
    pub is_truncated: bool,
    #[serde(rename = "Part")]
    pub parts: Vec<PartEntry>,
}

#[derive(Serialize, Debug)]
pub struct PartEntry {
    #[serde(rename = "PartNumber")]
    pub part_number: u32,
    #[serde(rename = "LastModified")]
    pub last_modified: String,
    #[serde(rename = "ETag")]
    pub etag: String,
    #[serde(rename = "HashCrc64ecma", skip_serializing_if = "Option::is_none")]
    pub hash_crc64ecma: Option<u64>,
    #[serde(rename = "Size")]
    pub size: u64,
}

#[derive(Serialize, Debug, Default)]
pub struct ListMultipartUploadsResult {
    #[serde(rename = "Bucket")]
    pub bucket: String,
    #[serde(rename = "KeyMarker")]
    pub key_marker: String,
    #[serde(rename = "UploadIdMarker")]
    pub upload_id_marker: String,
    /// Always present (oss2 requires it), empty when not truncated.
    #[serde(rename = "NextKeyMarker")]
    pub next_key_marker: String,
    /// Always present (oss2 requires it), empty when not truncated.
    #[serde(rename = "NextUploadIdMarker")]
    pub next_upload_id_marker: String,
    #[serde(rename = "Delimiter")]
    pub delimiter: String,
    #[serde(rename = "Prefix")]
    pub prefix: String,
    #[serde(rename = "MaxUploads")]
    pub max_uploads: usize,
    #[serde(rename = "IsTruncated")]
    pub is_truncated: bool,
    #[serde(rename = "EncodingType", skip_serializing_if = "Option::is_none")]
    pub encoding_type: Option<String>,
    #[serde(rename = "Upload")]
    pub uploads: Vec<UploadEntry>,
    #[serde(rename = "CommonPrefixes")]
    pub common_prefixes: Vec<CommonPrefix>,
}

#[derive(Serialize, Debug)]
pub struct UploadEntry {
    #[serde(rename = "Key")]
    pub key: String,
    #[serde(rename = "UploadId")]
    pub upload_id: String,
    #[serde(rename = "StorageClass")]
    pub storage_class: &'static str,
    #[serde(rename = "Initiated")]
    pub initiated: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xml::render;

    #[test]
    fn timestamps_have_zero_milliseconds() {
        assert_eq!(iso8601_s(1_796_011_200_123), "2026-11-30T04:00:00.000Z");
        assert_eq!(unix_secs(1_796_011_200_999), 1_796_011_200);
    }

    #[test]
    fn location_is_prefixed_once() {
        assert_eq!(location("cn-hangzhou"), "oss-cn-hangzhou");
        assert_eq!(location("oss-cn-hangzhou"), "oss-cn-hangzhou");
    }

    #[test]
    fn list_parts_always_has_next_marker() {
        let doc = ListPartsResult {
            bucket: "b".into(),
            key: "k".into(),
            upload_id: "u".into(),
            storage_class: STANDARD,
            max_parts: 1000,
            ..Default::default()
        };
        let xml = render("ListPartsResult", &doc).unwrap();
        assert!(
            xml.contains("<NextPartNumberMarker>0</NextPartNumberMarker>"),
            "{xml}"
        );
        assert!(xml.contains("<IsTruncated>false</IsTruncated>"));
        assert!(!xml.contains("xmlns"));
    }

    #[test]
    fn location_constraint_is_bare_text() {
        let xml = render(
            "LocationConstraint",
            &LocationConstraint {
                location: location("cn-hangzhou"),
            },
        )
        .unwrap();
        assert!(
            xml.ends_with("<LocationConstraint>oss-cn-hangzhou</LocationConstraint>"),
            "{xml}"
        );
    }
}
