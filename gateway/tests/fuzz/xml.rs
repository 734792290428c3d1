//! Every XML request body the gateway parses, S3 and OSS: replication
//! configuration, tagging, Delete (DeleteObjects), CompleteMultipartUpload,
//! CreateBucketConfiguration, VersioningConfiguration, and OSS's
//! replication add/delete and RTC documents. Seeds are the documents of
//! the `xml::*_tests` unit tests. Properties: no panic; what the gateway
//! renders (replication configuration, tagging) parses back to the same
//! value; the tagging header round-trips.

use std::collections::BTreeMap;

use godwit_gateway::oss::replication_xml as oss_replication;
use godwit_gateway::xml::{replication, requests, tagging};
use proptest::prelude::*;

use crate::mutate;

const NS: &str = "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"";

/// Documents from `xml::replication_tests` (S3 V1 and V2 rules, filters,
/// RTC) and `oss::replication_xml_tests` (oss2's bodies).
fn replication_seeds() -> Vec<Vec<u8>> {
    let cfg = |rules: &str| {
        format!("<ReplicationConfiguration {NS}><Role>arn:aws:iam::1:role/r</Role>{rules}</ReplicationConfiguration>")
    };
    let rtc = "<ReplicationTime><Status>Enabled</Status><Time><Minutes>15</Minutes></Time></ReplicationTime>\
               <Metrics><Status>Enabled</Status><EventThreshold><Minutes>15</Minutes></EventThreshold></Metrics>";
    let v2 = |id: &str, filter: &str, dmr: &str, extra: &str| {
        format!(
            "<Rule><ID>{id}</ID><Priority>1</Priority><Filter>{filter}</Filter><Status>Enabled</Status>\
             <DeleteMarkerReplication><Status>{dmr}</Status></DeleteMarkerReplication>\
             <Destination><Bucket>arn:aws:s3:::dst</Bucket>{extra}</Destination></Rule>"
        )
    };
    let docs = vec![
        cfg(&format!(
            "<Rule><Destination>{rtc}<StorageClass>STANDARD_IA</StorageClass><Bucket>arn:aws:s3:::dst-b</Bucket></Destination>\
             <Status>Enabled</Status><DeleteMarkerReplication><Status>Enabled</Status></DeleteMarkerReplication>\
             <Filter><Prefix>logs/</Prefix></Filter><Priority>7</Priority><ID>r1</ID>\
             <ExistingObjectReplication><Status>Enabled</Status></ExistingObjectReplication>\
             <DeleteReplication><Status>Enabled</Status></DeleteReplication></Rule>"
        )),
        cfg(&v2("t", "<Tag><Key>k</Key><Value>v</Value></Tag>", "Disabled", "")),
        cfg(&v2(
            "a",
            "<And><Tag><Key>k1</Key><Value>v1</Value></Tag><Tag><Key>k2</Key><Value></Value></Tag><Prefix>p/</Prefix></And>",
            "Disabled",
            "",
        )),
        cfg(&format!("{}{}", v2("a", "", "Enabled", ""), v2("b", "<Prefix>x</Prefix>", "Disabled", rtc))),
        cfg("<Rule><ID>v1</ID><Prefix>old/</Prefix><Status>Enabled</Status>\
             <Destination><Bucket>arn:aws:s3:::dst</Bucket></Destination></Rule>"),
        "<ReplicationConfiguration><Rule><ID>r1</ID>\
         <Destination><Bucket>dst</Bucket><Location>oss-eu</Location></Destination>\
         <HistoricalObjectReplication>enabled</HistoricalObjectReplication>\
         <PrefixSet><Prefix>a/</Prefix><Prefix>b/</Prefix></PrefixSet>\
         <Action>PUT</Action><SyncRole>role</SyncRole></Rule></ReplicationConfiguration>"
            .to_string(),
        "<ReplicationConfiguration><Rule><RTC><Status>enabled</Status></RTC>\
         <Destination><Bucket>dst</Bucket><Location>eu</Location>\
         <TransferType>oss_acc</TransferType></Destination></Rule></ReplicationConfiguration>"
            .to_string(),
    ];
    docs.into_iter().map(String::into_bytes).collect()
}

/// Documents from `oss::replication_xml_tests` and the v2 SDK's captures.
const OSS_SMALL: &[&str] = &[
    "<ReplicationRules><ID>r1</ID></ReplicationRules>",
    "<ReplicationRules></ReplicationRules>",
    "<ReplicationRule><RTC><Status>enabled</Status></RTC><ID>r1</ID></ReplicationRule>",
    "<RtcConfiguration><ID>r1</ID><RTC><Status>disabled</Status></RTC></RtcConfiguration>",
    "<ReplicationRule><ID>r1</ID></ReplicationRule>",
];

