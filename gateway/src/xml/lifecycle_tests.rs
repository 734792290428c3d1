use super::*;

fn doc(rules: &str) -> String {
    format!("<LifecycleConfiguration>{rules}</LifecycleConfiguration>")
}

fn err(rules: &str) -> S3Error {
    parse_lifecycle(doc(rules).as_bytes()).unwrap_err()
}

/// A V2 rule with `body` after its ID, filter and status.
fn v2(body: &str) -> String {
    format!(
        "<Rule><ID>r</ID><Filter><Prefix>a/</Prefix></Filter><Status>Enabled</Status>{body}</Rule>"
    )
}

fn message(e: S3Error) -> (String, &'static str) {
    (e.to_string(), e.code())
}

#[test]
fn a_full_configuration_reads_and_renders_as_sent() {
    let sent = doc(
        "<Rule><ID>days</ID><Filter><Prefix>logs/</Prefix></Filter><Status>Enabled</Status>\
         <Expiration><Days>30</Days></Expiration></Rule>\
         <Rule><ID>and</ID><Filter><And><Prefix>p/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag>\
         <ObjectSizeGreaterThan>10</ObjectSizeGreaterThan><ObjectSizeLessThan>20</ObjectSizeLessThan>\
         </And></Filter><Status>Disabled</Status><Expiration><Date>2030-01-01T00:00:00Z</Date></Expiration>\
         <NoncurrentVersionExpiration><NoncurrentDays>3</NoncurrentDays><NewerNoncurrentVersions>2</NewerNoncurrentVersions>\
         </NoncurrentVersionExpiration></Rule>\
         <Rule><ID>markers</ID><Filter></Filter><Status>Enabled</Status>\
         <Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>\
         <AbortIncompleteMultipartUpload><DaysAfterInitiation>7</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>",
    );
    let cfg = parse_lifecycle(sent.as_bytes()).unwrap();
    assert_eq!(cfg.rules.len(), 3);
    assert_eq!(cfg.rules[0].expiration, Some(Expiration::Days(30)));
    assert_eq!(cfg.rules[1].filter.form, FilterForm::And);
    assert_eq!(cfg.rules[1].filter.size_less_than, Some(20));
    assert!(!cfg.rules[1].enabled);
    assert_eq!(
        cfg.rules[1].expiration,
        Some(Expiration::Date(1_893_456_000_000))
    );
    assert_eq!(
        cfg.rules[2].abort_incomplete_upload,
        Some(AbortUploads::Days(7))
    );
    let out = render_lifecycle(&cfg).unwrap();
    assert!(
        out.contains(
            "<Rule><Expiration><Days>30</Days></Expiration><ID>days</ID>\
             <Filter><Prefix>logs/</Prefix></Filter><Status>Enabled</Status></Rule>"
        ),
        "{out}"
    );
    assert!(
        out.contains("<Date>2030-01-01T00:00:00.000Z</Date>"),
        "{out}"
    );
    assert!(out.contains("<And><Prefix>p/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag>"));
    // What Get answers, Put takes back unchanged.
    assert_eq!(parse_lifecycle(out.as_bytes()).unwrap(), cfg);
}

#[test]
fn legacy_rule_prefix_answers_as_sent_and_ids_are_made_up() {
    let cfg = parse_lifecycle(
        doc("<Rule><Prefix>x/</Prefix><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>")
            .as_bytes(),
    )
    .unwrap();
    assert_eq!(cfg.rules[0].filter.form, FilterForm::RulePrefix);
    assert_eq!(cfg.rules[0].id.len(), 48);
    let out = render_lifecycle(&cfg).unwrap();
    assert!(out.contains("<Prefix>x/</Prefix><Status>"), "{out}");
    assert!(!out.contains("<Filter"));
}

#[test]
fn malformed_documents() {
    for rules in [
        "",
        "<Rule><ID>a</ID><Filter/><Expiration><Days>1</Days></Expiration></Rule>",
        "<Rule><ID>a</ID><Filter/><Status>enabled</Status><Expiration><Days>1</Days></Expiration></Rule>",
        "<Rule><ID>a</ID><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>",
        "<Rule><ID>a</ID><Prefix/><Filter/><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>",
        &v2("<Expiration><Days>x</Days></Expiration>"),
        &v2("<Expiration><Days>1</Days><Date>2030-01-01T00:00:00Z</Date></Expiration>"),
        &v2("<Expiration><Days>1</Days><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>"),
        &v2("<Expiration></Expiration>"),
        &v2("<Expiration><Date>yesterday</Date></Expiration>"),
        &v2("<NoncurrentVersionExpiration><NewerNoncurrentVersions>1</NewerNoncurrentVersions></NoncurrentVersionExpiration>"),
        &v2("<AbortIncompleteMultipartUpload></AbortIncompleteMultipartUpload>"),
        &v2("<Unknown/>"),
        &v2("<Transition><Days>30</Days><StorageClass>STANDARD</StorageClass></Transition>"),
        "<Rule><ID>a</ID><Filter><Prefix>a</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></Filter>\
         <Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>",
    ] {
        assert!(matches!(err(rules), S3Error::MalformedXML), "{rules}");
    }
}

