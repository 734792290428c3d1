use super::*;
use godwit_common::replication::RuleFilter;

/// The body oss2 2.19 writes for `put_bucket_replication` (element order
/// as its `to_put_bucket_replication`).
const OSS2_PUT: &str = "<ReplicationConfiguration><Rule><ID>r1</ID>\
    <Destination><Bucket>dst</Bucket><Location>oss-eu</Location></Destination>\
    <HistoricalObjectReplication>enabled</HistoricalObjectReplication>\
    <PrefixSet><Prefix>a/</Prefix><Prefix>b/</Prefix></PrefixSet>\
    <Action>PUT</Action><SyncRole>role</SyncRole></Rule></ReplicationConfiguration>";

#[test]
fn oss2_rule_parses_with_all_fields() {
    let r = parse_put_replication(OSS2_PUT.as_bytes()).unwrap();
    assert_eq!(
        r,
        OssRuleRequest {
            id: Some("r1".into()),
            rtc: false,
            prefixes: vec!["a/".into(), "b/".into()],
            actions: vec!["PUT".into()],
            bucket: "dst".into(),
            location: "oss-eu".into(),
            transfer_type: None,
            historical: true,
            sync_role: Some("role".into()),
        }
    );
    assert!(!r.replicates_deletes());
}

#[test]
fn defaults_are_all_actions_and_historical_replication() {
    let body = "<ReplicationConfiguration><Rule><RTC><Status>enabled</Status></RTC>\
        <Destination><Bucket>dst</Bucket><Location>eu</Location>\
        <TransferType>oss_acc</TransferType></Destination></Rule></ReplicationConfiguration>";
    let r = parse_put_replication(body.as_bytes()).unwrap();
    assert_eq!(r.id, None);
    assert!(r.rtc && r.historical && r.replicates_deletes());
    assert_eq!(r.actions, ["ALL"]);
    assert_eq!(r.transfer_type.as_deref(), Some("oss_acc"));
}

#[test]
fn action_lists_are_normalized() {
    let with = |action: &str| {
        let body = OSS2_PUT.replace(
            "<Action>PUT</Action>",
            &format!("<Action>{action}</Action>"),
        );
        parse_put_replication(body.as_bytes()).map(|r| r.actions)
    };
    assert_eq!(with("ALL,PUT").unwrap(), ["ALL"]);
    assert_eq!(with("delete, put").unwrap(), ["PUT", "DELETE"]);
    for bad in ["PUT,COPY", "DELETE", "ABORT,DELETE"] {
        assert!(
            matches!(with(bad), Err(S3Error::InvalidArgument(_))),
            "{bad}"
        );
    }
}

#[test]
fn bad_rules_get_oss_errors() {
    let cases: Vec<(String, &str)> = vec![
        (OSS2_PUT.replace("enabled", "open"), "InvalidArgument"),
        (
            OSS2_PUT.replace(
                "<Prefix>a/</Prefix>",
                &"<Prefix>p</Prefix>".repeat(MAX_PREFIXES),
            ),
            "InvalidArgument",
        ),
        (
            OSS2_PUT.replace(
                "</Location>",
                "</Location><TransferType>fast</TransferType>",
            ),
            "InvalidArgument",
        ),
        (
            OSS2_PUT.replace("<Location>oss-eu</Location>", ""),
            "MalformedXML",
        ),
        (
            "<ReplicationConfiguration></ReplicationConfiguration>".into(),
            "InvalidArgument",
        ),
        (
            OSS2_PUT.replace("</Rule>", "</Rule><Rule></Rule>"),
            "InvalidArgument",
        ),
        ("<Rule><ID>x</ID></Rule>".into(), "MalformedXML"),
        ("not xml".into(), "MalformedXML"),
    ];
    for (body, code) in cases {
        let got = parse_put_replication(body.as_bytes());
        assert_eq!(got.err().map(|e| e.code()), Some(code), "{body}");
    }
}

