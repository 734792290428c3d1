//! Response documents, field order as AWS sends them. Optional elements
//! are omitted when absent; the root element's name is given at render
//! time (`xml::render`).

use godwit_common::types::Checksums;
use serde::Serialize;

use super::S3_NS;

fn ns() -> &'static str {
    S3_NS
}

/// The namespace attribute every response root carries.
#[derive(Serialize, Debug, Clone, Copy)]
pub struct Ns(&'static str);

impl Default for Ns {
    fn default() -> Self {
        Ns(ns())
    }
}

#[derive(Serialize, Debug, Clone, Default, PartialEq, Eq)]
pub struct Owner {
    #[serde(rename = "ID")]
    pub id: String,
    #[serde(rename = "DisplayName")]
    pub display_name: String,
}

impl Owner {
    pub fn new(id: &str, display_name: &str) -> Self {
        Owner {
            id: id.to_string(),
            display_name: display_name.to_string(),
        }
    }
}

/// The `Checksum*` elements of objects, parts and copy results.
#[derive(Serialize, Debug, Clone, Default)]
pub struct ChecksumElems {
    #[serde(rename = "ChecksumCRC32", skip_serializing_if = "Option::is_none")]
    pub crc32: Option<String>,
    #[serde(rename = "ChecksumCRC32C", skip_serializing_if = "Option::is_none")]
    pub crc32c: Option<String>,
    #[serde(rename = "ChecksumCRC64NVME", skip_serializing_if = "Option::is_none")]
    pub crc64nvme: Option<String>,
    #[serde(rename = "ChecksumSHA1", skip_serializing_if = "Option::is_none")]
    pub sha1: Option<String>,
    #[serde(rename = "ChecksumSHA256", skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

impl From<&Checksums> for ChecksumElems {
    fn from(c: &Checksums) -> Self {
        ChecksumElems {
            crc32: c.crc32.clone(),
            crc32c: c.crc32c.clone(),
            crc64nvme: c.crc64nvme.clone(),
            sha1: c.sha1.clone(),
            sha256: c.sha256.clone(),
        }
    }
}

// ---- service and buckets ----

#[derive(Serialize, Debug)]
pub struct ListAllMyBucketsResult {
    #[serde(rename = "@xmlns")]
    pub xmlns: Ns,
    #[serde(rename = "Owner")]
    pub owner: Owner,
    #[serde(rename = "Buckets")]
    pub buckets: Buckets,
    /// Where the next page starts, when more buckets remain.
    #[serde(rename = "ContinuationToken", skip_serializing_if = "Option::is_none")]
    pub continuation_token: Option<String>,
    /// The request's `prefix`, echoed when it sent one.
    #[serde(rename = "Prefix", skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
}

#[derive(Serialize, Debug)]
pub struct Buckets {
    #[serde(rename = "Bucket")]
    pub bucket: Vec<BucketEntry>,
}

#[derive(Serialize, Debug)]
pub struct BucketEntry {
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "CreationDate")]
    pub creation_date: String,
    #[serde(rename = "BucketRegion")]
    pub bucket_region: String,
}

/// `<LocationConstraint>` (empty for us-east-1).
#[derive(Serialize, Debug)]
pub struct LocationConstraint {
    #[serde(rename = "@xmlns")]
    pub xmlns: Ns,
    #[serde(rename = "$text")]
    pub region: String,
}

#[derive(Serialize, Debug)]
pub struct VersioningConfiguration {
    #[serde(rename = "@xmlns")]
    pub xmlns: Ns,
    #[serde(rename = "Status", skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// GetBucketAcl / GetObjectAcl (`s3::acl::render`).
#[derive(Serialize, Debug)]
pub struct AccessControlPolicy {
    #[serde(rename = "@xmlns")]
    pub xmlns: Ns,
    #[serde(rename = "Owner")]
    pub owner: Owner,
    #[serde(rename = "AccessControlList")]
    pub acl: AccessControlList,
}

#[derive(Serialize, Debug)]
pub struct AccessControlList {
    #[serde(rename = "Grant")]
    pub grant: Vec<Grant>,
}

#[derive(Serialize, Debug)]
pub struct Grant {
    #[serde(rename = "Grantee")]
    pub grantee: Grantee,
    #[serde(rename = "Permission")]
    pub permission: &'static str,
}

/// A `CanonicalUser` grantee has `ID` (and `DisplayName` when known), a
/// `Group` one `URI`. Stored ACLs are resolved, so the third type,
/// `AmazonCustomerByEmail`, is never rendered.
#[derive(Serialize, Debug)]
pub struct Grantee {
    #[serde(rename = "@xmlns:xsi")]
    pub xmlns_xsi: &'static str,
    #[serde(rename = "@xsi:type")]
    pub xsi_type: &'static str,
    #[serde(rename = "ID", skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(rename = "DisplayName", skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(rename = "URI", skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
}

/// The namespace `xsi:type` belongs to.
pub const XSI_NS: &str = "http://www.w3.org/2001/XMLSchema-instance";

impl Grantee {
    pub fn canonical_user(id: String, display_name: Option<String>) -> Self {
        Grantee {
            xmlns_xsi: XSI_NS,
            xsi_type: "CanonicalUser",
            id: Some(id),
            display_name,
            uri: None,
        }
    }