#[test]
fn value_errors_carry_s3s_messages() {
    let cases: Vec<(String, &str, &str)> = vec![
        (v2("<Expiration><Days>0</Days></Expiration>"), "InvalidArgument",
         "'Days' for Expiration action must be a positive integer"),
        (v2("<Expiration><Date>2030-01-01T12:00:00Z</Date></Expiration>"), "InvalidArgument",
         "'Date' must be at midnight GMT"),
        (v2("<NoncurrentVersionExpiration><NoncurrentDays>-1</NoncurrentDays></NoncurrentVersionExpiration>"),
         "InvalidArgument",
         "'NoncurrentDays' for NoncurrentVersionExpiration action must be a positive integer"),
        (v2("<AbortIncompleteMultipartUpload><DaysAfterInitiation>0</DaysAfterInitiation></AbortIncompleteMultipartUpload>"),
         "InvalidArgument",
         "'DaysAfterInitiation' for AbortIncompleteMultipartUpload action must be a positive integer"),
        (v2(""), "InvalidRequest", "At least one action needs to be specified in a rule"),
        (format!("{}{}", v2("<Expiration><Days>1</Days></Expiration>"), v2("<Expiration><Days>2</Days></Expiration>")),
         "InvalidArgument", "Rule ID must be unique. Found same ID for more than one rule"),
        (format!("<Rule><ID>{}</ID><Filter/><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>", "i".repeat(256)),
         "InvalidArgument", "ID length should not exceed allowed limit of 255"),
        ("<Rule><ID>t</ID><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Status>Enabled</Status>\
          <Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>".into(),
         "InvalidRequest", "ExpiredObjectDeleteMarker cannot be specified with Tags."),
        ("<Rule><ID>t</ID><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Status>Enabled</Status>\
          <AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>".into(),
         "InvalidRequest", "AbortIncompleteMultipartUpload cannot be specified with Tags."),
        ("<Rule><ID>t</ID><Filter><ObjectSizeLessThan>5</ObjectSizeLessThan></Filter><Status>Enabled</Status>\
          <AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>".into(),
         "InvalidRequest", "AbortIncompleteMultipartUpload cannot be specified with Object Size."),
        ("<Rule><ID>t</ID><Filter><And><Tag><Key>k</Key><Value>1</Value></Tag><Tag><Key>k</Key><Value>2</Value></Tag></And></Filter>\
          <Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>".into(),
         "InvalidRequest", "Duplicate Tag Keys are not allowed."),
        ("<Rule><ID>t</ID><Filter><And><ObjectSizeGreaterThan>9</ObjectSizeGreaterThan><ObjectSizeLessThan>9</ObjectSizeLessThan></And></Filter>\
          <Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>".into(),
         "InvalidRequest", "'ObjectSizeLessThan' has to be a value greater than 'ObjectSizeGreaterThan'."),
        (format!("{}<Rule><ID>b</ID><Prefix>x</Prefix><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>",
                 v2("<Expiration><Days>1</Days></Expiration>")),
         "InvalidRequest",
         "Base level prefix cannot be used in Lifecycle V2, prefixes are only supported in the Filter."),
        (format!("<Rule><ID>b</ID><Prefix>x</Prefix><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>{}",
                 v2("<Expiration><Days>1</Days></Expiration>").replace("<ID>r</ID>", "<ID>c</ID>")),
         "InvalidRequest", "Filter element can only be used in Lifecycle V2."),
        ("<Rule><ID>a</ID><Prefix></Prefix><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>\
          <Rule><ID>b</ID><Prefix>a</Prefix><Status>Enabled</Status><Expiration><Days>2</Days></Expiration></Rule>".into(),
         "InvalidRequest", "Found overlapping prefixes '' and 'a' for same action type 'Expiration'"),
        (v2("<Transition><Days>30</Days><StorageClass>GLACIER</StorageClass></Transition>"),
         "InvalidStorageClass", "The storage class you specified is not valid"),
    ];
    for (rules, code, msg) in cases {
        let (got, got_code) = message(err(&rules));
        assert_eq!((got.as_str(), got_code), (msg, code), "{rules}");
    }
}

#[test]
fn at_most_a_thousand_rules() {
    let rule = |i: usize| {
        format!("<Rule><ID>{i}</ID><Filter/><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>")
    };
    let thousand: String = (0..1000).map(rule).collect();
    assert_eq!(
        parse_lifecycle(doc(&thousand).as_bytes())
            .unwrap()
            .rules
            .len(),
        1000
    );
    let more: String = (0..1001).map(rule).collect();
    assert_eq!(err(&more).code(), "InvalidRequest");
}
