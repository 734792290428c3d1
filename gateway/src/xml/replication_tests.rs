use super::*;

const NS: &str = "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"";

fn cfg(rules: &str) -> String {
    format!("<ReplicationConfiguration {NS}><Role>arn:aws:iam::1:role/r</Role>{rules}</ReplicationConfiguration>")
}

/// A V2 rule with the given filter and delete-marker status.
fn v2_rule(id: &str, filter: &str, dmr: &str, dest_extra: &str) -> String {
    format!(
        "<Rule><ID>{id}</ID><Priority>1</Priority><Filter>{filter}</Filter><Status>Enabled</Status>\
         <DeleteMarkerReplication><Status>{dmr}</Status></DeleteMarkerReplication>\
         <Destination><Bucket>arn:aws:s3:::dst</Bucket>{dest_extra}</Destination></Rule>"
    )
}

fn parse(doc: &str) -> Result<ReplicationConfig, S3Error> {
    parse_replication(doc.as_bytes())
}

fn code(doc: &str) -> &'static str {
    match parse(doc) {
        Ok(c) => panic!("expected an error, parsed {c:?}"),
        Err(e) => e.code(),
    }
}

const RTC: &str = "<ReplicationTime><Status>Enabled</Status><Time><Minutes>15</Minutes></Time></ReplicationTime>\
                   <Metrics><Status>Enabled</Status><EventThreshold><Minutes>15</Minutes></EventThreshold></Metrics>";

#[test]
fn v2_rule_with_everything_parses() {
    // Children out of botocore's order, as boto3 sends a caller's dict.
    let doc = cfg(&format!(
        "<Rule><Destination>{RTC}<StorageClass>STANDARD_IA</StorageClass><Bucket>arn:aws:s3:::dst-b</Bucket></Destination>\
         <Status>Enabled</Status><DeleteMarkerReplication><Status>Enabled</Status></DeleteMarkerReplication>\
         <Filter><Prefix>logs/</Prefix></Filter><Priority>7</Priority><ID>r1</ID>\
         <ExistingObjectReplication><Status>Enabled</Status></ExistingObjectReplication>\
         <DeleteReplication><Status>Enabled</Status></DeleteReplication></Rule>"
    ));
    let c = parse(&doc).unwrap();
    assert_eq!(c.role, "arn:aws:iam::1:role/r");
    let r = &c.rules[0];
    assert_eq!(r.id, "r1");
    assert_eq!(r.priority, 7);
    assert!(r.enabled);
    assert!(!r.v1_prefix);
    assert_eq!(r.filter.prefix, "logs/");
    assert!(r.filter.tags.is_empty());
    assert!(r.delete_marker_replication);
    assert!(r.version_delete_replication);
    assert!(r.existing_object_replication);
    assert_eq!(r.destination_arn, "arn:aws:s3:::dst-b");
    assert_eq!(r.destination_bucket, "dst-b");
    assert_eq!(r.remote, "");
    assert_eq!(r.storage_class.as_deref(), Some("STANDARD_IA"));
    assert!(r.rtc);
    assert_eq!(r.rtc_minutes, 15);
    assert!(r.metrics);
}

#[test]
fn filters_tag_and_and() {
    let doc = cfg(&v2_rule(
        "t",
        "<Tag><Key>k</Key><Value>v</Value></Tag>",
        "Disabled",
        "",
    ));
    let r = &parse(&doc).unwrap().rules[0];
    assert_eq!(r.filter.prefix, "");
    assert_eq!(r.filter.tags["k"], "v");
    assert!(!r.delete_marker_replication);

    let doc = cfg(&v2_rule(
        "a",
        "<And><Tag><Key>k1</Key><Value>v1</Value></Tag><Tag><Key>k2</Key><Value></Value></Tag><Prefix>p/</Prefix></And>",
        "Disabled",
        "",
    ));
    let r = &parse(&doc).unwrap().rules[0];
    assert_eq!(r.filter.prefix, "p/");
    assert_eq!(r.filter.tags.len(), 2);
    assert_eq!(r.filter.tags["k2"], "");

    // An empty filter selects everything.
    let doc = cfg(&v2_rule("e", "", "Enabled", ""));
    let r = &parse(&doc).unwrap().rules[0];
    assert_eq!(r.filter, RuleFilter::default());
    assert!(!r.v1_prefix);
}