    pub fn group(uri: &str) -> Self {
        Grantee {
            xmlns_xsi: XSI_NS,
            xsi_type: "Group",
            id: None,
            display_name: None,
            uri: Some(uri.to_string()),
        }
    }
}

// ---- listings ----

/// ListObjects (v1) and ListObjectsV2 share the root `ListBucketResult`;
/// each fills the elements of its version.
#[derive(Serialize, Debug, Default)]
pub struct ListBucketResult {
    #[serde(rename = "@xmlns")]
    pub xmlns: Ns,
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Prefix")]
    pub prefix: String,
    #[serde(rename = "Marker", skip_serializing_if = "Option::is_none")]
    pub marker: Option<String>,
    #[serde(rename = "NextMarker", skip_serializing_if = "Option::is_none")]
    pub next_marker: Option<String>,
    #[serde(rename = "ContinuationToken", skip_serializing_if = "Option::is_none")]
    pub continuation_token: Option<String>,
    #[serde(
        rename = "NextContinuationToken",
        skip_serializing_if = "Option::is_none"
    )]
    pub next_continuation_token: Option<String>,
    #[serde(rename = "StartAfter", skip_serializing_if = "Option::is_none")]
    pub start_after: Option<String>,
    #[serde(rename = "KeyCount", skip_serializing_if = "Option::is_none")]
    pub key_count: Option<usize>,
    #[serde(rename = "MaxKeys")]
    pub max_keys: usize,
    #[serde(rename = "Delimiter", skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<String>,
    #[serde(rename = "EncodingType", skip_serializing_if = "Option::is_none")]
    pub encoding_type: Option<String>,
    #[serde(rename = "IsTruncated")]
    pub is_truncated: bool,
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
    #[serde(rename = "ChecksumAlgorithm")]
    pub checksum_algorithm: Vec<String>,
    /// `ChecksumType`, COMPOSITE or FULL_OBJECT, when there is a checksum.
    #[serde(rename = "ChecksumType", skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<&'static str>,
    #[serde(rename = "Size")]
    pub size: u64,
    #[serde(rename = "StorageClass")]
    pub storage_class: &'static str,
    #[serde(rename = "Owner", skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
}

#[derive(Serialize, Debug, PartialEq, Eq)]
pub struct CommonPrefix {
    #[serde(rename = "Prefix")]
    pub prefix: String,
}

#[derive(Serialize, Debug, Default)]
pub struct ListVersionsResult {
    #[serde(rename = "@xmlns")]
    pub xmlns: Ns,
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
    #[serde(rename = "Delimiter", skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<String>,
    #[serde(rename = "EncodingType", skip_serializing_if = "Option::is_none")]
    pub encoding_type: Option<String>,
    #[serde(rename = "IsTruncated")]
    pub is_truncated: bool,
    /// `<Version>` and `<DeleteMarker>` elements interleaved as S3 sends
    /// them: in key order, newest first within a key.
    #[serde(rename = "$value")]
    pub entries: Vec<VersionListEntry>,
    #[serde(rename = "CommonPrefixes")]
    pub common_prefixes: Vec<CommonPrefix>,
}

/// One element of a versions listing; the variant names the element.
#[derive(Serialize, Debug)]
pub enum VersionListEntry {
    Version(VersionEntry),
    DeleteMarker(DeleteMarkerEntry),
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
    #[serde(rename = "ChecksumAlgorithm")]
    pub checksum_algorithm: Vec<String>,
    /// `ChecksumType`, COMPOSITE or FULL_OBJECT, when there is a checksum.
    #[serde(rename = "ChecksumType", skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<&'static str>,
    #[serde(rename = "Size")]
    pub size: u64,
    #[serde(rename = "StorageClass")]
    pub storage_class: &'static str,
    #[serde(rename = "Owner")]
    pub owner: Owner,
}