#[test]
fn delete_and_rtc_documents_name_one_rule() {
    assert_eq!(
        parse_delete_replication(b"<ReplicationRules><ID>r1</ID></ReplicationRules>").unwrap(),
        "r1"
    );
    assert!(parse_delete_replication(b"<ReplicationRules></ReplicationRules>").is_err());
    let rtc = b"<ReplicationRule><RTC><Status>enabled</Status></RTC><ID>r1</ID></ReplicationRule>";
    assert_eq!(parse_put_rtc(rtc).unwrap(), ("r1".to_string(), true));
    let off =
        b"<RtcConfiguration><ID>r1</ID><RTC><Status>disabled</Status></RTC></RtcConfiguration>";
    assert_eq!(parse_put_rtc(off).unwrap(), ("r1".to_string(), false));
    assert!(matches!(
        parse_put_rtc(b"<ReplicationRule><ID>r1</ID></ReplicationRule>"),
        Err(S3Error::MalformedXML)
    ));
}

fn stored(oss: Option<OssRuleInfo>) -> ReplicationRule {
    ReplicationRule {
        id: "r1".into(),
        enabled: true,
        filter: RuleFilter {
            prefix: "logs/".into(),
            ..Default::default()
        },
        delete_marker_replication: true,
        existing_object_replication: true,
        destination_bucket: "dst".into(),
        remote: "eu".into(),
        oss,
        ..Default::default()
    }
}

#[test]
fn get_answer_has_every_field_oss2_requires() {
    let rule = stored(Some(OssRuleInfo {
        location: "oss-eu".into(),
        transfer_type: Some("internal".into()),
        actions: vec!["ALL".into()],
        prefixes: vec!["a/".into()],
        sync_role: None,
        created_ms: 0,
        closing: false,
    }));
    let view = RuleView {
        rule: &rule,
        status: "doing",
        rtc: ENABLING,
        progress: Some((0.5, "2026-11-30T04:00:00.000Z".into())),
    };
    let xml = render_replication(std::slice::from_ref(&view)).unwrap();
    assert_eq!(
        xml,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ReplicationConfiguration><Rule>\
         <ID>r1</ID><RTC><Status>enabling</Status></RTC><PrefixSet><Prefix>a/</Prefix></PrefixSet>\
         <Action>ALL</Action><Destination><Bucket>dst</Bucket><Location>oss-eu</Location></Destination>\
         <Status>doing</Status><HistoricalObjectReplication>enabled</HistoricalObjectReplication>\
         </Rule></ReplicationConfiguration>"
    );
    let progress = render_progress(&view).unwrap();
    assert!(
        progress.contains(
            "<Progress><HistoricalObject>0.5</HistoricalObject>\
             <NewObject>2026-11-30T04:00:00.000Z</NewObject></Progress>"
        ),
        "{progress}"
    );
    // Progress only while doing.
    let starting = RuleView {
        status: "starting",
        ..view.clone()
    };
    assert!(!render_progress(&starting).unwrap().contains("<Progress>"));
}

#[test]
fn an_s3_rule_reads_as_oss() {
    let rule = stored(None);
    let view = RuleView {
        rule: &rule,
        status: "doing",
        rtc: DISABLED,
        progress: None,
    };
    let xml = render_replication(&[view]).unwrap();
    assert!(xml.contains("<PrefixSet><Prefix>logs/</Prefix></PrefixSet><Action>ALL</Action>"));
    assert!(xml.contains("<Location>oss-eu</Location>"));
}

#[test]
fn location_lists_remotes_and_the_rtc_constraint() {
    let xml = render_location(&["oss-a".to_string(), "oss-b".to_string()]).unwrap();
    assert_eq!(
        xml,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ReplicationLocation>\
         <Location>oss-a</Location><Location>oss-b</Location>\
         <LocationTransferTypeConstraint/>\
         <LocationRTCConstraint><Location>oss-a</Location><Location>oss-b</Location>\
         </LocationRTCConstraint></ReplicationLocation>"
    );
}

#[test]
fn fractions_have_at_most_two_decimals() {
    assert_eq!(format_fraction(0.856), "0.85");
    assert_eq!(format_fraction(1.0), "1");
    assert_eq!(format_fraction(0.0), "0");
    assert_eq!(format_fraction(0.5), "0.5");
}
