//! GetObjectAttributes (`GET /bucket/key?attributes`): what HeadObject
//! and ListParts would tell about an object, as one document, of the
//! attributes named in `x-amz-object-attributes`
//! (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObjectAttributes.html).
//!
//! Parts come from what meta keeps of a completed multipart object
//! (`ObjectVersion::parts`: each part's number as uploaded, size, ETag
//! and checksums), paged by `x-amz-part-number-marker` and
//! `x-amz-max-parts` over those numbers. AWS lists `<Part>` elements only
//! for objects uploaded with additional checksums; Godwit lists them for
//! every multipart object (it always has their sizes), with a part's
//! checksums when it has them (docs/compatibility.md).

use godwit_common::types::{ObjectVersion, PartSummary, NULL_VERSION_ID};
use http::{HeaderMap, StatusCode};

use super::conditions::Conditions;
use super::list::MAX_KEYS;
use super::object::delete_marker_error;
use super::{set_header, version_header, xml_response, ApiError, ApiResult, Ctx};
use crate::error::S3Error;
use crate::xml::responses::{
    AttributesChecksum, AttributesPart, AttributesParts, ChecksumElems,
    GetObjectAttributesResponse, Ns,
};
use crate::xml::{http_date, quote_etag, render};

/// The attributes a request asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wanted {
    pub etag: bool,
    pub checksum: bool,
    pub object_parts: bool,
    pub storage_class: bool,
    pub object_size: bool,
}

impl Wanted {
    /// `x-amz-object-attributes`: one or more of `ETag`, `Checksum`,
    /// `ObjectParts`, `StorageClass`, `ObjectSize` (case as written),
    /// comma separated, in one header line or several (boto3 sends one
    /// line). None named is InvalidRequest, an unknown name
    /// InvalidArgument, as S3 answers them.
    pub fn from_headers(headers: &HeaderMap) -> Result<Self, S3Error> {
        let lines: Vec<String> = headers
            .get_all("x-amz-object-attributes")
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect();
        let mut wanted = Wanted::default();
        let mut any = false;
        for name in lines.iter().flat_map(|l| l.split(',')).map(str::trim) {
            if name.is_empty() {
                continue;
            }
            any = true;
            match name {
                "ETag" => wanted.etag = true,
                "Checksum" => wanted.checksum = true,
                "ObjectParts" => wanted.object_parts = true,
                "StorageClass" => wanted.storage_class = true,
                "ObjectSize" => wanted.object_size = true,
                _ => {
                    return Err(S3Error::InvalidArgument(
                        "Invalid attribute name specified.".into(),
                    ))
                }
            }
        }
        if !any {
            return Err(S3Error::InvalidRequest(
                "The x-amz-object-attributes header specifying the attributes to be retrieved \
                 is either missing or empty"
                    .into(),
            ));
        }
        Ok(wanted)
    }
}

/// The page of parts asked for: `x-amz-max-parts` (a non-negative
/// integer, at most 1000, 1000 by default) and `x-amz-part-number-marker`
/// (list parts numbered above it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartsPage {
    pub max_parts: usize,
    pub marker: u32,
}