#[derive(Serialize, Debug)]
pub struct DeleteMarkerEntry {
    #[serde(rename = "Key")]
    pub key: String,
    #[serde(rename = "VersionId")]
    pub version_id: String,
    #[serde(rename = "IsLatest")]
    pub is_latest: bool,
    #[serde(rename = "LastModified")]
    pub last_modified: String,
    #[serde(rename = "Owner")]
    pub owner: Owner,
}

// ---- multipart ----

#[derive(Serialize, Debug)]
pub struct InitiateMultipartUploadResult {
    #[serde(rename = "@xmlns")]
    pub xmlns: Ns,
    #[serde(rename = "Bucket")]
    pub bucket: String,
    #[serde(rename = "Key")]
    pub key: String,
    #[serde(rename = "UploadId")]
    pub upload_id: String,
}

#[derive(Serialize, Debug)]
pub struct CompleteMultipartUploadResult {
    #[serde(rename = "@xmlns")]
    pub xmlns: Ns,
    #[serde(rename = "Location")]
    pub location: String,
    #[serde(rename = "Bucket")]
    pub bucket: String,
    #[serde(rename = "Key")]
    pub key: String,
    #[serde(rename = "ETag")]
    pub etag: String,
    #[serde(flatten)]
    pub checksums: ChecksumElems,
    /// `ChecksumType`, COMPOSITE or FULL_OBJECT, when there is a checksum.
    #[serde(rename = "ChecksumType", skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<&'static str>,
}

/// `CopyObjectResult` and `CopyPartResult` have the same shape.
#[derive(Serialize, Debug)]
pub struct CopyResult {
    #[serde(rename = "@xmlns")]
    pub xmlns: Ns,
    #[serde(rename = "ETag")]
    pub etag: String,
    #[serde(rename = "LastModified")]
    pub last_modified: String,
    /// CopyObjectResult only (a part has no type of its own).
    #[serde(rename = "ChecksumType", skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<&'static str>,
    #[serde(flatten)]
    pub checksums: ChecksumElems,
}

#[derive(Serialize, Debug)]
pub struct ListPartsResult {
    #[serde(rename = "@xmlns")]
    pub xmlns: Ns,
    #[serde(rename = "Bucket")]
    pub bucket: String,
    #[serde(rename = "Key")]
    pub key: String,
    #[serde(rename = "UploadId")]
    pub upload_id: String,
    #[serde(rename = "PartNumberMarker")]
    pub part_number_marker: u32,
    #[serde(
        rename = "NextPartNumberMarker",
        skip_serializing_if = "Option::is_none"
    )]
    pub next_part_number_marker: Option<u32>,
    #[serde(rename = "MaxParts")]
    pub max_parts: usize,
    #[serde(rename = "IsTruncated")]
    pub is_truncated: bool,
    #[serde(rename = "Part")]
    pub parts: Vec<PartEntry>,
    #[serde(rename = "Initiator")]
    pub initiator: Owner,
    #[serde(rename = "Owner")]
    pub owner: Owner,
    #[serde(rename = "StorageClass")]
    pub storage_class: &'static str,
    #[serde(rename = "ChecksumAlgorithm", skip_serializing_if = "Option::is_none")]
    pub checksum_algorithm: Option<String>,
    /// `ChecksumType`, COMPOSITE or FULL_OBJECT, when there is a checksum.
    #[serde(rename = "ChecksumType", skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<&'static str>,
}

#[derive(Serialize, Debug)]
pub struct PartEntry {
    #[serde(rename = "PartNumber")]
    pub part_number: u32,
    #[serde(rename = "LastModified")]
    pub last_modified: String,
    #[serde(rename = "ETag")]
    pub etag: String,
    #[serde(rename = "Size")]
    pub size: u64,
    #[serde(flatten)]
    pub checksums: ChecksumElems,
}

