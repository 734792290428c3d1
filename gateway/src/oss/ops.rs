//! OSS's answers where they differ from S3's in shape: the renderings of
//! `api`'s typed results (ListBuckets, GetBucketLocation, the ACLs,
//! ListMultipartUploads, the DeleteObjects result), the listings and
//! ListParts (which read OSS's `encoding-type` rules), the OSS-only
//! bucket descriptions (GetBucketInfo, GetBucketStat), and the OSS-only
//! object headers (`x-oss-hash-crc64ecma`, `x-oss-object-type`,
//! `x-oss-storage-class`, added by `wire` from the handlers'
//! `ObjectFacts`). The data path itself (PUT, GET, multipart) is `api`'s.

use axum::response::Response;
use godwit_common::types::{ListObjectsQuery, ListUploadsQuery, ObjectVersion, VersioningState};
use http::{HeaderMap, StatusCode};

use super::xml::*;
use crate::acl::{oss_name, AclView};
use crate::api::bucket::{BucketList, BucketLocation, BucketsQuery};
use crate::api::delete_objects::DeleteOutcome;
use crate::api::list::{
    encode_token, fetch_v1, non_empty, parse_encoding, Enc, Listing, V1Listing, V2Query,
    VersionsQuery,
};
use crate::api::multipart::{PartsListing, PartsQuery, UploadsListing};
use crate::api::{set_header, xml_response, ApiResult, Ctx, ObjectFacts, OwnerNames};
use crate::error::S3Error;
use crate::router::Query;
use crate::xml::{quote_etag, render};

/// Pages read per GetBucketStat walk step.
const STAT_PAGE: usize = 1000;

/// `Normal` for a simple upload, `Multipart` for a completed multipart
/// upload, `Symlink`, `Appendable` (`x-oss-object-type`, listing `Type`).
pub fn object_type(v: &ObjectVersion) -> &'static str {
    if v.is_appendable() {
        return APPENDABLE;
    }
    type_name(!v.parts.is_empty(), v.is_symlink())
}

const APPENDABLE: &str = "Appendable";

fn type_name(multipart: bool, symlink: bool) -> &'static str {
    match (symlink, multipart) {
        (true, _) => "Symlink",
        (false, true) => "Multipart",
        (false, false) => "Normal",
    }
}

/// An appendable object's length: where the next append goes.
const NEXT_APPEND_POSITION: &str = "x-oss-next-append-position";

/// `x-oss-hash-crc64ecma` as OSS sends it: an unsigned decimal.
pub fn set_crc64(out: &mut HeaderMap, crc: Option<u64>) {
    if let Some(crc) = crc {
        set_header(out, "x-oss-hash-crc64ecma", &crc.to_string());
    }
}

/// The OSS headers of an object answer, from what its handler says about
/// it: the CRC-64 of what was written, or on GET/HEAD the object's type
/// and class and its CRC-64 (which a ranged read goes without).
pub fn object_headers(out: &mut HeaderMap, facts: ObjectFacts) {
    match facts {
        ObjectFacts::Written { crc64 } => set_crc64(out, crc64),
        ObjectFacts::Read {
            multipart,
            symlink,
            crc64,
            appendable,
        } => {
            let kind = match appendable {
                Some(length) if !symlink => {
                    set_header(out, NEXT_APPEND_POSITION, &length.to_string());
                    APPENDABLE
                }
                _ => type_name(multipart, symlink),
            };
            set_header(out, "x-oss-object-type", kind);
            set_header(out, "x-oss-storage-class", STANDARD);
            set_crc64(out, crc64);
        }
    }
}

/// The endpoint clients reached this gateway at: what OSS reports as a
/// bucket's extranet and intranet endpoints.
fn endpoint(ctx: &Ctx) -> String {
    ctx.header("host").unwrap_or("localhost").to_string()
}

fn doc(root: &str, value: &impl serde::Serialize) -> Result<Response, S3Error> {
    Ok(xml_response(StatusCode::OK, render(root, value)?))
}

/// OSS's ListBuckets page: `max-keys` 100 by default, at most 1000.
pub const OSS_DEFAULT_BUCKETS: usize = 100;
pub const OSS_MAX_BUCKETS: usize = 1000;