#[test]
fn v1_prefix_rule_replicates_delete_markers_and_renders_back_as_v1() {
    let doc = cfg(
        "<Rule><ID>old</ID><Prefix>docs/</Prefix><Status>Disabled</Status>\
         <Destination><Bucket>arn:aws:s3:::dst</Bucket></Destination></Rule>",
    );
    let c = parse(&doc).unwrap();
    let r = &c.rules[0];
    assert!(r.v1_prefix);
    assert!(!r.enabled);
    assert!(r.delete_marker_replication);
    assert_eq!(r.filter.prefix, "docs/");
    let xml = render_replication(&c).unwrap();
    assert!(
        xml.contains(
            "<Rule><ID>old</ID><Prefix>docs/</Prefix><Status>Disabled</Status>\
             <Destination><Bucket>arn:aws:s3:::dst</Bucket></Destination></Rule>"
        ),
        "{xml}"
    );
    assert!(!xml.contains("<Filter"), "{xml}");
    assert!(!xml.contains("DeleteMarkerReplication"), "{xml}");
}

#[test]
fn missing_id_is_generated_and_long_ids_refused() {
    let doc = cfg(
        "<Rule><Status>Enabled</Status><Prefix></Prefix><Destination><Bucket>arn:aws:s3:::dst</Bucket></Destination></Rule>",
    );
    let id = parse(&doc).unwrap().rules[0].id.clone();
    assert!(!id.is_empty() && id.len() <= MAX_RULE_ID, "{id}");
    assert_ne!(parse(&doc).unwrap().rules[0].id, id, "ids are random");

    let ok = cfg(&v2_rule(&"i".repeat(255), "", "Disabled", ""));
    assert!(parse(&ok).is_ok());
    let long = cfg(&v2_rule(&"i".repeat(256), "", "Disabled", ""));
    assert_eq!(code(&long), "InvalidArgument");
}

#[test]
fn v2_rendering_follows_botocore_member_order_with_namespace() {
    let doc = cfg(&format!(
        "<Rule><Status>Enabled</Status><ID>r1</ID><Priority>3</Priority>\
         <Filter><And><Prefix>p/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></And></Filter>\
         <DeleteMarkerReplication><Status>Disabled</Status></DeleteMarkerReplication>\
         <ExistingObjectReplication><Status>Enabled</Status></ExistingObjectReplication>\
         <Destination><Bucket>arn:aws:s3:::dst</Bucket><StorageClass>STANDARD</StorageClass>{RTC}</Destination></Rule>"
    ));
    let xml = render_replication(&parse(&doc).unwrap()).unwrap();
    assert_eq!(
        xml,
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ReplicationConfiguration {NS}>\
             <Role>arn:aws:iam::1:role/r</Role>\
             <Rule><ID>r1</ID><Priority>3</Priority>\
             <Filter><And><Prefix>p/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></And></Filter>\
             <Status>Enabled</Status>\
             <ExistingObjectReplication><Status>Enabled</Status></ExistingObjectReplication>\
             <Destination><Bucket>arn:aws:s3:::dst</Bucket><StorageClass>STANDARD</StorageClass>\
             <ReplicationTime><Status>Enabled</Status><Time><Minutes>15</Minutes></Time></ReplicationTime>\
             <Metrics><Status>Enabled</Status><EventThreshold><Minutes>15</Minutes></EventThreshold></Metrics>\
             </Destination>\
             <DeleteMarkerReplication><Status>Disabled</Status></DeleteMarkerReplication>\
             </Rule></ReplicationConfiguration>"
        )
    );
}

#[test]
fn rendering_round_trips_filters_and_extension() {
    for (filter, dmr) in [
        ("<Prefix>a/</Prefix>", "Enabled"),
        ("<Tag><Key>k</Key><Value>v</Value></Tag>", "Disabled"),
        (
            "<And><Tag><Key>k1</Key><Value>v1</Value></Tag><Tag><Key>k2</Key><Value>v2</Value></Tag></And>",
            "Disabled",
        ),
    ] {
        let c = parse(&cfg(&v2_rule("r", filter, dmr, ""))).unwrap();
        let xml = render_replication(&c).unwrap();
        assert!(xml.contains(&format!("<Filter>{filter}</Filter>")), "{xml}");
        assert_eq!(parse(&xml).unwrap(), c, "{xml}");
    }
    let doc = cfg(
        "<Rule><ID>d</ID><Filter/><Status>Enabled</Status>\
         <DeleteMarkerReplication><Status>Enabled</Status></DeleteMarkerReplication>\
         <DeleteReplication><Status>Enabled</Status></DeleteReplication>\
         <Destination><Bucket>arn:aws:s3:::dst</Bucket><Metrics><Status>Enabled</Status></Metrics></Destination></Rule>",
    );
    let c = parse(&doc).unwrap();
    assert!(c.rules[0].version_delete_replication);
    assert!(c.rules[0].metrics && !c.rules[0].rtc);
    let xml = render_replication(&c).unwrap();
    assert!(
        xml.contains("<DeleteReplication><Status>Enabled</Status></DeleteReplication>"),
        "{xml}"
    );
    assert!(
        xml.contains("<Metrics><Status>Enabled</Status></Metrics>"),
        "{xml}"
    );
    assert_eq!(parse(&xml).unwrap(), c);
}