#[derive(Serialize, Debug, Default)]
pub struct ListMultipartUploadsResult {
    #[serde(rename = "@xmlns")]
    pub xmlns: Ns,
    #[serde(rename = "Bucket")]
    pub bucket: String,
    #[serde(rename = "KeyMarker")]
    pub key_marker: String,
    #[serde(rename = "UploadIdMarker")]
    pub upload_id_marker: String,
    #[serde(rename = "NextKeyMarker", skip_serializing_if = "Option::is_none")]
    pub next_key_marker: Option<String>,
    #[serde(rename = "NextUploadIdMarker", skip_serializing_if = "Option::is_none")]
    pub next_upload_id_marker: Option<String>,
    #[serde(rename = "Prefix")]
    pub prefix: String,
    #[serde(rename = "Delimiter", skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<String>,
    #[serde(rename = "MaxUploads")]
    pub max_uploads: usize,
    #[serde(rename = "EncodingType", skip_serializing_if = "Option::is_none")]
    pub encoding_type: Option<String>,
    #[serde(rename = "IsTruncated")]
    pub is_truncated: bool,
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
    #[serde(rename = "Initiator")]
    pub initiator: Owner,
    #[serde(rename = "Owner")]
    pub owner: Owner,
    #[serde(rename = "StorageClass")]
    pub storage_class: &'static str,
    #[serde(rename = "Initiated")]
    pub initiated: String,
    #[serde(rename = "ChecksumAlgorithm", skip_serializing_if = "Option::is_none")]
    pub checksum_algorithm: Option<String>,
    /// `ChecksumType`, COMPOSITE or FULL_OBJECT, when there is a checksum.
    #[serde(rename = "ChecksumType", skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<&'static str>,
}

// ---- DeleteObjects ----

#[derive(Serialize, Debug, Default)]
pub struct DeleteResult {
    #[serde(rename = "@xmlns")]
    pub xmlns: Ns,
    #[serde(rename = "Deleted")]
    pub deleted: Vec<Deleted>,
    #[serde(rename = "Error")]
    pub errors: Vec<DeleteError>,
}

#[derive(Serialize, Debug)]
pub struct Deleted {
    #[serde(rename = "Key")]
    pub key: String,
    #[serde(rename = "VersionId", skip_serializing_if = "Option::is_none")]
    pub version_id: Option<String>,
    #[serde(rename = "DeleteMarker", skip_serializing_if = "Option::is_none")]
    pub delete_marker: Option<bool>,
    #[serde(
        rename = "DeleteMarkerVersionId",
        skip_serializing_if = "Option::is_none"
    )]
    pub delete_marker_version_id: Option<String>,
}

#[derive(Serialize, Debug)]
pub struct DeleteError {
    #[serde(rename = "Key")]
    pub key: String,
    #[serde(rename = "VersionId", skip_serializing_if = "Option::is_none")]
    pub version_id: Option<String>,
    #[serde(rename = "Code")]
    pub code: String,
    #[serde(rename = "Message")]
    pub message: String,
}

// ---- GetObjectAttributes ----

/// Elements in the order of AWS's response syntax; each attribute only
/// when asked for (and the object has it).
#[derive(Serialize, Debug)]
pub struct GetObjectAttributesResponse {
    #[serde(rename = "@xmlns")]
    pub xmlns: Ns,
    /// Bare, without the quotes of every other ETag S3 shows.
    #[serde(rename = "ETag", skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    #[serde(rename = "Checksum", skip_serializing_if = "Option::is_none")]
    pub checksum: Option<AttributesChecksum>,
    #[serde(rename = "ObjectParts", skip_serializing_if = "Option::is_none")]
    pub object_parts: Option<AttributesParts>,
    #[serde(rename = "StorageClass", skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<&'static str>,
    #[serde(rename = "ObjectSize", skip_serializing_if = "Option::is_none")]
    pub object_size: Option<u64>,
}

#[derive(Serialize, Debug)]
pub struct AttributesChecksum {
    #[serde(flatten)]
    pub checksums: ChecksumElems,
    /// COMPOSITE or FULL_OBJECT.
    #[serde(rename = "ChecksumType")]
    pub checksum_type: &'static str,
}

#[derive(Serialize, Debug)]
pub struct AttributesParts {
    #[serde(rename = "IsTruncated")]
    pub is_truncated: bool,
    #[serde(rename = "MaxParts")]
    pub max_parts: usize,
    #[serde(
        rename = "NextPartNumberMarker",
        skip_serializing_if = "Option::is_none"
    )]
    pub next_part_number_marker: Option<u32>,
    #[serde(rename = "PartNumberMarker")]
    pub part_number_marker: u32,
    #[serde(rename = "Part")]
    pub parts: Vec<AttributesPart>,
    /// All parts of the object (boto3's `TotalPartsCount`).
    #[serde(rename = "PartsCount")]
    pub parts_count: usize,
}

#[derive(Serialize, Debug)]
pub struct AttributesPart {
    #[serde(flatten)]
    pub checksums: ChecksumElems,
    #[serde(rename = "PartNumber")]
    pub part_number: u32,
    #[serde(rename = "Size")]
    pub size: u64,
}

/// GetBucketPolicyStatus.
#[derive(Serialize, Debug)]
pub struct PolicyStatus {
    #[serde(rename = "@xmlns")]
    pub xmlns: Ns,
    #[serde(rename = "IsPublic")]
    pub is_public: bool,
}