/// The paging parameters of an OSS ListBuckets.
const OSS_PAGING_PARAMS: [&str; 3] = ["prefix", "marker", "max-keys"];

/// OSS's ListBuckets parameters: `prefix`, `marker` (list names after
/// it) and `max-keys` (1..=1000, else InvalidArgument). OSS always pages,
/// 100 buckets by default; oss2 sends all three, empty when unused.
pub fn buckets_query(q: &Query) -> Result<BucketsQuery, S3Error> {
    let max = match q.get("max-keys").filter(|m| !m.is_empty()) {
        None => OSS_DEFAULT_BUCKETS,
        Some(raw) => match raw.trim().parse::<usize>() {
            Ok(n) if (1..=OSS_MAX_BUCKETS).contains(&n) => n,
            _ => {
                return Err(S3Error::InvalidArgument(format!(
                    "max-keys must be an integer between 1 and {OSS_MAX_BUCKETS}"
                )))
            }
        },
    };
    Ok(BucketsQuery {
        prefix: non_empty(q.get("prefix")),
        after: non_empty(q.get("marker")),
        region: None,
        max: Some(max),
    })
}

pub fn list_buckets(ctx: &Ctx, list: BucketList) -> Result<Response, S3Error> {
    let ep = endpoint(ctx);
    let paged = OSS_PAGING_PARAMS.iter().any(|p| ctx.query.has(p));
    let next_marker = list.next_after().map(str::to_string);
    let query = &list.query;
    doc(
        "ListAllMyBucketsResult",
        &ListAllMyBucketsResult {
            prefix: paged.then(|| query.prefix.clone().unwrap_or_default()),
            marker: paged.then(|| query.after.clone().unwrap_or_default()),
            max_keys: if paged { query.max } else { None },
            is_truncated: (paged || list.is_truncated).then_some(list.is_truncated),
            next_marker,
            owner: list.owner,
            buckets: Buckets {
                bucket: list
                    .buckets
                    .into_iter()
                    .map(|b| BucketEntry {
                        creation_date: iso8601_s(b.created_ms),
                        extranet_endpoint: ep.clone(),
                        intranet_endpoint: ep.clone(),
                        location: location(&b.region),
                        name: b.name,
                        region: b.region,
                        storage_class: STANDARD,
                    })
                    .collect(),
            },
        },
    )
}

pub fn location_constraint(loc: BucketLocation) -> Result<Response, S3Error> {
    doc(
        "LocationConstraint",
        &LocationConstraint {
            location: location(&loc.region),
        },
    )
}

pub async fn get_bucket_info(ctx: &Ctx) -> ApiResult {
    let bucket = ctx.gw.meta.get_bucket(ctx.bucket()).await?;
    let replication = match ctx.gw.meta.get_bucket_replication(ctx.bucket()).await {
        Ok(_) => "Enabled",
        Err(godwit_common::MetaError::ReplicationConfigurationNotFound) => "Disabled",
        Err(e) => return Err(e.into()),
    };
    let owner = ctx.owner_of(&bucket.owner).await?;
    let ep = endpoint(ctx);
    Ok(doc(
        "BucketInfo",
        &BucketInfo {
            bucket: BucketDetail {
                access_monitor: "Disabled",
                creation_date: iso8601_s(bucket.created_ms),
                cross_region_replication: replication,
                data_redundancy_type: "LRS",
                extranet_endpoint: ep.clone(),
                intranet_endpoint: ep,
                location: location(&bucket.region),
                name: bucket.name,
                region: bucket.region,
                storage_class: STANDARD,
                transfer_acceleration: "Disabled",
                versioning: match bucket.versioning {
                    VersioningState::Unversioned => None,
                    VersioningState::Enabled => Some("Enabled"),
                    VersioningState::Suspended => Some("Suspended"),
                },
                owner,
                acl: AccessControlList {
                    grant: crate::acl::oss_name(bucket.access.acl.as_ref(), false),
                },
                comment: String::new(),
                encryption: EncryptionSummary {
                    algorithm: bucket
                        .config
                        .encryption
                        .as_ref()
                        .and_then(|e| e.default_algorithm())
                        .map_or("None", |a| a.as_str()),
                },
            },
        },
    )?)
}

