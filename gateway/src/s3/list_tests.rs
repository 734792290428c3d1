//! The XML of S3's listing results.

use super::*;
use godwit_common::types::{Checksums, ObjectData};

fn obj(key: &str, version_id: &str, latest: bool, marker: bool) -> ObjectVersion {
    ObjectVersion {
        bucket: "bkt".into(),
        key: key.into(),
        version_id: version_id.into(),
        is_delete_marker: marker,
        is_latest: latest,
        last_modified_ms: 1_796_011_200_000,
        size: if marker { 0 } else { 3 },
        etag: "acbd18db4cc2f85cedef654fccc4a4d8".into(),
        headers: Default::default(),
        user_meta: Default::default(),
        checksums: Checksums {
            crc32: (!marker).then(|| "jHNlIQ==".into()),
            ..Default::default()
        },
        data: ObjectData::Inline(vec![]),
        parts: vec![],
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
fn v2_result_xml_matches_s3() {
    let page = ListObjectsPage {
        objects: vec![obj("a b+c", "null", true, false)],
        common_prefixes: vec!["dir/".into()],
        is_truncated: true,
        next_marker: Some("dir/".into()),
    };
    let doc = v2_result(
        "bkt",
        "",
        Some("/".into()),
        None,
        None,
        2,
        None,
        &Enc(true),
        page,
    );
    let xml = render("ListBucketResult", &doc).unwrap();
    let expected = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
         <Name>bkt</Name><Prefix></Prefix>\
         <NextContinuationToken>{}</NextContinuationToken>\
         <KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><Delimiter>/</Delimiter>\
         <EncodingType>url</EncodingType><IsTruncated>true</IsTruncated>\
         <Contents><Key>a%20b%2Bc</Key><LastModified>2026-11-30T04:00:00.000Z</LastModified>\
         <ETag>\"acbd18db4cc2f85cedef654fccc4a4d8\"</ETag><ChecksumAlgorithm>CRC32</ChecksumAlgorithm>\
         <ChecksumType>FULL_OBJECT</ChecksumType><Size>3</Size><StorageClass>STANDARD</StorageClass></Contents>\
         <CommonPrefixes><Prefix>dir/</Prefix></CommonPrefixes>\
         </ListBucketResult>",
        encode_token("dir/")
    );
    assert_eq!(normalize(&xml), normalize(&expected));
}

#[test]
fn v2_result_echoes_token_start_after_and_owner() {
    let page = ListObjectsPage {
        objects: vec![obj("k", "null", true, false)],
        ..Default::default()
    };
    let doc = v2_result(
        "bkt",
        "p",
        None,
        Some("tok"),
        Some("s".into()),
        1000,
        Some(&OwnerNames::default()),
        &Enc(false),
        page,
    );
    let xml = render("ListBucketResult", &doc).unwrap();
    assert!(
        xml.contains("<ContinuationToken>tok</ContinuationToken>"),
        "{xml}"
    );
    assert!(xml.contains("<StartAfter>s</StartAfter>"), "{xml}");
    assert!(
        xml.contains("<Owner><ID>AK</ID><DisplayName>AK</DisplayName></Owner>"),
        "{xml}"
    );
    assert!(xml.contains("<IsTruncated>false</IsTruncated>"), "{xml}");
    assert!(!xml.contains("NextContinuationToken"), "{xml}");
    assert!(!xml.contains("EncodingType"), "{xml}");
    assert!(xml.contains("<KeyCount>1</KeyCount>"), "{xml}");
}

#[test]
fn versions_result_interleaves_delete_markers_in_listing_order() {
    let page = ListVersionsPage {
        versions: vec![
            obj("a", "a3", true, false),
            obj("a", "a2", false, true),
            obj("a", "a1", false, false),
            obj("k", "v2", true, true),
            obj("k", "v1", false, false),
        ],
        common_prefixes: vec!["p/".into()],
        is_truncated: true,
        next_key_marker: Some("k".into()),
        next_version_id_marker: Some("v1".into()),
    };
    let doc = versions_result(
        "bkt",
        "",
        None,
        None,
        None,
        5,
        &Enc(false),
        &OwnerNames::default(),
        page,
    );
    let xml = render("ListVersionsResult", &doc).unwrap();
    let version = |key: &str, id: &str, latest: bool| {
        format!(
            "<Version><Key>{key}</Key><VersionId>{id}</VersionId><IsLatest>{latest}</IsLatest>\
             <LastModified>2026-11-30T04:00:00.000Z</LastModified><ETag>\"acbd18db4cc2f85cedef654fccc4a4d8\"</ETag>\
             <ChecksumAlgorithm>CRC32</ChecksumAlgorithm><ChecksumType>FULL_OBJECT</ChecksumType><Size>3</Size><StorageClass>STANDARD</StorageClass>\
             <Owner><ID>AK</ID><DisplayName>AK</DisplayName></Owner></Version>"
        )
    };
    let marker = |key: &str, id: &str, latest: bool| {
        format!(
            "<DeleteMarker><Key>{key}</Key><VersionId>{id}</VersionId><IsLatest>{latest}</IsLatest>\
             <LastModified>2026-11-30T04:00:00.000Z</LastModified>\
             <Owner><ID>AK</ID><DisplayName>AK</DisplayName></Owner></DeleteMarker>"
        )
    };
    let expected = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
        <ListVersionsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
        <Name>bkt</Name><Prefix></Prefix><KeyMarker></KeyMarker><VersionIdMarker></VersionIdMarker>\
        <NextKeyMarker>k</NextKeyMarker><NextVersionIdMarker>v1</NextVersionIdMarker>\
        <MaxKeys>5</MaxKeys><IsTruncated>true</IsTruncated>\
        {}{}{}{}{}<CommonPrefixes><Prefix>p/</Prefix></CommonPrefixes></ListVersionsResult>",
        version("a", "a3", true),
        marker("a", "a2", false),
        version("a", "a1", false),
        marker("k", "v2", true),
        version("k", "v1", false),
    );
    assert_eq!(normalize(&xml), normalize(&expected));
}