#[test]
fn malformed_documents() {
    for doc in [
        "".to_string(),
        "not xml".to_string(),
        "<ReplicationConfiguration><Role>r</Role>".to_string(),
        // No rule at all.
        cfg(""),
        // Another root.
        format!("<Other>{}</Other>", v2_rule("r", "", "Enabled", "")),
        // Required elements missing: Status, Destination, Destination/Bucket.
        cfg("<Rule><ID>r</ID><Prefix/><Destination><Bucket>arn:aws:s3:::dst</Bucket></Destination></Rule>"),
        cfg("<Rule><ID>r</ID><Prefix/><Status>Enabled</Status></Rule>"),
        cfg("<Rule><ID>r</ID><Prefix/><Status>Enabled</Status><Destination/></Rule>"),
        // Enumerations.
        cfg("<Rule><ID>r</ID><Prefix/><Status>enabled</Status><Destination><Bucket>arn:aws:s3:::dst</Bucket></Destination></Rule>"),
        cfg(&v2_rule("r", "", "Maybe", "")),
        cfg(&v2_rule("r", "", "Enabled", "<StorageClass>FAST</StorageClass>")),
        // Numbers.
        cfg("<Rule><ID>r</ID><Priority>high</Priority><Prefix/><Status>Enabled</Status><Destination><Bucket>arn:aws:s3:::dst</Bucket></Destination></Rule>"),
        // A filter is one of Prefix, Tag, And.
        cfg(&v2_rule("r", "<Prefix>a</Prefix><Tag><Key>k</Key><Value>v</Value></Tag>", "Disabled", "")),
        // ReplicationTime needs its Time.
        cfg(&v2_rule("r", "", "Enabled", "<ReplicationTime><Status>Enabled</Status></ReplicationTime><Metrics><Status>Enabled</Status></Metrics>")),
    ] {
        assert_eq!(
            parse(&doc).map_err(|e| e.code()).err(),
            Some("MalformedXML"),
            "{doc}"
        );
    }
}