/// GetBucketStat: counted by walking the bucket's current objects and
/// open uploads (meta keeps no running totals yet), so its cost grows
/// with the bucket.
pub async fn get_bucket_stat(ctx: &Ctx) -> ApiResult {
    let bucket = ctx.bucket().to_string();
    ctx.gw.meta.get_bucket(&bucket).await?;
    let (mut storage, mut count, mut last_ms) = (0u64, 0u64, 0i64);
    let mut after = None;
    loop {
        let page = ctx
            .gw
            .meta
            .list_objects(ListObjectsQuery {
                bucket: bucket.clone(),
                prefix: String::new(),
                delimiter: None,
                start_after: after.clone(),
                max_keys: STAT_PAGE,
            })
            .await?;
        for o in &page.objects {
            storage += o.size;
            count += 1;
            last_ms = last_ms.max(o.last_modified_ms);
        }
        match (page.is_truncated, page.next_marker) {
            (true, Some(next)) if Some(&next) != after.as_ref() => after = Some(next),
            _ => break,
        }
    }
    let mut uploads = 0u64;
    let (mut key_marker, mut id_marker) = (None, None);
    loop {
        let page = ctx
            .gw
            .meta
            .list_uploads(ListUploadsQuery {
                bucket: bucket.clone(),
                prefix: String::new(),
                delimiter: None,
                key_marker: key_marker.clone(),
                upload_id_marker: id_marker.clone(),
                max_uploads: STAT_PAGE,
            })
            .await?;
        uploads += page.uploads.len() as u64;
        if !page.is_truncated || page.next_key_marker.is_none() {
            break;
        }
        key_marker = page.next_key_marker;
        id_marker = page.next_upload_id_marker;
    }
    Ok(doc(
        "BucketStat",
        &BucketStat {
            storage,
            object_count: count,
            multipart_upload_count: uploads,
            live_channel_count: 0,
            last_modified_time: unix_secs(last_ms),
            standard_storage: storage,
            standard_object_count: count,
        },
    )?)
}

/// GetBucketAcl / GetObjectACL: OSS shows an ACL as one canned name
/// (`acl::oss_name`): `private`, `public-read`, `public-read-write`, or
/// `default` for an object without an ACL of its own. The version id
/// header, when the view has one, leaves as `x-oss-version-id`
/// (`wire::finish`).
pub fn render_acl(view: AclView) -> Result<Response, S3Error> {
    let acl = view.acl();
    let grant = oss_name(acl.as_ref(), view.object);
    let mut resp = doc(
        "AccessControlPolicy",
        &AccessControlPolicy {
            owner: view.owner,
            acl: AccessControlList { grant },
        },
    )?;
    if let Some(vid) = &view.version_id {
        set_header(resp.headers_mut(), "x-amz-version-id", vid);
    }
    Ok(resp)
}

fn entry(v: &ObjectVersion, enc: &Enc, owners: Option<&OwnerNames>) -> ObjectEntry {
    ObjectEntry {
        key: enc.s(&v.key),
        last_modified: iso8601_s(v.last_modified_ms),
        etag: quote_etag(&v.etag),
        kind: object_type(v),
        size: v.size,
        storage_class: STANDARD,
        owner: owners.map(|o| o.get(&v.owner)),
    }
}

/// ListObjects (v1) as oss2's `ObjectIterator` pages it: `marker` /
/// `NextMarker`, keys url-encoded when `encoding-type=url` (oss2 always
/// asks for it).
pub async fn list_objects_v1(ctx: &Ctx) -> ApiResult {
    let V1Listing { list, marker, page } = fetch_v1(ctx).await?;
    let owners = ctx
        .owner_names(page.objects.iter().map(|v| v.owner.clone()).collect())
        .await?;
    let enc = list.enc;
    Ok(doc(
        "ListBucketResult",
        &ListBucketResult {
            name: ctx.bucket().to_string(),
            prefix: enc.s(&list.prefix),
            marker: Some(enc.s(marker.as_deref().unwrap_or_default())),
            max_keys: list.max,
            delimiter: enc.s(list.delimiter.as_deref().unwrap_or_default()),
            encoding_type: enc.name(),
            is_truncated: page.is_truncated,
            next_marker: page
                .is_truncated
                .then(|| enc.opt(page.next_marker.as_deref()))
                .flatten(),
            contents: page
                .objects
                .iter()
                .map(|v| entry(v, &enc, Some(&owners)))
                .collect(),
            common_prefixes: enc.prefixes(&page.common_prefixes),
            ..Default::default()
        },
    )?)
}