#[test]
fn empty_versions_result_has_no_entries() {
    let doc = versions_result(
        "bkt",
        "",
        None,
        None,
        None,
        1000,
        &Enc(false),
        &OwnerNames::default(),
        ListVersionsPage::default(),
    );
    let xml = render("ListVersionsResult", &doc).unwrap();
    assert!(!xml.contains("<Version>"), "{xml}");
    assert!(!xml.contains("<DeleteMarker>"), "{xml}");
    assert!(
        xml.ends_with("<IsTruncated>false</IsTruncated></ListVersionsResult>"),
        "{xml}"
    );
}

/// The fields of each listing that `encoding-type=url` encodes are the
/// ones botocore's `decode_list_object*` handlers decode: v1 leaves its
/// top-level Prefix alone; v2 and ListObjectVersions encode theirs.
#[test]
fn url_encoding_covers_exactly_the_fields_botocore_decodes() {
    let odd = "a b\n+";
    let encoded = "a%20b%0A%2B";
    let listing = Listing {
        max: 1,
        enc: Enc(true),
        prefix: odd.into(),
        delimiter: Some(odd.into()),
    };
    let page = ListObjectsPage {
        objects: vec![obj(odd, "null", true, false)],
        common_prefixes: vec![odd.into()],
        is_truncated: true,
        next_marker: Some(odd.into()),
    };
    let v1 = v1_result("bkt", &listing, Some(odd), &OwnerNames::default(), page);
    assert_eq!(v1.prefix, odd, "v1 Prefix is not encoded");
    assert_eq!(v1.delimiter.as_deref(), Some(encoded));
    assert_eq!(v1.marker.as_deref(), Some(encoded));
    assert_eq!(v1.next_marker.as_deref(), Some(encoded));
    assert_eq!(v1.contents[0].key, encoded);
    assert_eq!(v1.common_prefixes[0].prefix, encoded);
    let xml = render("ListBucketResult", &v1).unwrap();
    assert!(xml.contains("<Prefix>a b\n+</Prefix>"), "{xml}");
    assert!(xml.contains("<EncodingType>url</EncodingType>"), "{xml}");

    let page = ListObjectsPage {
        objects: vec![obj(odd, "null", true, false)],
        common_prefixes: vec![odd.into()],
        ..Default::default()
    };
    let v2 = v2_result(
        "bkt",
        odd,
        Some(odd.into()),
        Some("tok"),
        Some(odd.into()),
        1,
        None,
        &Enc(true),
        page,
    );
    assert_eq!(v2.prefix, encoded);
    assert_eq!(v2.delimiter.as_deref(), Some(encoded));
    assert_eq!(v2.start_after.as_deref(), Some(encoded));
    assert_eq!(v2.continuation_token.as_deref(), Some("tok"));
    assert_eq!(v2.contents[0].key, encoded);
    assert_eq!(v2.common_prefixes[0].prefix, encoded);

    let page = ListVersionsPage {
        versions: vec![obj(odd, "v2", true, true), obj(odd, "v1", false, false)],
        common_prefixes: vec![odd.into()],
        is_truncated: true,
        next_key_marker: Some(odd.into()),
        next_version_id_marker: Some("v1".into()),
    };
    let versions = versions_result(
        "bkt",
        odd,
        Some(odd.into()),
        Some(odd.into()),
        Some("v9".into()),
        2,
        &Enc(true),
        &OwnerNames::default(),
        page,
    );
    assert_eq!(versions.prefix, encoded);
    assert_eq!(versions.delimiter.as_deref(), Some(encoded));
    assert_eq!(versions.key_marker, encoded);
    assert_eq!(versions.next_key_marker.as_deref(), Some(encoded));
    assert_eq!(versions.version_id_marker, "v9");
    assert_eq!(versions.common_prefixes[0].prefix, encoded);
    for entry in &versions.entries {
        let key = match entry {
            VersionListEntry::Version(v) => &v.key,
            VersionListEntry::DeleteMarker(m) => &m.key,
        };
        assert_eq!(key, encoded);
    }
}

/// `<X/>` and `<X></X>` are the same element.
fn normalize(xml: &str) -> String {
    let mut out = String::new();
    let mut rest = xml;
    while let Some(pos) = rest.find("/>") {
        let open = rest[..pos].rfind('<').unwrap();
        let name = rest[open + 1..pos]
            .split_whitespace()
            .next()
            .unwrap()
            .to_string();
        out.push_str(&rest[..pos]);
        out.push_str(&format!("></{name}>"));
        rest = &rest[pos + 2..];
    }
    out.push_str(rest);
    out
}
