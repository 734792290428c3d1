//! The ACL codec and evaluation, case by case: canned names and their
//! expansion, grant headers, OSS headers, `AccessControlPolicy` bodies as
//! SDKs send them, resolution against accounts, `allows`, the action
//! maps and OSS's canned view. Rendering round trips are in `s3::acl`
//! and `oss::ops` (this module may not import a dialect).

use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use godwit_common::meta_api::{MetaResult, ObjectRequest, ObjectResponse};
use http::{HeaderName, HeaderValue};
use Canned::*;
use Group::*;
use Permission::*;

use super::*;

const ALICE: &str = "a11ce00000000000000000000000000000000000000000000000000000000001";
const BOB: &str = "b0b0000000000000000000000000000000000000000000000000000000000002";
const CAROL: &str = "ca70100000000000000000000000000000000000000000000000000000000003";
const ALL_USERS: &str = "http://acs.amazonaws.com/groups/global/AllUsers";
const AUTH_USERS: &str = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers";
const LOG_DELIVERY: &str = "http://acs.amazonaws.com/groups/s3/LogDelivery";
const PERMISSIONS: [Permission; 5] = [FullControl, Read, Write, ReadAcp, WriteAcp];

type Grants = Vec<(GranteeRef, Permission)>;
type Pairs<'a> = Vec<(&'a str, &'a str)>;
/// (grantee, granted, needed, caller, ignore_public, allowed)
type AllowCase<'a> = (Grantee, Permission, Permission, Option<&'a str>, bool, bool);

fn id(s: &str) -> GranteeRef {
    GranteeRef::Id(s.to_string())
}

fn email(s: &str) -> GranteeRef {
    GranteeRef::Email(s.to_string())
}

fn grp(g: Group) -> GranteeRef {
    GranteeRef::Group(g)
}

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(
            HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    h
}

/// A result with the error reduced to its S3 code, for tables.
fn code<T>(r: Result<T, S3Error>) -> Result<T, &'static str> {
    r.map_err(|e| e.code())
}

// ---- canned ACLs ----

#[test]
fn canned_names_parse_in_each_dialect() {
    for c in Canned::S3 {
        assert_eq!(Canned::from_s3_name(c.name()), Some(c), "{c:?}");
    }
    for bad in [
        "default",
        "Private",
        "PUBLIC-READ",
        "",
        " private",
        "public",
    ] {
        assert_eq!(Canned::from_s3_name(bad), None, "{bad:?}");
    }
    let oss: &[(&str, bool, Option<Canned>)] = &[
        ("private", false, Some(Private)),
        ("public-read", false, Some(PublicRead)),
        ("public-read-write", false, Some(PublicReadWrite)),
        ("default", false, None),
        ("private", true, Some(Private)),
        ("public-read", true, Some(PublicRead)),
        ("public-read-write", true, Some(PublicReadWrite)),
        ("default", true, Some(OssDefault)),
        ("authenticated-read", true, None),
        ("bucket-owner-full-control", true, None),
        ("Default", true, None),
    ];
    for (name, object, want) in oss {
        assert_eq!(
            Canned::from_oss_name(name, *object),
            *want,
            "{name} {object}"
        );
    }
    assert_eq!(OssDefault.name(), "default");
}

#[test]
fn every_canned_acl_expands_as_aws_documents() {
    let cases: Vec<(Canned, &str, &str, Grants)> = vec![
        (Private, ALICE, BOB, vec![(id(ALICE), FullControl)]),
        (
            PublicRead,
            ALICE,
            BOB,
            vec![(id(ALICE), FullControl), (grp(AllUsers), Read)],
        ),
        (
            PublicReadWrite,
            ALICE,
            BOB,
            vec![
                (id(ALICE), FullControl),
                (grp(AllUsers), Read),
                (grp(AllUsers), Write),
            ],
        ),
        (
            AuthenticatedRead,
            ALICE,
            BOB,
            vec![(id(ALICE), FullControl), (grp(AuthenticatedUsers), Read)],
        ),
        // No EC2 here: the owner alone.
        (AwsExecRead, ALICE, BOB, vec![(id(ALICE), FullControl)]),
        (
            BucketOwnerRead,
            ALICE,
            BOB,
            vec![(id(ALICE), FullControl), (id(BOB), Read)],
        ),
        (
            BucketOwnerRead,
            ALICE,
            ALICE,
            vec![(id(ALICE), FullControl)],
        ),
        (
            BucketOwnerFullControl,
            ALICE,
            BOB,
            vec![(id(ALICE), FullControl), (id(BOB), FullControl)],
        ),
        (
            BucketOwnerFullControl,
            ALICE,
            ALICE,
            vec![(id(ALICE), FullControl)],
        ),
        (
            LogDeliveryWrite,
            ALICE,
            ALICE,
            vec![
                (id(ALICE), FullControl),
                (grp(LogDelivery), Write),
                (grp(LogDelivery), ReadAcp),
            ],
        ),
        (OssDefault, ALICE, BOB, vec![]),
    ];
    for c in Canned::S3 {
        assert!(cases.iter().any(|(k, ..)| *k == c), "{c:?} has no case");
    }
    for (canned, owner, bucket_owner, want) in cases {
        let req = AclRequest::canned(canned);
        assert_eq!(expand(&req, owner, bucket_owner), want, "{canned:?}");
        assert_eq!(is_oss_default(&req), canned == OssDefault, "{canned:?}");
    }
}