/// ListObjectsV2 (`list-type=2`), as the v2 SDK's paginator calls it.
pub async fn list_objects_v2(ctx: &Ctx) -> ApiResult {
    let mut q = V2Query::parse(&ctx.query)?;
    // OSS treats an empty continuation-token as absent.
    q.token = non_empty(q.token.as_deref());
    let page = q.fetch(ctx).await?;
    let V2Query {
        list,
        token,
        start_after,
        fetch_owner,
    } = q;
    let enc = list.enc;
    let owners = match fetch_owner {
        true => Some(
            ctx.owner_names(page.objects.iter().map(|v| v.owner.clone()).collect())
                .await?,
        ),
        false => None,
    };
    let contents: Vec<ObjectEntry> = page
        .objects
        .iter()
        .map(|v| entry(v, &enc, owners.as_ref()))
        .collect();
    let common_prefixes = enc.prefixes(&page.common_prefixes);
    Ok(doc(
        "ListBucketResult",
        &ListBucketResult {
            name: ctx.bucket().to_string(),
            prefix: enc.s(&list.prefix),
            continuation_token: token,
            start_after: enc.opt(start_after.as_deref()),
            max_keys: list.max,
            delimiter: enc.s(list.delimiter.as_deref().unwrap_or_default()),
            encoding_type: enc.name(),
            is_truncated: page.is_truncated,
            next_continuation_token: page
                .is_truncated
                .then(|| page.next_marker.as_deref().map(encode_token))
                .flatten(),
            key_count: Some(contents.len() + common_prefixes.len()),
            contents,
            common_prefixes,
            ..Default::default()
        },
    )?)
}

pub async fn list_versions(ctx: &Ctx) -> ApiResult {
    let q = VersionsQuery::parse(&ctx.query)?;
    let page = q.fetch(ctx).await?;
    let VersionsQuery {
        list,
        key_marker,
        version_id_marker,
    } = q;
    let enc = list.enc;
    let owners = ctx
        .owner_names(page.versions.iter().map(|v| v.owner.clone()).collect())
        .await?;
    let (markers, versions): (Vec<_>, Vec<_>) =
        page.versions.iter().partition(|v| v.is_delete_marker);
    Ok(doc(
        "ListVersionsResult",
        &ListVersionsResult {
            name: ctx.bucket().to_string(),
            prefix: enc.s(&list.prefix),
            key_marker: enc.s(key_marker.as_deref().unwrap_or_default()),
            version_id_marker: version_id_marker.unwrap_or_default(),
            next_key_marker: page
                .is_truncated
                .then(|| enc.opt(page.next_key_marker.as_deref()))
                .flatten(),
            next_version_id_marker: page
                .is_truncated
                .then_some(page.next_version_id_marker.clone())
                .flatten(),
            max_keys: list.max,
            delimiter: enc.s(list.delimiter.as_deref().unwrap_or_default()),
            encoding_type: enc.name(),
            is_truncated: page.is_truncated,
            versions: versions
                .iter()
                .map(|v| VersionEntry {
                    key: enc.s(&v.key),
                    version_id: v.version_id.clone(),
                    is_latest: v.is_latest,
                    last_modified: iso8601_s(v.last_modified_ms),
                    etag: quote_etag(&v.etag),
                    kind: object_type(v),
                    size: v.size,
                    storage_class: STANDARD,
                    owner: owners.get(&v.owner),
                })
                .collect(),
            delete_markers: markers
                .iter()
                .map(|v| DeleteMarkerEntry {
                    key: enc.s(&v.key),
                    version_id: v.version_id.clone(),
                    is_latest: v.is_latest,
                    last_modified: iso8601_s(v.last_modified_ms),
                    owner: owners.get(&v.owner),
                })
                .collect(),
            common_prefixes: enc.prefixes(&page.common_prefixes),
        },
    )?)
}

