use super::*;

const NS: &str = "http://s3.amazonaws.com/doc/2006-03-01/";

/// A document of one rule whose inside is `rule`.
fn doc(rule: &str) -> String {
    format!("<ServerSideEncryptionConfiguration xmlns=\"{NS}\"><Rule>{rule}</Rule></ServerSideEncryptionConfiguration>")
}

fn by_default(inner: &str) -> String {
    doc(&format!(
        "<ApplyServerSideEncryptionByDefault>{inner}</ApplyServerSideEncryptionByDefault>"
    ))
}

fn invalid_argument(r: Result<BucketEncryption, S3Error>) -> String {
    match r {
        Err(S3Error::InvalidArgument(m)) => m,
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

#[test]
fn aes256_is_stored_with_its_bucket_key_setting() {
    let cfg =
        parse_encryption(by_default("<SSEAlgorithm>AES256</SSEAlgorithm>").as_bytes()).unwrap();
    assert_eq!(cfg.default_algorithm(), Some(SseAlgorithm::Aes256));
    assert_eq!(cfg.rules.len(), 1);
    assert_eq!(cfg.rules[0].bucket_key_enabled, None);
    assert_eq!(cfg.rules[0].apply.kms_master_key_id, None);

    let body = doc(
        "<ApplyServerSideEncryptionByDefault><SSEAlgorithm> AES256 </SSEAlgorithm>\
         </ApplyServerSideEncryptionByDefault><BucketKeyEnabled>true</BucketKeyEnabled>\
         <BlockedEncryptionTypes><EncryptionType>NONE</EncryptionType></BlockedEncryptionTypes>",
    );
    let cfg = parse_encryption(body.as_bytes()).unwrap();
    assert_eq!(cfg.rules[0].bucket_key_enabled, Some(true));
    assert_eq!(
        cfg.rules[0].blocked_encryption_types,
        [EncryptionType::None]
    );
}

#[test]
fn structure_errors_are_malformed_xml() {
    let aes = "<ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm>\
               </ApplyServerSideEncryptionByDefault>";
    for body in [
        String::new(),
        "not xml".into(),
        "<ServerSideEncryptionConfiguration/>".into(),
        "<ServerSideEncryptionConfiguration></ServerSideEncryptionConfiguration>".into(),
        format!("<Other><Rule>{aes}</Rule></Other>"),
        // Two rules.
        format!("<ServerSideEncryptionConfiguration><Rule>{aes}</Rule><Rule>{aes}</Rule></ServerSideEncryptionConfiguration>"),
        format!("<ServerSideEncryptionConfiguration><Rules>{aes}</Rules></ServerSideEncryptionConfiguration>"),
        // A rule without its default.
        doc(""),
        doc("<BucketKeyEnabled>false</BucketKeyEnabled>"),
        // A default without an algorithm, or with one S3 does not know.
        by_default(""),
        by_default("<KMSMasterKeyID>k</KMSMasterKeyID>"),
        by_default("<SSEAlgorithm>AES128</SSEAlgorithm>"),
        by_default("<SSEAlgorithm>aes256</SSEAlgorithm>"),
        by_default("<SSEAlgorithm></SSEAlgorithm>"),
        by_default("<SSEAlgorithm>KMS</SSEAlgorithm>"),
        // Twice, unknown, not a boolean, text where elements belong.
        by_default("<SSEAlgorithm>AES256</SSEAlgorithm><SSEAlgorithm>AES256</SSEAlgorithm>"),
        by_default("<SSEAlgorithm>AES256</SSEAlgorithm><Other/>"),
        doc(&format!("{aes}{aes}")),
        doc(&format!("{aes}<BucketKeyEnabled>yes</BucketKeyEnabled>")),
        doc(&format!("{aes}<BucketKeyEnabled>true</BucketKeyEnabled><BucketKeyEnabled>true</BucketKeyEnabled>")),
        doc(&format!("{aes}<Unknown>1</Unknown>")),
        doc(&format!("{aes}text")),
        doc(&format!("{aes}<BlockedEncryptionTypes/>")),
        doc(&format!("{aes}<BlockedEncryptionTypes><EncryptionType>SSE-S3</EncryptionType></BlockedEncryptionTypes>")),
    ] {
        assert!(
            matches!(parse_encryption(body.as_bytes()), Err(S3Error::MalformedXML)),
            "{body}"
        );
    }
}

#[test]
fn kms_is_refused_and_a_key_needs_kms() {
    for algorithm in ["aws:kms", "aws:kms:dsse"] {
        let body = by_default(&format!("<SSEAlgorithm>{algorithm}</SSEAlgorithm>"));
        assert_eq!(
            invalid_argument(parse_encryption(body.as_bytes())),
            KMS_UNAVAILABLE
        );
        let body = by_default(&format!(
            "<SSEAlgorithm>{algorithm}</SSEAlgorithm><KMSMasterKeyID>arn:aws:kms:k</KMSMasterKeyID>"
        ));
        assert_eq!(
            invalid_argument(parse_encryption(body.as_bytes())),
            KMS_UNAVAILABLE
        );
    }
    for key in ["<KMSMasterKeyID>k</KMSMasterKeyID>", "<KMSMasterKeyID/>"] {
        let body = by_default(&format!("<SSEAlgorithm>AES256</SSEAlgorithm>{key}"));
        assert_eq!(
            invalid_argument(parse_encryption(body.as_bytes())),
            "a KMSMasterKeyID is not applicable if the default sse algorithm is not aws:kms or aws:kms:dsse"
        );
    }
}

#[test]
fn blocking_sse_c_is_not_implemented() {
    let body = doc(
        "<ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm>\
         </ApplyServerSideEncryptionByDefault><BlockedEncryptionTypes>\
         <EncryptionType>SSE-C</EncryptionType></BlockedEncryptionTypes>",
    );
    assert!(matches!(
        parse_encryption(body.as_bytes()),
        Err(S3Error::NotImplemented)
    ));
}

#[test]
fn get_renders_what_aws_answers_and_reads_back() {
    let cfg =
        parse_encryption(by_default("<SSEAlgorithm>AES256</SSEAlgorithm>").as_bytes()).unwrap();
    let out = render_encryption(&cfg).unwrap();
    assert_eq!(
        out,
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ServerSideEncryptionConfiguration xmlns=\"{NS}\">\
             <Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm>\
             </ApplyServerSideEncryptionByDefault><BucketKeyEnabled>false</BucketKeyEnabled></Rule>\
             </ServerSideEncryptionConfiguration>"
        )
    );
    assert_eq!(
        parse_encryption(out.as_bytes()).unwrap().rules[0].bucket_key_enabled,
        Some(false)
    );

    let mut cfg = cfg;
    cfg.rules[0].bucket_key_enabled = Some(true);
    cfg.rules[0].blocked_encryption_types = vec![EncryptionType::None];
    let out = render_encryption(&cfg).unwrap();
    assert!(
        out.contains(
            "<BucketKeyEnabled>true</BucketKeyEnabled><BlockedEncryptionTypes>\
             <EncryptionType>NONE</EncryptionType></BlockedEncryptionTypes></Rule>"
        ),
        "{out}"
    );
    assert_eq!(parse_encryption(out.as_bytes()).unwrap(), cfg);
}