/// Documents from `xml::tagging`, `xml::requests` unit tests.
const REQUEST_DOCS: &[&str] = &[
    "<Tagging><TagSet><Tag><Value> v 1 </Value><Key> a&amp;b </Key></Tag>\
     <Tag><Key>empty</Key><Value/></Tag><Tag><Key>e2</Key><Value></Value></Tag></TagSet></Tagging>",
    "<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tagging>",
    "<Tagging><TagSet/></Tagging>",
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n\
     <Part><ETag>\"aaa\"</ETag><ChecksumCRC32>7W96eg==</ChecksumCRC32><PartNumber>1</PartNumber></Part>\n\
     <Part><PartNumber>2</PartNumber><ETag>bbb</ETag></Part>\n</CompleteMultipartUpload>",
    "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>",
    "<CreateBucketConfiguration/>",
    "<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Status>Enabled</Status></VersioningConfiguration>",
    "<VersioningConfiguration><Status>Suspended</Status><MfaDelete>Disabled</MfaDelete></VersioningConfiguration>",
    "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>\n\
     <Object><Key> spaced key </Key></Object>\n<Object><Key>a&amp;b&lt;c</Key><VersionId>v1</VersionId></Object></Delete>",
    "<Delete/>",
    "<Delete><Object><Key><![CDATA[k<1>]]></Key></Object></Delete>",
];

fn all_seeds() -> Vec<Vec<u8>> {
    let mut s = replication_seeds();
    s.extend(mutate::seeds(OSS_SMALL));
    s.extend(mutate::seeds(REQUEST_DOCS));
    s
}

/// Every request-body parser on one document.
fn parse_all(body: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(cfg) = replication::parse_replication(body) {
        // What GET answers must be what PUT accepts, unchanged.
        let xml = replication::render_replication(&cfg)
            .map_err(|e| TestCaseError::fail(format!("render failed: {e:?}")))?;
        let again = replication::parse_replication(xml.as_bytes())
            .map_err(|e| TestCaseError::fail(format!("{xml}: {e:?}")))?;
        prop_assert_eq!(again, cfg, "{}", xml);
    }
    let _ = oss_replication::parse_put_replication(body);
    let _ = oss_replication::parse_delete_replication(body);
    let _ = oss_replication::parse_put_rtc(body);
    if let Ok(tags) = tagging::parse_tagging(body) {
        check_tags_round_trip(&tags)?;
    }
    let _ = requests::parse_complete(body);
    let _ = requests::parse_create_bucket(body);
    let _ = requests::parse_versioning(body);
    if let Ok(d) = requests::parse_delete(body) {
        prop_assert!(d.objects.len() <= requests::MAX_DELETE_KEYS);
    }
    Ok(())
}

fn check_tags_round_trip(tags: &BTreeMap<String, String>) -> Result<(), TestCaseError> {
    let xml = tagging::render_tagging(tags)
        .map_err(|e| TestCaseError::fail(format!("render failed: {e:?}")))?;
    let again = tagging::parse_tagging(xml.as_bytes())
        .map_err(|e| TestCaseError::fail(format!("{xml}: {e:?}")))?;
    prop_assert_eq!(&again, tags, "{}", xml);
    Ok(())
}

/// Tag text: printable ASCII, spaces at either end, and some non-ASCII.
fn tag_text(max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[ -~é€\u{a0}\u{2000}]{{0,{max}}}")).unwrap()
}

fn tag_map() -> impl Strategy<Value = BTreeMap<String, String>> {
    proptest::collection::btree_map(tag_text(20), tag_text(30), 0..=tagging::MAX_TAGS).prop_map(
        |m| {
            m.into_iter()
                .filter(|(k, _)| !k.is_empty() && !k.starts_with("aws:"))
                .collect()
        },
    )
}

proptest! {
    #![proptest_config(crate::config(40_000))]

    #[test]
    fn fuzz_xml_request_bodies(body in mutate::input(all_seeds(), 256)) {
        parse_all(&body)?;
    }

    #[test]
    fn fuzz_xml_tagging_round_trips(tags in tag_map()) {
        check_tags_round_trip(&tags)?;
        // The same tags as an `x-amz-tagging` header.
        let header: String = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(tags.iter())
            .finish();
        let parsed = tagging::parse_tagging_header(Some(&header));
        let trimmed_away = header.trim() != header;
        if !trimmed_away {
            prop_assert_eq!(parsed.ok(), Some(tags));
        }
    }

    /// The timestamps of stored records (any i64, e.g. a replica's
    /// last-writer-wins clock) as GET, HEAD and listings render them.
    #[test]
    fn fuzz_xml_record_dates(ms in prop_oneof![any::<i64>(), 253_402_300_799_000i64..253_402_300_801_000]) {
        let _ = godwit_gateway::xml::http_date(ms);
        let _ = godwit_gateway::xml::iso8601_ms(ms);
        let _ = godwit_gateway::oss::xml::iso8601_s(ms);
        let _ = godwit_gateway::oss::xml::unix_secs(ms);
    }
}