pub async fn list_parts(ctx: &Ctx, upload_id: &str) -> ApiResult {
    let q = PartsQuery::parse(&ctx.query)?;
    let enc = Enc(parse_encoding(&ctx.query)?);
    let PartsListing {
        query: PartsQuery { max_parts, marker },
        upload,
        page,
        ..
    } = q.fetch(ctx, upload_id).await?;
    let last = page.parts.last().map(|p| p.number).unwrap_or(marker);
    let next = if page.is_truncated {
        page.next_part_number_marker.unwrap_or(last)
    } else {
        last
    };
    Ok(doc(
        "ListPartsResult",
        &ListPartsResult {
            bucket: upload.bucket,
            encoding_type: enc.name(),
            key: enc.s(&upload.key),
            upload_id: upload.upload_id,
            storage_class: STANDARD,
            part_number_marker: marker,
            next_part_number_marker: next,
            max_parts,
            is_truncated: page.is_truncated,
            parts: page
                .parts
                .iter()
                .map(|p| PartEntry {
                    part_number: p.number,
                    last_modified: iso8601_s(p.last_modified_ms),
                    etag: quote_etag(&p.etag),
                    hash_crc64ecma: p.checksums.crc64ecma,
                    size: p.size,
                })
                .collect(),
        },
    )?)
}

/// The DeleteMultipleObjects answer for OSS: keys URL-encoded when the
/// request asked for `encoding-type=url`.
pub fn delete_result(ctx: &Ctx, outcome: DeleteOutcome) -> Result<Response, S3Error> {
    let DeleteOutcome { deleted, errors } = outcome;
    let enc = Enc(parse_encoding(&ctx.query)?);
    doc(
        "DeleteResult",
        &DeleteResult {
            encoding_type: enc.name(),
            deleted: deleted
                .into_iter()
                .map(|mut d| {
                    d.key = enc.s(&d.key);
                    d
                })
                .collect(),
            errors: errors
                .into_iter()
                .map(|mut e| {
                    e.key = enc.s(&e.key);
                    e
                })
                .collect(),
        },
    )
}