#[test]
fn filter_without_delete_marker_replication_is_invalid_request() {
    let doc = cfg(
        "<Rule><ID>r</ID><Priority>1</Priority><Filter><Prefix>a</Prefix></Filter><Status>Enabled</Status>\
         <Destination><Bucket>arn:aws:s3:::dst</Bucket></Destination></Rule>",
    );
    match parse(&doc) {
        Err(S3Error::InvalidRequest(m)) => {
            assert!(
                m.starts_with("DeleteMarkerReplication must be specified"),
                "{m}"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn delete_marker_replication_in_a_v1_rule_is_invalid_request() {
    let doc = cfg("<Rule><ID>r</ID><Prefix>a</Prefix><Status>Enabled</Status>\
         <DeleteMarkerReplication><Status>Disabled</Status></DeleteMarkerReplication>\
         <Destination><Bucket>arn:aws:s3:::dst</Bucket></Destination></Rule>");
    assert_eq!(code(&doc), "InvalidRequest");
}

#[test]
fn tag_filter_with_delete_marker_replication_enabled_is_invalid_request() {
    for filter in [
        "<Tag><Key>k</Key><Value>v</Value></Tag>",
        "<And><Prefix>p</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></And>",
    ] {
        let doc = cfg(&v2_rule("r", filter, "Enabled", ""));
        match parse(&doc) {
            Err(S3Error::InvalidRequest(m)) => {
                assert!(
                    m.starts_with("Delete marker replication is not supported"),
                    "{m}"
                )
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn replication_time_rules() {
    // Minutes other than 15.
    let bad_rtc = "<ReplicationTime><Status>Enabled</Status><Time><Minutes>10</Minutes></Time></ReplicationTime>\
                   <Metrics><Status>Enabled</Status><EventThreshold><Minutes>15</Minutes></EventThreshold></Metrics>";
    assert_eq!(
        code(&cfg(&v2_rule("r", "", "Enabled", bad_rtc))),
        "InvalidArgument"
    );
    let bad_metrics = "<ReplicationTime><Status>Enabled</Status><Time><Minutes>15</Minutes></Time></ReplicationTime>\
                       <Metrics><Status>Enabled</Status><EventThreshold><Minutes>30</Minutes></EventThreshold></Metrics>";
    assert_eq!(
        code(&cfg(&v2_rule("r", "", "Enabled", bad_metrics))),
        "InvalidArgument"
    );
    // ReplicationTime without Metrics.
    let no_metrics =
        "<ReplicationTime><Status>Enabled</Status><Time><Minutes>15</Minutes></Time></ReplicationTime>";
    assert_eq!(
        code(&cfg(&v2_rule("r", "", "Enabled", no_metrics))),
        "InvalidRequest"
    );
    // RTC on with metrics off.
    let metrics_off = "<ReplicationTime><Status>Enabled</Status><Time><Minutes>15</Minutes></Time></ReplicationTime>\
                       <Metrics><Status>Disabled</Status></Metrics>";
    assert_eq!(
        code(&cfg(&v2_rule("r", "", "Enabled", metrics_off))),
        "InvalidRequest"
    );
    // RTC off (configured) with metrics off is fine, and renders back.
    let off = "<ReplicationTime><Status>Disabled</Status><Time><Minutes>15</Minutes></Time></ReplicationTime>\
               <Metrics><Status>Disabled</Status></Metrics>";
    let c = parse(&cfg(&v2_rule("r", "", "Enabled", off))).unwrap();
    assert!(!c.rules[0].rtc && !c.rules[0].metrics);
    let xml = render_replication(&c).unwrap();
    assert!(
        xml.contains(&format!(
            "<Destination><Bucket>arn:aws:s3:::dst</Bucket>{off}</Destination>"
        )),
        "{xml}"
    );
}

#[test]
fn destination_must_be_a_bucket_arn() {
    for bucket in [
        "dst",
        "arn:aws:s3:::",
        "arn:aws:s3:::Bad_Name",
        "arn:aws:s3:::dst/key",
        "arn:aws:iam:::dst",
    ] {
        let doc = cfg(&format!(
            "<Rule><ID>r</ID><Prefix/><Status>Enabled</Status><Destination><Bucket>{bucket}</Bucket></Destination></Rule>"
        ));
        assert_eq!(code(&doc), "InvalidArgument", "{bucket}");
    }
}

#[test]
fn prefix_and_filter_together_is_invalid_request() {
    let doc = cfg(
        "<Rule><ID>r</ID><Prefix>a</Prefix><Filter><Prefix>a</Prefix></Filter><Status>Enabled</Status>\
         <DeleteMarkerReplication><Status>Disabled</Status></DeleteMarkerReplication>\
         <Destination><Bucket>arn:aws:s3:::dst</Bucket></Destination></Rule>",
    );
    assert_eq!(code(&doc), "InvalidRequest");
}

#[test]
fn duplicate_ids_and_rule_count() {
    let two = format!(
        "{}{}",
        v2_rule("same", "<Prefix>a</Prefix>", "Disabled", ""),
        v2_rule("same", "<Prefix>b</Prefix>", "Disabled", "")
    );
    assert_eq!(code(&cfg(&two)), "InvalidArgument");

    let many: String = (0..=MAX_RULES)
        .map(|i| v2_rule(&format!("r{i}"), "", "Disabled", ""))
        .collect();
    assert_eq!(code(&cfg(&many)), "InvalidRequest");
    let most: String = (0..MAX_RULES)
        .map(|i| v2_rule(&format!("r{i}"), "", "Disabled", ""))
        .collect();
    assert_eq!(parse(&cfg(&most)).unwrap().rules.len(), MAX_RULES);
}

#[test]
fn duplicate_tag_keys_in_a_filter_are_invalid_argument() {
    let filter =
        "<And><Tag><Key>k</Key><Value>1</Value></Tag><Tag><Key>k</Key><Value>2</Value></Tag></And>";
    assert_eq!(
        code(&cfg(&v2_rule("r", filter, "Disabled", ""))),
        "InvalidArgument"
    );
}

#[test]
fn v1_rules_have_one_destination_and_v2_rules_many() {
    let v1 = |id: &str, dst: &str| {
        format!("<Rule><ID>{id}</ID><Prefix>{id}</Prefix><Status>Enabled</Status><Destination><Bucket>arn:aws:s3:::{dst}</Bucket></Destination></Rule>")
    };
    assert_eq!(
        code(&cfg(&format!("{}{}", v1("a", "dst1"), v1("b", "dst2")))),
        "InvalidRequest"
    );
    assert!(parse(&cfg(&format!("{}{}", v1("a", "dst1"), v1("b", "dst1")))).is_ok());
    let v2 = format!(
        "{}{}",
        v2_rule("a", "", "Disabled", ""),
        v2_rule("b", "", "Disabled", "").replace("arn:aws:s3:::dst", "arn:aws:s3:::dst2")
    );
    assert_eq!(parse(&cfg(&v2)).unwrap().rules.len(), 2);
}

#[test]
fn not_and_or_filters_are_not_implemented() {
    let filter = "<Not><Prefix>a</Prefix></Not>";
    assert_eq!(
        code(&cfg(&v2_rule("r", filter, "Disabled", ""))),
        "NotImplemented"
    );
}