#[test]
fn explicit_grants_are_kept_as_given_without_an_owner_grant() {
    let grants = vec![
        (email("bob@example.com"), Read),
        (id(CAROL), WriteAcp),
        (id(CAROL), WriteAcp),
        (grp(AllUsers), Read),
    ];
    let req = AclRequest {
        canned: None,
        grants: grants.clone(),
    };
    assert_eq!(expand(&req, ALICE, BOB), grants);
    assert!(!is_oss_default(&req));
    assert!(expand(&AclRequest::default(), ALICE, BOB).is_empty());
}

// ---- S3 headers ----

#[test]
fn grant_headers_parse_into_grantees() {
    let upper = ALICE.to_ascii_uppercase();
    type Want = Result<Grants, &'static str>;
    type Case<'a> = (&'a str, Vec<(&'a str, String)>, Want);
    let cases: Vec<Case> = vec![
        (
            "quoted id",
            vec![("x-amz-grant-read", format!("id=\"{ALICE}\""))],
            Ok(vec![(id(ALICE), Read)]),
        ),
        (
            "bare id",
            vec![("x-amz-grant-read", format!("id={ALICE}"))],
            Ok(vec![(id(ALICE), Read)]),
        ),
        (
            "upper-case hex is the same id",
            vec![("x-amz-grant-write", format!("id=\"{upper}\""))],
            Ok(vec![(id(ALICE), Write)]),
        ),
        (
            "quoted uri",
            vec![("x-amz-grant-read", format!("uri=\"{ALL_USERS}\""))],
            Ok(vec![(grp(AllUsers), Read)]),
        ),
        (
            "bare uri",
            vec![("x-amz-grant-read-acp", format!("uri={AUTH_USERS}"))],
            Ok(vec![(grp(AuthenticatedUsers), ReadAcp)]),
        ),
        (
            "log delivery",
            vec![("x-amz-grant-write", format!("uri=\"{LOG_DELIVERY}\""))],
            Ok(vec![(grp(LogDelivery), Write)]),
        ),
        (
            "email",
            vec![(
                "x-amz-grant-full-control",
                "emailAddress=\"x@y.com\"".into(),
            )],
            Ok(vec![(email("x@y.com"), FullControl)]),
        ),
        (
            "keys in any case",
            vec![(
                "x-amz-grant-read",
                format!("ID=\"{ALICE}\", EmailAddress=x@y.com, URI={ALL_USERS}"),
            )],
            Ok(vec![
                (id(ALICE), Read),
                (email("x@y.com"), Read),
                (grp(AllUsers), Read),
            ]),
        ),
        (
            "several grantees, mixed quoting and spacing",
            vec![(
                "x-amz-grant-read",
                format!("id=\"{ALICE}\",uri={ALL_USERS} ,  emailAddress = \"c@d.org\""),
            )],
            Ok(vec![
                (id(ALICE), Read),
                (grp(AllUsers), Read),
                (email("c@d.org"), Read),
            ]),
        ),
        (
            "every header, in header-table order",
            vec![
                ("x-amz-grant-write-acp", format!("id={CAROL}")),
                ("x-amz-grant-read-acp", format!("id={BOB}")),
                ("x-amz-grant-write", format!("uri={LOG_DELIVERY}")),
                ("x-amz-grant-read", format!("uri={ALL_USERS}")),
                ("x-amz-grant-full-control", format!("id={ALICE}")),
            ],
            Ok(vec![
                (id(ALICE), FullControl),
                (grp(AllUsers), Read),
                (grp(LogDelivery), Write),
                (id(BOB), ReadAcp),
                (id(CAROL), WriteAcp),
            ]),
        ),
        (
            "a header sent twice",
            vec![
                ("x-amz-grant-read", format!("id={ALICE}")),
                ("x-amz-grant-read", format!("id={BOB}")),
            ],
            Ok(vec![(id(ALICE), Read), (id(BOB), Read)]),
        ),
        (
            "trailing and doubled commas",
            vec![("x-amz-grant-read", format!("id={ALICE},, id={BOB},"))],
            Ok(vec![(id(ALICE), Read), (id(BOB), Read)]),
        ),
        (
            "an empty header grants nothing",
            vec![("x-amz-grant-read", String::new())],
            Ok(vec![]),
        ),
        (
            "no equals sign",
            vec![("x-amz-grant-read", ALICE.into())],
            Err("InvalidArgument"),
        ),
        (
            "unclosed quote",
            vec![("x-amz-grant-read", format!("id=\"{ALICE}"))],
            Err("InvalidArgument"),
        ),
        (
            "unknown key",
            vec![("x-amz-grant-read", "user=\"alice\"".into())],
            Err("InvalidArgument"),
        ),
        (
            "id that is not a canonical id",
            vec![("x-amz-grant-read", "id=\"AKIAIOSFODNN7EXAMPLE\"".into())],
            Err("InvalidArgument"),
        ),
        (
            "unknown group",
            vec![(
                "x-amz-grant-read",
                "uri=\"http://acs.amazonaws.com/groups/global/Everyone\"".into(),
            )],
            Err("InvalidArgument"),
        ),
        (
            "empty value",
            vec![("x-amz-grant-read", "id=\"\"".into())],
            Err("InvalidArgument"),
        ),
        (
            "missing comma",
            vec![(
                "x-amz-grant-read",
                format!("id=\"{ALICE}\" uri=\"{ALL_USERS}\""),
            )],
            Err("InvalidArgument"),
        ),
        (
            "text after a quoted value",
            vec![("x-amz-grant-read", format!("id=\"{ALICE}\"x"))],
            Err("InvalidArgument"),
        ),
    ];
    for (what, pairs, want) in cases {
        let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let got = code(from_s3_headers(&headers(&pairs))).map(|r| {
            let r = r.expect("a grant header makes an ACL request");
            assert_eq!(r.canned, None, "{what}");
            r.grants
        });
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn canned_header_and_its_conflicts() {
    type Want = Result<Option<AclRequest>, &'static str>;
    let grant = format!("id={ALICE}");
    let cases: Vec<(&str, Pairs, Want)> = vec![
        ("no ACL header", vec![], Ok(None)),
        (
            "other headers only",
            vec![("x-amz-meta-acl", "private"), ("x-oss-acl", "private")],
            Ok(None),
        ),
        (
            "canned",
            vec![("x-amz-acl", "public-read")],
            Ok(Some(AclRequest::canned(PublicRead))),
        ),
        (
            "bucket-owner-full-control",
            vec![("x-amz-acl", "bucket-owner-full-control")],
            Ok(Some(AclRequest::canned(BucketOwnerFullControl))),
        ),
        (
            "OSS's default is not S3's",
            vec![("x-amz-acl", "default")],
            Err("InvalidArgument"),
        ),
        (
            "unknown canned",
            vec![("x-amz-acl", "public")],
            Err("InvalidArgument"),
        ),
        (
            "canned twice",
            vec![("x-amz-acl", "private"), ("x-amz-acl", "private")],
            Err("InvalidArgument"),
        ),
        (
            "canned and a grant header",
            vec![("x-amz-acl", "private"), ("x-amz-grant-read", &grant)],
            Err("InvalidRequest"),
        ),
        (
            "canned and an empty grant header",
            vec![("x-amz-acl", "private"), ("x-amz-grant-write-acp", "")],
            Err("InvalidRequest"),
        ),
    ];
    for (what, pairs, want) in cases {
        assert_eq!(code(from_s3_headers(&headers(&pairs))), want, "{what}");
    }
    let err = from_s3_headers(&headers(&[
        ("x-amz-acl", "private"),
        ("x-amz-grant-read", &grant),
    ]))
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Specifying both Canned ACLs and Header Grants is not allowed"
    );
}

// ---- OSS headers ----

#[test]
fn oss_headers_name_a_canned_acl() {
    type Want = Result<Option<AclRequest>, &'static str>;
    let canned = |c| Ok(Some(AclRequest::canned(c)));
    let cases: Vec<(Pairs, bool, Want)> = vec![
        (vec![], true, Ok(None)),
        (vec![], false, Ok(None)),
        (
            vec![("x-oss-object-acl", "default")],
            true,
            canned(OssDefault),
        ),
        (vec![("x-oss-object-acl", "private")], true, canned(Private)),
        (
            vec![("x-oss-object-acl", "public-read")],
            true,
            canned(PublicRead),
        ),
        (
            vec![("x-oss-object-acl", "public-read-write")],
            true,
            canned(PublicReadWrite),
        ),
        (vec![("x-oss-acl", "private")], false, canned(Private)),
        (
            vec![("x-oss-acl", "public-read")],
            false,
            canned(PublicRead),
        ),
        (
            vec![("x-oss-acl", "public-read-write")],
            false,
            canned(PublicReadWrite),
        ),
        // A bucket has no `default`.
        (
            vec![("x-oss-acl", "default")],
            false,
            Err("InvalidArgument"),
        ),
        (vec![("x-oss-acl", "public")], false, Err("InvalidArgument")),
        (vec![("x-oss-object-acl", "")], true, Err("InvalidArgument")),
        (
            vec![("x-oss-object-acl", "authenticated-read")],
            true,
            Err("InvalidArgument"),
        ),
        // Each resource reads its own header only.
        (vec![("x-oss-acl", "public-read")], true, Ok(None)),
        (vec![("x-oss-object-acl", "public-read")], false, Ok(None)),
        (vec![("x-amz-acl", "public-read")], true, Ok(None)),
    ];
    for (pairs, object, want) in cases {
        assert_eq!(
            code(from_oss_headers(&headers(&pairs), object)),
            want,
            "{pairs:?} object={object}"
        );
    }
    let err = from_oss_headers(&headers(&[("x-oss-acl", "bad")]), false).unwrap_err();
    assert_eq!(err.to_string(), "no such bucket access control exists");
    let err = from_oss_headers(&headers(&[("x-oss-object-acl", "bad")]), true).unwrap_err();
    assert_eq!(err.to_string(), "no such object access control exists");
}

// ---- S3 body ----

/// A grant as boto3 writes it (xsi declared on the grantee).
fn boto3_grant(kind: &str, inner: &str, permission: &str) -> String {
    format!(
        "<Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"{kind}\">{inner}</Grantee><Permission>{permission}</Permission></Grant>"
    )
}

/// A document as boto3 writes it: the S3 namespace, grants first, the
/// owner last.
fn boto3_doc(grants: &str) -> String {
    format!(
        "<AccessControlPolicy xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><AccessControlList>{grants}</AccessControlList><Owner><ID>{ALICE}</ID></Owner></AccessControlPolicy>"
    )
}

#[test]
fn access_control_policy_bodies_as_sdks_send_them() {
    type Want = Result<(Option<&'static str>, Grants), &'static str>;
    let cases: Vec<(&str, String, Want)> = vec![
        (
            "boto3, a group",
            boto3_doc(&boto3_grant("Group", &format!("<URI>{ALL_USERS}</URI>"), "READ")),
            Ok((Some(ALICE), vec![(grp(AllUsers), Read)])),
        ),
        (
            "boto3, every grantee type",
            boto3_doc(&[
                boto3_grant(
                    "CanonicalUser",
                    &format!("<ID>{ALICE}</ID><DisplayName>alice</DisplayName>"),
                    "FULL_CONTROL",
                ),
                boto3_grant(
                    "AmazonCustomerByEmail",
                    "<EmailAddress>bob@example.com</EmailAddress>",
                    "WRITE",
                ),
                boto3_grant("Group", &format!("<URI>{AUTH_USERS}</URI>"), "READ_ACP"),
                boto3_grant("Group", &format!("<URI>{LOG_DELIVERY}</URI>"), "WRITE_ACP"),
            ]
            .concat()),
            Ok((
                Some(ALICE),
                vec![
                    (id(ALICE), FullControl),
                    (email("bob@example.com"), Write),
                    (grp(AuthenticatedUsers), ReadAcp),
                    (grp(LogDelivery), WriteAcp),
                ],
            )),
        ),
        (
            "AWS's own layout: declaration, owner first, pretty-printed",
            format!(
                r#"<?xml version="1.0" encoding="UTF-8"?>
<AccessControlPolicy xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Owner>
    <ID> {ALICE} </ID>
    <DisplayName>alice</DisplayName>
  </Owner>
  <AccessControlList>
    <!-- the owner -->
    <Grant>
      <Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser">
        <ID>{BOB}</ID>
      </Grantee>
      <Permission> READ </Permission>
    </Grant>
  </AccessControlList>
</AccessControlPolicy>"#
            ),
            Ok((Some(ALICE), vec![(id(BOB), Read)])),
        ),
        (
            "xsi declared on the root, no namespace",
            format!(
                "<AccessControlPolicy xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"><AccessControlList><Grant><Grantee xsi:type=\"Group\"><URI>{ALL_USERS}</URI></Grantee><Permission>WRITE</Permission></Grant></AccessControlList></AccessControlPolicy>"
            ),
            Ok((None, vec![(grp(AllUsers), Write)])),
        ),
        (
            "another prefix for the XSI namespace",
            format!(
                "<AccessControlPolicy><AccessControlList><Grant><Grantee xmlns:i=\"http://www.w3.org/2001/XMLSchema-instance\" i:type=\"CanonicalUser\"><ID>{BOB}</ID></Grantee><Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>"
            ),
            Ok((None, vec![(id(BOB), Read)])),
        ),
        (
            "xsi prefix never declared",
            format!(
                "<AccessControlPolicy><AccessControlList><Grant><Grantee xsi:type=\"CanonicalUser\"><ID>{BOB}</ID></Grantee><Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>"
            ),
            Ok((None, vec![(id(BOB), Read)])),
        ),
        (
            "prefixed S3 elements",
            format!(
                "<s3:AccessControlPolicy xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"><s3:Owner><s3:ID>{ALICE}</s3:ID></s3:Owner><s3:AccessControlList><s3:Grant><s3:Grantee xsi:type=\"Group\"><s3:URI>{ALL_USERS}</s3:URI></s3:Grantee><s3:Permission>READ</s3:Permission></s3:Grant></s3:AccessControlList></s3:AccessControlPolicy>"
            ),
            Ok((Some(ALICE), vec![(grp(AllUsers), Read)])),
        ),
        (
            "an empty list: no grants",
            format!("<AccessControlPolicy><Owner><ID>{ALICE}</ID></Owner><AccessControlList/></AccessControlPolicy>"),
            Ok((Some(ALICE), vec![])),
        ),
        (
            "unknown elements are skipped",
            boto3_doc(&format!(
                "<Grant><Note>x</Note><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"CanonicalUser\"><ID>{BOB}</ID><Extra/></Grantee><Permission>READ</Permission></Grant>"
            )),
            Ok((Some(ALICE), vec![(id(BOB), Read)])),
        ),
        (
            "entities in text",
            boto3_doc(&boto3_grant(
                "AmazonCustomerByEmail",
                "<EmailAddress>a&amp;b@example.com</EmailAddress>",
                "READ",
            )),
            Ok((Some(ALICE), vec![(email("a&b@example.com"), Read)])),
        ),
        ("not XML", "nope".into(), Err("MalformedACLError")),
        ("empty body", String::new(), Err("MalformedACLError")),
        (
            "another root",
            "<AccessControlList></AccessControlList>".into(),
            Err("MalformedACLError"),
        ),
        (
            "two roots",
            format!("{0}{0}", boto3_doc("")),
            Err("MalformedACLError"),
        ),
        (
            "unclosed",
            "<AccessControlPolicy><AccessControlList>".into(),
            Err("MalformedACLError"),
        ),
        (
            "mismatched end tag",
            "<AccessControlPolicy><AccessControlList></Owner></AccessControlPolicy>".into(),
            Err("MalformedACLError"),
        ),
        (
            "no AccessControlList",
            format!("<AccessControlPolicy><Owner><ID>{ALICE}</ID></Owner></AccessControlPolicy>"),
            Err("MalformedACLError"),
        ),
        (
            "two AccessControlLists",
            "<AccessControlPolicy><AccessControlList/><AccessControlList/></AccessControlPolicy>"
                .into(),
            Err("MalformedACLError"),
        ),
        (
            "Owner without ID",
            "<AccessControlPolicy><Owner><DisplayName>a</DisplayName></Owner><AccessControlList/></AccessControlPolicy>".into(),
            Err("MalformedACLError"),
        ),
        (
            "grantee without xsi:type",
            boto3_doc(&format!(
                "<Grant><Grantee><ID>{BOB}</ID></Grantee><Permission>READ</Permission></Grant>"
            )),
            Err("MalformedACLError"),
        ),
        (
            "type outside the XSI namespace",
            boto3_doc(&format!(
                "<Grant><Grantee type=\"CanonicalUser\"><ID>{BOB}</ID></Grantee><Permission>READ</Permission></Grant>"
            )),
            Err("MalformedACLError"),
        ),
        (
            "unknown xsi:type",
            boto3_doc(&boto3_grant("Role", &format!("<ID>{BOB}</ID>"), "READ")),
            Err("MalformedACLError"),
        ),
        (
            "CanonicalUser without ID",
            boto3_doc(&boto3_grant(
                "CanonicalUser",
                "<DisplayName>bob</DisplayName>",
                "READ",
            )),
            Err("MalformedACLError"),
        ),
        (
            "Group without URI",
            boto3_doc(&boto3_grant("Group", &format!("<ID>{BOB}</ID>"), "READ")),
            Err("MalformedACLError"),
        ),
        (
            "email grantee without EmailAddress",
            boto3_doc(&boto3_grant("AmazonCustomerByEmail", "", "READ")),
            Err("MalformedACLError"),
        ),
        (
            "unknown permission",
            boto3_doc(&boto3_grant("Group", &format!("<URI>{ALL_USERS}</URI>"), "read")),
            Err("MalformedACLError"),
        ),
        (
            "no permission",
            boto3_doc(&format!(
                "<Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"Group\"><URI>{ALL_USERS}</URI></Grantee></Grant>"
            )),
            Err("MalformedACLError"),
        ),
        (
            "two permissions",
            boto3_doc(&boto3_grant(
                "Group",
                &format!("<URI>{ALL_USERS}</URI>"),
                "READ</Permission><Permission>WRITE",
            )),
            Err("MalformedACLError"),
        ),
        (
            "two grantees in a grant",
            boto3_doc(&format!(
                "<Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"Group\"><URI>{ALL_USERS}</URI></Grantee><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"Group\"><URI>{ALL_USERS}</URI></Grantee><Permission>READ</Permission></Grant>"
            )),
            Err("MalformedACLError"),
        ),
        (
            "a DOCTYPE",
            format!("<!DOCTYPE a>{}", boto3_doc("")),
            Err("MalformedACLError"),
        ),
        (
            "an id that is not canonical",
            boto3_doc(&boto3_grant("CanonicalUser", "<ID>alice</ID>", "READ")),
            Err("InvalidArgument"),
        ),
        (
            "an unknown group",
            boto3_doc(&boto3_grant(
                "Group",
                "<URI>http://acs.amazonaws.com/groups/global/Everyone</URI>",
                "READ",
            )),
            Err("InvalidArgument"),
        ),
    ];
    for (what, body, want) in cases {
        let got = code(from_xml(body.as_bytes())).map(|x| {
            assert_eq!(x.request.canned, None, "{what}");
            (x.owner_id, x.request.grants)
        });
        let want = want.map(|(owner, grants)| (owner.map(str::to_string), grants));
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn an_acl_body_holds_at_most_100_grants() {
    let grant = boto3_grant("Group", &format!("<URI>{ALL_USERS}</URI>"), "READ");
    let parsed = from_xml(boto3_doc(&grant.repeat(MAX_GRANTS)).as_bytes()).unwrap();
    assert_eq!(parsed.request.grants.len(), MAX_GRANTS);
    assert!(matches!(
        from_xml(boto3_doc(&grant.repeat(MAX_GRANTS + 1)).as_bytes()),
        Err(S3Error::MalformedACLError)
    ));
}

// ---- resolution ----

/// Meta's account reads over a fixed set of accounts, counted; one
/// legacy owner (an access key id) and one email whose lookup fails.
struct Accounts {
    accounts: Vec<Account>,
    calls: AtomicUsize,
}

const LEGACY_OWNER: &str = "AKIDLEGACYOWNER";
const DOWN_EMAIL: &str = "down@example.com";

fn account(id: &str, name: &str, email: Option<&str>) -> Account {
    Account {
        id: id.into(),
        name: name.into(),
        email: email.map(str::to_string),
        created_ms: 0,
        is_root: false,
    }
}

fn accounts() -> Accounts {
    Accounts {
        accounts: vec![
            account(ALICE, "alice", Some("alice@example.com")),
            account(BOB, "bob", Some("bob@example.com")),
            account(CAROL, "carol", None),
        ],
        calls: AtomicUsize::new(0),
    }
}

#[async_trait]
impl ObjectMeta for Accounts {
    async fn call(&self, req: ObjectRequest) -> MetaResult<ObjectResponse> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let found = match req {
            ObjectRequest::GetAccount { owner } if owner == LEGACY_OWNER => {
                self.accounts.iter().find(|a| a.id == ALICE)
            }
            ObjectRequest::GetAccount { owner } => self.accounts.iter().find(|a| a.id == owner),
            ObjectRequest::FindAccountByEmail { email } if email == DOWN_EMAIL => {
                return Err(MetaError::Unavailable("no leader".into()));
            }
            ObjectRequest::FindAccountByEmail { email } => self.accounts.iter().find(|a| {
                a.email
                    .as_deref()
                    .is_some_and(|e| e.eq_ignore_ascii_case(&email))
            }),
            other => panic!("resolve asked meta {}", other.variant_name()),
        };
        found
            .cloned()
            .map(ObjectResponse::Account)
            .ok_or(MetaError::NoSuchAccount)
    }
}

fn stored(grants: &[(Grantee, Permission)]) -> Acl {
    Acl {
        grants: grants
            .iter()
            .map(|(grantee, permission)| Grant {
                grantee: grantee.clone(),
                permission: *permission,
            })
            .collect(),
    }
}

#[tokio::test]
async fn resolve_finds_accounts_keeps_order_and_drops_repeats() {
    let meta = accounts();
    let acl = resolve(
        vec![
            (id(ALICE), FullControl),
            (email("BOB@example.com"), Read),
            (grp(AllUsers), Read),
            // The same grants again, by another name or the same one.
            (id(BOB), Read),
            (id(ALICE), FullControl),
            (grp(AllUsers), Read),
            (id(BOB), WriteAcp),
            (email("bob@example.com"), Read),
        ],
        &meta,
    )
    .await
    .unwrap();
    assert_eq!(
        acl,
        stored(&[
            (Grantee::Account(ALICE.into()), FullControl),
            (Grantee::Account(BOB.into()), Read),
            (Grantee::Group(AllUsers), Read),
            (Grantee::Account(BOB.into()), WriteAcp),
        ])
    );
    // Each distinct grantee asked once: ALICE, BOB@, BOB, bob@.
    assert_eq!(meta.calls.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn resolve_refuses_what_no_account_has() {
    type Want = Result<(), &'static str>;
    let cases: Vec<(&str, GranteeRef, Want)> = vec![
        (
            "unknown email",
            email("nobody@example.com"),
            Err("UnresolvableGrantByEmailAddress"),
        ),
        (
            "unknown canonical id",
            id(&"f".repeat(64)),
            Err("InvalidArgument"),
        ),
        (
            "meta unavailable",
            email(DOWN_EMAIL),
            Err("ServiceUnavailable"),
        ),
        ("known email", email("alice@example.com"), Ok(())),
    ];
    for (what, who, want) in cases {
        let got = resolve(vec![(who, Read)], &accounts()).await;
        assert_eq!(code(got.map(|_| ())), want, "{what}");
    }
    let err = resolve(vec![(id(&"f".repeat(64)), Read)], &accounts())
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "Invalid id");
}

/// A bucket stored before accounts has an access key id as its owner:
/// its canned ACL names the owner's account by canonical id.
#[tokio::test]
async fn legacy_owner_resolves_to_its_account() {
    let grants = expand(&AclRequest::canned(PublicRead), LEGACY_OWNER, LEGACY_OWNER);
    let acl = resolve(grants, &accounts()).await.unwrap();
    assert_eq!(
        acl,
        stored(&[
            (Grantee::Account(ALICE.into()), FullControl),
            (Grantee::Group(AllUsers), Read),
        ])
    );
}

#[tokio::test]
async fn resolve_caps_an_acl_at_100_grants_before_any_lookup() {
    let meta = accounts();
    let many: Vec<_> = (0..=MAX_GRANTS).map(|_| (id(ALICE), Read)).collect();
    assert!(matches!(
        resolve(many, &meta).await,
        Err(S3Error::MalformedACLError)
    ));
    assert_eq!(meta.calls.load(Ordering::SeqCst), 0);
    let enough: Vec<_> = (0..MAX_GRANTS).map(|_| (id(ALICE), Read)).collect();
    let acl = resolve(enough, &meta).await.unwrap();
    assert_eq!(acl, stored(&[(Grantee::Account(ALICE.into()), Read)]));
}

// ---- evaluation ----

#[test]
fn allows_each_grantee_what_its_grant_holds() {
    let anon = None;
    let alice = Some(ALICE);
    let bob = Some(BOB);
    let cases: Vec<AllowCase> = vec![
        // An account: that caller only, public blocks or not.
        (
            Grantee::Account(ALICE.into()),
            Read,
            Read,
            alice,
            false,
            true,
        ),
        (
            Grantee::Account(ALICE.into()),
            Read,
            Read,
            alice,
            true,
            true,
        ),
        (
            Grantee::Account(ALICE.into()),
            Read,
            Read,
            bob,
            false,
            false,
        ),
        (
            Grantee::Account(ALICE.into()),
            Read,
            Read,
            anon,
            false,
            false,
        ),
        (
            Grantee::Account(ALICE.into()),
            Read,
            Write,
            alice,
            false,
            false,
        ),
        (
            Grantee::Account(ALICE.into()),
            WriteAcp,
            ReadAcp,
            alice,
            false,
            false,
        ),
        // AllUsers: everyone, signed or not, unless public ACLs are ignored.
        (Grantee::Group(AllUsers), Read, Read, anon, false, true),
        (Grantee::Group(AllUsers), Read, Read, bob, false, true),
        (Grantee::Group(AllUsers), Read, Read, anon, true, false),
        (Grantee::Group(AllUsers), Read, Read, bob, true, false),
        (Grantee::Group(AllUsers), Write, Read, anon, false, false),
        (
            Grantee::Group(AllUsers),
            FullControl,
            WriteAcp,
            anon,
            false,
            true,
        ),
        (
            Grantee::Group(AllUsers),
            FullControl,
            WriteAcp,
            anon,
            true,
            false,
        ),
        // AuthenticatedUsers: every signed caller, unless ignored.
        (
            Grantee::Group(AuthenticatedUsers),
            Read,
            Read,
            anon,
            false,
            false,
        ),
        (
            Grantee::Group(AuthenticatedUsers),
            Read,
            Read,
            bob,
            false,
            true,
        ),
        (
            Grantee::Group(AuthenticatedUsers),
            Read,
            Read,
            bob,
            true,
            false,
        ),
        (
            Grantee::Group(AuthenticatedUsers),
            ReadAcp,
            Read,
            bob,
            false,
            false,
        ),
        (
            Grantee::Group(AuthenticatedUsers),
            FullControl,
            Write,
            alice,
            false,
            true,
        ),
        // LogDelivery: nobody.
        (
            Grantee::Group(LogDelivery),
            FullControl,
            Write,
            anon,
            false,
            false,
        ),
        (Grantee::Group(LogDelivery), Write, Write, bob, false, false),
        (
            Grantee::Group(LogDelivery),
            ReadAcp,
            ReadAcp,
            alice,
            false,
            false,
        ),
    ];
    for (grantee, granted, needed, caller, ignore_public, want) in cases {
        let acl = stored(&[(grantee.clone(), granted)]);
        assert_eq!(
            allows(&acl, caller, needed, ignore_public),
            want,
            "{grantee:?} {granted:?} needed {needed:?} by {caller:?} ignore_public={ignore_public}"
        );
    }
}

/// Every pairing: a grant holds its own permission, FULL_CONTROL holds
/// all five, nothing else holds anything; the matching of callers is
/// the same whatever the permission.
#[test]
fn every_group_and_permission_pairing() {
    let grantees = [
        Grantee::Account(ALICE.into()),
        Grantee::Group(AllUsers),
        Grantee::Group(AuthenticatedUsers),
        Grantee::Group(LogDelivery),
    ];
    for grantee in &grantees {
        for caller in [None, Some(ALICE), Some(BOB)] {
            for ignore_public in [false, true] {
                let matches = match grantee {
                    Grantee::Account(id) => caller == Some(id.as_str()),
                    Grantee::Group(AllUsers) => !ignore_public,
                    Grantee::Group(AuthenticatedUsers) => !ignore_public && caller.is_some(),
                    Grantee::Group(LogDelivery) => false,
                };
                for granted in PERMISSIONS {
                    let acl = stored(&[(grantee.clone(), granted)]);
                    for needed in PERMISSIONS {
                        let holds = granted == needed || granted == FullControl;
                        assert_eq!(
                            allows(&acl, caller, needed, ignore_public),
                            matches && holds,
                            "{grantee:?} {granted:?} needed {needed:?} by {caller:?} ignore_public={ignore_public}"
                        );
                    }
                }
            }
        }
    }
    assert!(!allows(&Acl::default(), Some(ALICE), Read, false));
}

#[test]
fn iam_actions_map_to_the_acl_permission_that_grants_them() {
    // (action, bucket ACL permission, object ACL permission)
    let cases: &[(&str, Option<Permission>, Option<Permission>)] = &[
        ("s3:ListBucket", Some(Read), None),
        ("s3:ListBucketVersions", Some(Read), None),
        ("s3:ListBucketMultipartUploads", Some(Read), None),
        ("s3:PutObject", Some(Write), None),
        ("s3:DeleteObject", Some(Write), None),
        ("s3:DeleteObjectVersion", Some(Write), None),
        ("s3:AbortMultipartUpload", Some(Write), None),
        ("s3:ListMultipartUploadParts", Some(Write), None),
        ("s3:GetBucketAcl", Some(ReadAcp), None),
        ("s3:PutBucketAcl", Some(WriteAcp), None),
        ("s3:GetObject", None, Some(Read)),
        ("s3:GetObjectVersion", None, Some(Read)),
        ("s3:GetObjectTorrent", None, Some(Read)),
        ("s3:GetObjectVersionTorrent", None, Some(Read)),
        ("s3:GetObjectAcl", None, Some(ReadAcp)),
        ("s3:GetObjectVersionAcl", None, Some(ReadAcp)),
        ("s3:PutObjectAcl", None, Some(WriteAcp)),
        ("s3:PutObjectVersionAcl", None, Some(WriteAcp)),
        // Granted by no ACL: the owner's (or a policy's) alone.
        ("s3:ListAllMyBuckets", None, None),
        ("s3:CreateBucket", None, None),
        ("s3:DeleteBucket", None, None),
        ("s3:GetBucketPolicy", None, None),
        ("s3:PutBucketPolicy", None, None),
        ("s3:GetBucketVersioning", None, None),
        ("s3:PutBucketOwnershipControls", None, None),
        ("s3:PutBucketPublicAccessBlock", None, None),
        ("s3:GetObjectTagging", None, None),
        ("s3:PutObjectTagging", None, None),
        ("s3:GetObjectAttributes", None, None),
        ("s3:ReplicateObject", None, None),
        ("s3:getobject", None, None),
        ("", None, None),
    ];
    // The names are the router's (a misspelt one would never match).
    let router = include_str!("../router.rs");
    for (action, bucket, object) in cases {
        assert_eq!(bucket_permission(action), *bucket, "{action} on a bucket");
        assert_eq!(object_permission(action), *object, "{action} on an object");
        if bucket.is_some() || object.is_some() {
            assert!(
                router.contains(&format!("\"{action}\"")),
                "{action} is no action of router::iam_action"
            );
        }
    }
}

#[test]
fn public_grants_in_every_form() {
    let public = [PublicRead, PublicReadWrite, AuthenticatedRead];
    for c in Canned::S3.into_iter().chain([OssDefault]) {
        let req = AclRequest::canned(c);
        let want = public.contains(&c);
        assert_eq!(is_public(&req), want, "{c:?} request");
        assert_eq!(
            is_public(expand(&req, ALICE, BOB).as_slice()),
            want,
            "{c:?} expanded"
        );
    }
    let grants = |g: Grants| AclRequest {
        canned: None,
        grants: g,
    };
    assert!(is_public(&grants(vec![
        (id(ALICE), FullControl),
        (grp(AllUsers), ReadAcp)
    ])));
    assert!(is_public(&grants(vec![(grp(AuthenticatedUsers), Write)])));
    assert!(!is_public(&grants(vec![
        (grp(LogDelivery), Write),
        (email("a@b"), Read)
    ])));
    assert!(!is_public(&Acl::private(ALICE)));
    assert!(is_public(&stored(&[(
        Grantee::Group(AuthenticatedUsers),
        Read
    )])));
    assert!(!is_public(&stored(&[(Grantee::Group(LogDelivery), Write)])));
}

#[test]
fn oss_names_of_stored_acls() {
    let all = |p| (Grantee::Group(AllUsers), p);
    let owner = (Grantee::Account(ALICE.into()), FullControl);
    let cases: Vec<(Option<Acl>, bool, &str)> = vec![
        (None, true, "default"),
        (None, false, "private"),
        (Some(Acl::private(ALICE)), true, "private"),
        (Some(Acl::private(ALICE)), false, "private"),
        (
            Some(stored(&[owner.clone(), all(Read)])),
            false,
            "public-read",
        ),
        (
            Some(stored(&[owner.clone(), all(Read)])),
            true,
            "public-read",
        ),
        (
            Some(stored(&[owner.clone(), all(Read), all(Write)])),
            false,
            "public-read-write",
        ),
        (Some(stored(&[all(Write)])), true, "public-read-write"),
        (
            Some(stored(&[all(FullControl)])),
            false,
            "public-read-write",
        ),
        (Some(stored(&[all(ReadAcp)])), false, "private"),
        // OSS has no name for grants to signed callers only.
        (
            Some(stored(&[
                owner.clone(),
                (Grantee::Group(AuthenticatedUsers), Read),
            ])),
            false,
            "private",
        ),
        (Some(Acl::default()), true, "private"),
    ];
    for (acl, object, want) in cases {
        assert_eq!(
            oss_name(acl.as_ref(), object),
            want,
            "{acl:?} object={object}"
        );
    }
}

#[test]
fn views_name_account_grantees_and_give_back_the_acl() {
    let acl = stored(&[
        (Grantee::Account(ALICE.into()), FullControl),
        (Grantee::Account(CAROL.into()), Read),
        (Grantee::Group(AllUsers), Read),
    ]);
    let grants = view_grants(&acl, |id| (id == ALICE).then(|| "alice".to_string()));
    let names: Vec<Option<&str>> = grants.iter().map(|g| g.display_name.as_deref()).collect();
    assert_eq!(names, [Some("alice"), None, None]);
    let mut view = AclView {
        owner: Owner::new(ALICE, "alice"),
        grants,
        object: true,
        own_acl: true,
        version_id: None,
    };
    assert_eq!(view.acl(), Some(acl));
    view.own_acl = false;
    assert_eq!(view.acl(), None);
    let owner_only = AclView::owner_full_control(Owner::new(BOB, "bob"), false, None);
    assert_eq!(owner_only.acl(), Some(Acl::private(BOB)));
    assert_eq!(owner_only.grants[0].display_name.as_deref(), Some("bob"));
}