pub(crate) fn list_uploads(ctx: &Ctx, listing: UploadsListing) -> Result<Response, S3Error> {
    let UploadsListing {
        list,
        key_marker,
        upload_id_marker,
        page,
        ..
    } = listing;
    let Listing {
        max: max_uploads,
        enc,
        prefix,
        delimiter,
    } = list;
    let (next_key, next_id) = if page.is_truncated {
        (
            enc.s(page.next_key_marker.as_deref().unwrap_or_default()),
            page.next_upload_id_marker.clone().unwrap_or_default(),
        )
    } else {
        (String::new(), String::new())
    };
    doc(
        "ListMultipartUploadsResult",
        &ListMultipartUploadsResult {
            bucket: ctx.bucket().to_string(),
            key_marker: enc.s(key_marker.as_deref().unwrap_or_default()),
            upload_id_marker: upload_id_marker.unwrap_or_default(),
            next_key_marker: next_key,
            next_upload_id_marker: next_id,
            delimiter: enc.s(delimiter.as_deref().unwrap_or_default()),
            prefix: enc.s(&prefix),
            max_uploads,
            is_truncated: page.is_truncated,
            encoding_type: enc.name(),
            uploads: page
                .uploads
                .iter()
                .map(|u| UploadEntry {
                    key: enc.s(&u.key),
                    upload_id: u.upload_id.clone(),
                    storage_class: STANDARD,
                    initiated: iso8601_s(u.initiated_ms),
                })
                .collect(),
            common_prefixes: enc.prefixes(&page.common_prefixes),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use godwit_common::types::{Checksums, ObjectData, PartSummary};

    fn version(parts: usize, crc: Option<u64>) -> ObjectVersion {
        ObjectVersion {
            bucket: "b".into(),
            key: "dir/a b+c.txt".into(),
            version_id: "null".into(),
            is_delete_marker: false,
            is_latest: true,
            last_modified_ms: 1_796_011_200_123,
            size: 3,
            etag: "acbd18db4cc2f85cedef654fccc4a4d8".into(),
            headers: Default::default(),
            user_meta: Default::default(),
            checksums: Checksums {
                crc64ecma: crc,
                ..Default::default()
            },
            data: ObjectData::Inline(vec![]),
            parts: (1..=parts as u32)
                .map(|number| PartSummary {
                    number,
                    size: 1,
                    etag: "p".into(),
                    checksums: Default::default(),
                    sse_nonce: vec![],
                })
                .collect(),
            tags: Default::default(),
            owner: "AK".into(),
            acl: None,
            replication_status: None,
            replica_of: None,
            oss_type: None,
            lock: Default::default(),
            sse: None,
        }
    }

    #[test]
    fn object_headers_name_type_class_and_whole_crc() {
        let mut out = HeaderMap::new();
        let whole = ObjectFacts::Read {
            multipart: false,
            symlink: false,
            crc64: Some(11_051_210_869_376_104_954),
            appendable: None,
        };
        object_headers(&mut out, whole);
        assert_eq!(out["x-oss-object-type"], "Normal");
        assert_eq!(out["x-oss-storage-class"], "Standard");
        assert_eq!(out["x-oss-hash-crc64ecma"], "11051210869376104954");
        let mut out = HeaderMap::new();
        let ranged = ObjectFacts::Read {
            multipart: true,
            symlink: false,
            crc64: None,
            appendable: None,
        };
        object_headers(&mut out, ranged);
        assert_eq!(out["x-oss-object-type"], "Multipart");
        assert!(out.get("x-oss-hash-crc64ecma").is_none());
        let mut out = HeaderMap::new();
        let linked = ObjectFacts::Read {
            multipart: true,
            symlink: true,
            crc64: None,
            appendable: Some(3),
        };
        object_headers(&mut out, linked);
        assert_eq!(out["x-oss-object-type"], "Symlink");
        assert!(out.get(NEXT_APPEND_POSITION).is_none());
        let mut out = HeaderMap::new();
        let appendable = ObjectFacts::Read {
            multipart: false,
            symlink: false,
            crc64: Some(7),
            appendable: Some(42),
        };
        object_headers(&mut out, appendable);
        assert_eq!(out["x-oss-object-type"], "Appendable");
        assert_eq!(out[NEXT_APPEND_POSITION], "42");
        let mut out = HeaderMap::new();
        object_headers(&mut out, ObjectFacts::Written { crc64: Some(7) });
        assert_eq!(out["x-oss-hash-crc64ecma"], "7");
        assert!(out.get("x-oss-object-type").is_none());
    }

    #[test]
    fn listed_entry_is_what_oss2_parses() {
        let xml = render(
            "ListBucketResult",
            &ListBucketResult {
                name: "b".into(),
                encoding_type: Some("url".into()),
                contents: vec![entry(
                    &version(0, None),
                    &Enc(true),
                    Some(&OwnerNames::default()),
                )],
                ..Default::default()
            },
        )
        .unwrap();
        for needle in [
            "<Key>dir/a%20b%2Bc.txt</Key>",
            "<LastModified>2026-11-30T04:00:00.000Z</LastModified>",
            "<ETag>\"acbd18db4cc2f85cedef654fccc4a4d8\"</ETag>",
            "<Type>Normal</Type>",
            "<Size>3</Size>",
            "<StorageClass>Standard</StorageClass>",
            "<Owner><ID>AK</ID><DisplayName>AK</DisplayName></Owner>",
            "<EncodingType>url</EncodingType>",
            "<IsTruncated>false</IsTruncated>",
        ] {
            assert!(xml.contains(needle), "{needle} in {xml}");
        }
        assert!(!xml.contains("xmlns"));
    }

    mod acl {
        use godwit_common::access::{Acl, Grant, Grantee, Group, Permission};
        use http::{HeaderName, HeaderValue};

        use super::super::*;
        use crate::acl::{
            expand, from_oss_headers, from_s3_headers, AclRequest, AclView, Canned, GranteeRef,
        };

        const OWNER: &str = "0022012000000000000000000000000000000000000000000000000000000001";

        async fn body_of(resp: Response) -> String {
            let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
                .await
                .unwrap();
            String::from_utf8(bytes.to_vec()).unwrap()
        }

        /// The stored ACL an OSS canned value becomes (its grantees are
        /// the owner, already a canonical id, and groups: nothing to look
        /// up).
        fn stored(canned: Canned) -> Acl {
            let grants = expand(&AclRequest::canned(canned), OWNER, OWNER)
                .into_iter()
                .map(|(who, permission)| Grant {
                    grantee: match who {
                        GranteeRef::Id(id) => Grantee::Account(id),
                        GranteeRef::Group(g) => Grantee::Group(g),
                        GranteeRef::Email(_) => unreachable!(),
                    },
                    permission,
                })
                .collect();
            Acl { grants }
        }

        fn view(acl: Option<Acl>, object: bool, version_id: Option<&str>) -> AclView {
            let mut v = AclView::owner_full_control(
                Owner::new(OWNER, "user_example"),
                object,
                version_id.map(str::to_string),
            );
            v.own_acl = acl.is_some();
            v.grants = crate::acl::view_grants(&acl.unwrap_or_default(), |_| None);
            v
        }

        /// GetBucketAcl / GetObjectACL answer what Put*Acl set, as OSS
        /// documents the document: one `Grant` naming the canned ACL.
        #[tokio::test]
        async fn oss_acl_document_names_the_canned_acl_put() {
            let cases: &[(Option<Canned>, bool, &str)] = &[
                (Some(Canned::Private), false, "private"),
                (Some(Canned::PublicRead), false, "public-read"),
                (Some(Canned::PublicReadWrite), false, "public-read-write"),
                (Some(Canned::Private), true, "private"),
                (Some(Canned::PublicRead), true, "public-read"),
                (Some(Canned::PublicReadWrite), true, "public-read-write"),
                (None, true, "default"),
                (None, false, "private"),
            ];
            for (canned, object, want) in cases {
                let v = view(canned.map(stored), *object, None);
                let xml = body_of(render_acl(v).unwrap()).await;
                assert_eq!(
                    xml,
                    format!(
                        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<AccessControlPolicy>\
                         <Owner><ID>{OWNER}</ID><DisplayName>user_example</DisplayName></Owner>\
                         <AccessControlList><Grant>{want}</Grant></AccessControlList>\
                         </AccessControlPolicy>"
                    ),
                    "{canned:?} object={object}"
                );
            }
        }

        #[tokio::test]
        async fn oss_acl_of_full_control_to_everyone_is_public_read_write() {
            let acl = Acl {
                grants: vec![Grant {
                    grantee: Grantee::Group(Group::AllUsers),
                    permission: Permission::FullControl,
                }],
            };
            let xml = body_of(render_acl(view(Some(acl), false, None)).unwrap()).await;
            assert!(xml.contains("<Grant>public-read-write</Grant>"), "{xml}");
        }

        #[tokio::test]
        async fn oss_object_acl_sends_the_version_id_as_oss_names_it() {
            let resp = render_acl(view(None, true, Some("v1"))).unwrap();
            let resp = crate::oss::wire::finish(resp, "R").await;
            assert_eq!(resp.headers()["x-oss-version-id"], "v1");
            let resp = render_acl(view(None, true, None)).unwrap();
            assert!(resp.headers().get("x-amz-version-id").is_none());
        }

        /// An OSS request's ACL header is read once, under its OSS name:
        /// `wire` gives it no `x-amz-acl` alias for the S3 reader to see
        /// as well, and the OSS reader ignores `x-amz-acl`.
        #[test]
        fn oss_acl_headers_are_read_once_under_their_oss_name() {
            for (name, object) in [("x-oss-object-acl", true), ("x-oss-acl", false)] {
                let mut h = HeaderMap::new();
                h.insert(
                    HeaderName::from_static(name),
                    HeaderValue::from_static("public-read"),
                );
                crate::oss::wire::alias_request_headers(&mut h);
                assert!(h.get("x-amz-acl").is_none(), "{name} was aliased");
                assert_eq!(from_s3_headers(&h).unwrap(), None, "{name}");
                assert_eq!(
                    from_oss_headers(&h, object).unwrap(),
                    Some(AclRequest::canned(Canned::PublicRead)),
                    "{name}"
                );
                // The other resource's header is not this one's.
                assert_eq!(from_oss_headers(&h, !object).unwrap(), None, "{name}");
            }
            let mut h = HeaderMap::new();
            h.insert("x-amz-acl", HeaderValue::from_static("public-read"));
            assert_eq!(from_oss_headers(&h, true).unwrap(), None);
            assert_eq!(from_oss_headers(&h, false).unwrap(), None);
        }
    }
}