impl PartsPage {
    pub fn from_headers(headers: &HeaderMap) -> Result<Self, S3Error> {
        let text = |name: &str| {
            headers
                .get(name)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let max_parts = match text("x-amz-max-parts") {
            None => MAX_KEYS,
            Some(raw) => raw
                .parse::<i64>()
                .ok()
                .filter(|n| *n >= 0)
                .map(|n| (n as usize).min(MAX_KEYS))
                .ok_or_else(|| {
                    S3Error::InvalidArgument(
                        "Provided max-parts not an integer or within integer range".into(),
                    )
                })?,
        };
        let marker = match text("x-amz-part-number-marker") {
            None => 0,
            Some(raw) => raw.parse::<u32>().map_err(|_| {
                S3Error::InvalidArgument(
                    "Provided part-number-marker not an integer or within integer range".into(),
                )
            })?,
        };
        Ok(PartsPage { max_parts, marker })
    }
}

pub async fn get_object_attributes(ctx: &Ctx) -> ApiResult {
    let wanted = Wanted::from_headers(ctx.headers())?;
    let page = PartsPage::from_headers(ctx.headers())?;
    let version_id = ctx.query.get("versionId");
    let (obj, has_versioning) = futures::join!(
        ctx.gw.meta.get_object(ctx.bucket(), ctx.key(), version_id),
        ctx.gw.buckets.has_versioning(ctx.bucket()),
    );
    let v = obj?.version;
    // A delete marker: 404 NoSuchKey on top, 405 by its version id, with
    // `x-amz-delete-marker` (as GetObject and HeadObject answer).
    if v.is_delete_marker {
        return Err(delete_marker_error(&v, version_id.is_some()));
    }
    let show_version_id = has_versioning || v.version_id != NULL_VERSION_ID;
    // An SSE-C object's attributes need its key, as its HEAD does.
    super::sse::key_for_read(ctx, v.sse.as_ref(), super::sse::CUSTOMER)?;
    match Conditions::from_headers(ctx.headers(), "").evaluate(&v.etag, v.last_modified_ms, false) {
        Ok(()) => {}
        Err(S3Error::NotModified) => {
            let mut headers = HeaderMap::new();
            set_header(&mut headers, "etag", &quote_etag(&v.etag));
            set_header(
                &mut headers,
                "last-modified",
                &http_date(v.last_modified_ms),
            );
            return Err(ApiError {
                err: S3Error::NotModified,
                headers,
            });
        }
        Err(e) => return Err(e.into()),
    }
    let doc = attributes(&v, wanted, page);
    let mut resp = xml_response(StatusCode::OK, render("GetObjectAttributesResponse", &doc)?);
    let out = resp.headers_mut();
    set_header(out, "last-modified", &http_date(v.last_modified_ms));
    version_header(out, &v.version_id, show_version_id);
    Ok(resp)
}

/// The document for `v`: only the attributes asked for, and of those
/// only what the object has (no `Checksum` without stored checksums, no
/// `ObjectParts` for an object not uploaded in parts, as S3 answers).
/// The ETag is bare, unlike everywhere else S3 shows one.
pub fn attributes(
    v: &ObjectVersion,
    wanted: Wanted,
    page: PartsPage,
) -> GetObjectAttributesResponse {
    GetObjectAttributesResponse {
        xmlns: Ns::default(),
        etag: wanted.etag.then(|| v.etag.clone()),
        checksum: wanted
            .checksum
            .then(|| v.checksums.effective_type())
            .flatten()
            .map(|t| AttributesChecksum {
                checksums: ChecksumElems::from(&v.checksums),
                checksum_type: t.as_str(),
            }),
        object_parts: (wanted.object_parts && !v.parts.is_empty()).then(|| parts(&v.parts, page)),
        storage_class: wanted.storage_class.then_some("STANDARD"),
        object_size: wanted.object_size.then_some(v.size),
    }
}

/// One page of `parts`: those numbered above the marker, at most
/// `max_parts` of them. `NextPartNumberMarker` is the page's last part.
/// A page of `max_parts` 0 never says it is truncated: its marker could
/// not move, and a client following it would ask forever.
fn parts(parts: &[PartSummary], page: PartsPage) -> AttributesParts {
    let after: Vec<&PartSummary> = parts.iter().filter(|p| p.number > page.marker).collect();
    let shown = &after[..after.len().min(page.max_parts)];
    AttributesParts {
        is_truncated: page.max_parts > 0 && shown.len() < after.len(),
        max_parts: page.max_parts,
        next_part_number_marker: shown.last().map(|p| p.number),
        part_number_marker: page.marker,
        parts: shown
            .iter()
            .map(|p| AttributesPart {
                checksums: ChecksumElems::from(&p.checksums),
                part_number: p.number,
                size: p.size,
            })
            .collect(),
        parts_count: parts.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use godwit_common::types::{Checksums, ObjectData};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    fn version(parts: &[(u32, u64)], checksums: Checksums) -> ObjectVersion {
        ObjectVersion {
            bucket: "b".into(),
            key: "k".into(),
            version_id: "null".into(),
            is_delete_marker: false,
            is_latest: true,
            last_modified_ms: 0,
            size: parts.iter().map(|p| p.1).sum::<u64>().max(3),
            etag: if parts.is_empty() {
                "acbd18db4cc2f85cedef654fccc4a4d8".into()
            } else {
                format!("0123456789abcdef0123456789abcdef-{}", parts.len())
            },
            headers: Default::default(),
            user_meta: Default::default(),
            checksums,
            data: ObjectData::Inline(vec![]),
            parts: parts
                .iter()
                .map(|&(number, size)| PartSummary {
                    number,
                    size,
                    etag: "p".into(),
                    checksums: Checksums {
                        crc32: Some(format!("crc{number}")),
                        ..Default::default()
                    },
                    sse_nonce: vec![],
                })
                .collect(),
            tags: Default::default(),
            owner: String::new(),
            acl: None,
            replication_status: None,
            replica_of: None,
            oss_type: None,
            lock: Default::default(),
            sse: None,
        }
    }

    const ALL: Wanted = Wanted {
        etag: true,
        checksum: true,
        object_parts: true,
        storage_class: true,
        object_size: true,
    };

    #[test]
    fn attribute_names_are_s3s_five_and_at_least_one() {
        let w = Wanted::from_headers(&headers(&[("x-amz-object-attributes", "ETag, ObjectSize")]))
            .unwrap();
        assert_eq!(
            w,
            Wanted {
                etag: true,
                object_size: true,
                ..Default::default()
            }
        );
        let w = Wanted::from_headers(&headers(&[
            ("x-amz-object-attributes", "ETag,Checksum,ObjectParts"),
            ("x-amz-object-attributes", "StorageClass,ObjectSize"),
        ]))
        .unwrap();
        assert_eq!(w, ALL);
        for missing in [
            &[][..],
            &[("x-amz-object-attributes", "")],
            &[("x-amz-object-attributes", " , ")],
        ] {
            assert!(
                matches!(Wanted::from_headers(&headers(missing)), Err(S3Error::InvalidRequest(m)) if m.contains("x-amz-object-attributes")),
                "{missing:?}"
            );
        }
        for bad in ["etag", "ETag,Bogus", "Size"] {
            assert!(
                matches!(
                    Wanted::from_headers(&headers(&[("x-amz-object-attributes", bad)])),
                    Err(S3Error::InvalidArgument(m)) if m == "Invalid attribute name specified."
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn part_page_headers_default_cap_and_refuse() {
        assert_eq!(
            PartsPage::from_headers(&HeaderMap::new()).unwrap(),
            PartsPage {
                max_parts: 1000,
                marker: 0
            }
        );
        let p = PartsPage::from_headers(&headers(&[
            ("x-amz-max-parts", "5000"),
            ("x-amz-part-number-marker", "7"),
        ]))
        .unwrap();
        assert_eq!(
            p,
            PartsPage {
                max_parts: 1000,
                marker: 7
            }
        );
        for (name, bad) in [
            ("x-amz-max-parts", "-1"),
            ("x-amz-max-parts", "x"),
            ("x-amz-part-number-marker", "-1"),
            ("x-amz-part-number-marker", "one"),
        ] {
            assert!(
                matches!(
                    PartsPage::from_headers(&headers(&[(name, bad)])),
                    Err(S3Error::InvalidArgument(_))
                ),
                "{name}: {bad}"
            );
        }
    }

    #[test]
    fn simple_object_has_no_parts_and_a_bare_etag() {
        let v = version(
            &[],
            Checksums {
                crc32: Some("jHNlIQ==".into()),
                ..Default::default()
            },
        );
        let doc = attributes(
            &v,
            ALL,
            PartsPage {
                max_parts: 1000,
                marker: 0,
            },
        );
        let xml = render("GetObjectAttributesResponse", &doc).unwrap();
        assert_eq!(
            xml,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <GetObjectAttributesResponse xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
             <ETag>acbd18db4cc2f85cedef654fccc4a4d8</ETag>\
             <Checksum><ChecksumCRC32>jHNlIQ==</ChecksumCRC32><ChecksumType>FULL_OBJECT</ChecksumType></Checksum>\
             <StorageClass>STANDARD</StorageClass><ObjectSize>3</ObjectSize>\
             </GetObjectAttributesResponse>"
        );
        // Without stored checksums there is no Checksum element.
        let v = version(&[], Checksums::default());
        let doc = attributes(
            &v,
            ALL,
            PartsPage {
                max_parts: 1000,
                marker: 0,
            },
        );
        assert!(doc.checksum.is_none());
        // Only what was asked for.
        let doc = attributes(
            &v,
            Wanted {
                object_size: true,
                ..Default::default()
            },
            PartsPage {
                max_parts: 1000,
                marker: 0,
            },
        );
        let xml = render("GetObjectAttributesResponse", &doc).unwrap();
        assert!(
            xml.ends_with("<ObjectSize>3</ObjectSize></GetObjectAttributesResponse>")
                && !xml.contains("ETag"),
            "{xml}"
        );
    }

    #[test]
    fn multipart_parts_page_by_number_as_uploaded() {
        // Completed from parts uploaded as 1, 3 and 7.
        let v = version(
            &[(1, 10), (3, 10), (7, 5)],
            Checksums {
                crc32: Some("AAAAAA==-3".into()),
                ..Default::default()
            },
        );
        let doc = attributes(
            &v,
            ALL,
            PartsPage {
                max_parts: 2,
                marker: 0,
            },
        );
        assert_eq!(doc.checksum.as_ref().unwrap().checksum_type, "COMPOSITE");
        let parts = doc.object_parts.as_ref().unwrap();
        assert_eq!(parts.parts_count, 3);
        assert!(parts.is_truncated);
        assert_eq!(parts.next_part_number_marker, Some(3));
        assert_eq!(
            parts
                .parts
                .iter()
                .map(|p| (p.part_number, p.size))
                .collect::<Vec<_>>(),
            [(1, 10), (3, 10)]
        );
        let xml = render("GetObjectAttributesResponse", &doc).unwrap();
        assert!(
            xml.contains(
                "<ObjectParts><IsTruncated>true</IsTruncated><MaxParts>2</MaxParts>\
                 <NextPartNumberMarker>3</NextPartNumberMarker><PartNumberMarker>0</PartNumberMarker>\
                 <Part><ChecksumCRC32>crc1</ChecksumCRC32><PartNumber>1</PartNumber><Size>10</Size></Part>\
                 <Part><ChecksumCRC32>crc3</ChecksumCRC32><PartNumber>3</PartNumber><Size>10</Size></Part>\
                 <PartsCount>3</PartsCount></ObjectParts>"
            ),
            "{xml}"
        );

        let doc = attributes(
            &v,
            ALL,
            PartsPage {
                max_parts: 2,
                marker: 3,
            },
        );
        let parts = doc.object_parts.unwrap();
        assert!(!parts.is_truncated);
        assert_eq!(parts.part_number_marker, 3);
        assert_eq!(parts.next_part_number_marker, Some(7));
        assert_eq!(parts.parts.len(), 1);
        assert_eq!((parts.parts[0].part_number, parts.parts[0].size), (7, 5));

        // Past the last part: an empty page, not truncated.
        let doc = attributes(
            &v,
            ALL,
            PartsPage {
                max_parts: 2,
                marker: 7,
            },
        );
        let parts = doc.object_parts.unwrap();
        assert!(parts.parts.is_empty() && !parts.is_truncated);
        assert_eq!(parts.next_part_number_marker, None);
        // max-parts 0 shows no part, and no next page to loop on.
        let doc = attributes(
            &v,
            ALL,
            PartsPage {
                max_parts: 0,
                marker: 0,
            },
        );
        let parts = doc.object_parts.unwrap();
        assert!(parts.parts.is_empty() && !parts.is_truncated);
        assert_eq!(parts.parts_count, 3);
    }
}
