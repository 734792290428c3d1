//! Bucket policies drawn from AWS's documented examples
//! (https://docs.aws.amazon.com/AmazonS3/latest/userguide/example-bucket-policies.html
//! and the IAM condition operator reference), each row a request and the
//! decision S3 would reach; then the policies S3 refuses, with the
//! MalformedPolicy message; then the public / not public rule.

use std::borrow::Cow;
use std::collections::HashMap;

use super::{Decision, Policy, Principal, Request, MAX_POLICY_SIZE};

const BUCKET: &str = "amzn-s3-demo-bucket";
/// The canonical id in AWS's documentation.
const ALICE: &str = "79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be";
const BOB: &str = "0b1d2c3e4f5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

const ANON: Principal<'static> = Principal::Anonymous;
const A: Principal<'static> = Principal::Account { id: ALICE };
const B: Principal<'static> = Principal::Account { id: BOB };

const OBJ: &str = "arn:aws:s3:::amzn-s3-demo-bucket/photos/cat.jpg";
const BKT: &str = "arn:aws:s3:::amzn-s3-demo-bucket";

use Decision::{Allow, Deny, NotApplicable as NA};

/// One request against one policy, and S3's answer.
struct Case {
    name: &'static str,
    policy: &'static str,
    principal: Principal<'static>,
    action: &'static str,
    resource: &'static str,
    context: &'static [(&'static str, &'static [&'static str])],
    want: Decision,
}

#[allow(clippy::too_many_arguments)]
const fn case(
    name: &'static str,
    policy: &'static str,
    principal: Principal<'static>,
    action: &'static str,
    resource: &'static str,
    context: &'static [(&'static str, &'static [&'static str])],
    want: Decision,
) -> Case {
    Case {
        name,
        policy,
        principal,
        action,
        resource,
        context,
        want,
    }
}

fn parse(json: &str) -> Policy {
    Policy::parse(json, BUCKET).unwrap_or_else(|e| panic!("{e}: {json}"))
}

fn decide(policy: &Policy, c: &Case) -> Decision {
    decide_with(policy, c, |p, r| p.evaluate(r))
}

fn decide_with(
    policy: &Policy,
    c: &Case,
    evaluate: impl Fn(&Policy, &Request<'_>) -> Decision,
) -> Decision {
    let map: HashMap<&str, &[&str]> = c.context.iter().copied().collect();
    // The values of the keys the policy tests, in its order, as the
    // gateway gives them.
    let context: Vec<Vec<Cow<str>>> = policy
        .keys()
        .iter()
        .map(|k| {
            let values = map.get(k.as_str()).copied().unwrap_or_default();
            values.iter().map(|v| Cow::Borrowed(*v)).collect()
        })
        .collect();
    evaluate(
        policy,
        &Request {
            principal: c.principal,
            action: c.action,
            resource: c.resource,
            context: &context,
            // As the gateway gives it: the caller's address, parsed.
            source_ip: map
                .get("aws:sourceip")
                .and_then(|v| v.first())
                .and_then(|ip| ip.parse::<std::net::IpAddr>().ok())
                .map(|ip| ip.to_canonical()),
        },
    )
}

// ---- the policies ----

/// "Granting read-only permission to a public anonymous user".
const PUBLIC_READ: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{
    "Sid": "PublicRead",
    "Effect": "Allow",
    "Principal": "*",
    "Action": ["s3:GetObject", "s3:GetObjectVersion"],
    "Resource": ["arn:aws:s3:::amzn-s3-demo-bucket/*"]
  }]
}"#;

/// "Granting permissions to multiple accounts", by root ARN.
const CROSS_ACCOUNT_ARN: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{
    "Sid": "AddCannedAcl",
    "Effect": "Allow",
    "Principal": {"AWS": ["arn:aws:iam::0b1d2c3e4f5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0:root"]},
    "Action": ["s3:PutObject", "s3:PutObjectAcl"],
    "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*",
    "Condition": {"StringEquals": {"s3:x-amz-acl": ["public-read"]}}
  }]
}"#;

/// The same grant by bare account id, by user ARN and by canonical id.
const CROSS_ACCOUNT_ID: &str = r#"{
  "Statement": {
    "Effect": "Allow",
    "Principal": {"AWS": "0b1d2c3e4f5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"},
    "Action": "s3:ListBucket",
    "Resource": "arn:aws:s3:::amzn-s3-demo-bucket"
  }
}"#;
const CROSS_ACCOUNT_USER: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{
    "Effect": "Allow",
    "Principal": {"AWS": "arn:aws:iam::0b1d2c3e4f5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0:user/Akua"},
    "Action": ["s3:GetObject", "s3:GetBucketLocation", "s3:ListBucket"],
    "Resource": ["arn:aws:s3:::amzn-s3-demo-bucket/*", "arn:aws:s3:::amzn-s3-demo-bucket"]
  }]
}"#;
const CANONICAL_USER: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{
    "Effect": "Allow",
    "Principal": {"CanonicalUser": "79A59DF900B949E55D96A1E698FBACEDFD6E09D98EACF8F8D5218E7CD47EF2BE"},
    "Action": "s3:GetObject",
    "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*"
  }]
}"#;

/// "Managing access based on HTTP or HTTPS requests" (with a public read).
const DENY_INSECURE: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [
    {"Sid": "Read", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
     "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*"},
    {"Sid": "RestrictToTLSRequestsOnly", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
     "Resource": ["arn:aws:s3:::amzn-s3-demo-bucket", "arn:aws:s3:::amzn-s3-demo-bucket/*"],
     "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
  ]
}"#;

/// "Allowing IPv4 and IPv6 addresses".
const SOURCE_IP: &str = r#"{
  "Id": "PolicyId2",
  "Version": "2012-10-17",
  "Statement": [{
    "Sid": "AllowIPmix",
    "Effect": "Allow",
    "Principal": "*",
    "Action": "s3:*",
    "Resource": ["arn:aws:s3:::amzn-s3-demo-bucket", "arn:aws:s3:::amzn-s3-demo-bucket/*"],
    "Condition": {
      "IpAddress": {"aws:SourceIp": ["192.0.2.0/24", "2001:DB8:1234:5678::/64"]},
      "NotIpAddress": {"aws:SourceIp": ["203.0.113.0/24", "2001:DB8:1234:5678:ABCD::/80"]}
    }
  }]
}"#;

/// "Restricting access to specific IP addresses": deny everyone else.
const DENY_OUTSIDE_IP: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{
    "Sid": "IPAllow",
    "Effect": "Deny",
    "Principal": "*",
    "Action": "s3:*",
    "Resource": ["arn:aws:s3:::amzn-s3-demo-bucket", "arn:aws:s3:::amzn-s3-demo-bucket/*"],
    "Condition": {"NotIpAddress": {"aws:SourceIp": ["192.0.2.0/24", "2001:db8::1"]}}
  }]
}"#;

/// "Restricting access to a specific HTTP referer".
const REFERER: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{
    "Sid": "Allow only GET requests originating from www.example.com and example.com.",
    "Effect": "Allow",
    "Principal": "*",
    "Action": ["s3:GetObject", "s3:GetObjectVersion"],
    "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*",
    "Condition": {"StringLike": {"aws:Referer": ["http://www.example.com/*", "http://example.com/*"]}}
  }]
}"#;

/// "Managing user access to specific folders": list the root and home/,
/// and everything under home/JohnDoe/.
const PREFIX: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [
    {"Sid": "AllowRootAndHomeListingOfCompanyBucket", "Effect": "Allow",
     "Principal": {"AWS": "0b1d2c3e4f5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"},
     "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::amzn-s3-demo-bucket",
     "Condition": {"StringEquals": {"s3:prefix": ["", "home/"], "s3:delimiter": ["/"]}}},
    {"Sid": "AllowListingOfUserFolder", "Effect": "Allow",
     "Principal": {"AWS": "0b1d2c3e4f5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"},
     "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::amzn-s3-demo-bucket",
     "Condition": {"StringLike": {"s3:prefix": ["home/JohnDoe/*"]}}},
    {"Sid": "DenyListingWithoutPrefix", "Effect": "Deny", "Principal": "*",
     "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::amzn-s3-demo-bucket",
     "Condition": {"Null": {"s3:prefix": "true"}}}
  ]
}"#;

/// Tag-based access: read objects tagged environment=production; write
/// only objects tagged Project=Godwit.
const TAGS: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [
    {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
     "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*",
     "Condition": {"StringEquals": {"s3:ExistingObjectTag/environment": "production"}}},
    {"Effect": "Allow", "Principal": "*", "Action": "s3:PutObject",
     "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*",
     "Condition": {"StringEquals": {"s3:RequestObjectTag/Project": "Godwit"}}}
  ]
}"#;

/// "Requiring SSE-KMS for all objects written to a bucket" and refusing
/// unencrypted uploads.
const SSE: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [
    {"Effect": "Allow", "Principal": "*", "Action": "s3:PutObject",
     "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*"},
    {"Sid": "DenyIncorrectEncryptionHeader", "Effect": "Deny", "Principal": "*",
     "Action": "s3:PutObject", "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*",
     "Condition": {"StringNotEquals": {"s3:x-amz-server-side-encryption": "aws:kms"}}},
    {"Sid": "DenyUnEncryptedObjectUploads", "Effect": "Deny", "Principal": "*",
     "Action": "s3:PutObject", "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*",
     "Condition": {"Null": {"s3:x-amz-server-side-encryption": true}}}
  ]
}"#;

/// Access during 2024 only.
const TIME_WINDOW: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{
    "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
    "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*",
    "Condition": {
      "DateGreaterThan": {"aws:CurrentTime": "2024-01-01T00:00:00Z"},
      "DateLessThan": {"aws:CurrentTime": "2025-01-01"}
    }
  }]
}"#;

/// The same window as epoch seconds, on aws:EpochTime.
const EPOCH_WINDOW: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{
    "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
    "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*",
    "Condition": {"DateGreaterThanEquals": {"aws:EpochTime": 1704067200},
                  "DateLessThan": {"aws:EpochTime": "1735689600"}}
  }]
}"#;

/// "Limiting the number of keys listed".
const MAX_KEYS: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{
    "Effect": "Allow", "Principal": "*", "Action": "s3:ListBucket",
    "Resource": "arn:aws:s3:::amzn-s3-demo-bucket",
    "Condition": {"NumericLessThanEquals": {"s3:max-keys": "10"}}
  }]
}"#;

/// "Allow only specific tag keys" (ForAllValues) and "require a tag key"
/// (ForAnyValue).
const TAG_KEYS: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [
    {"Effect": "Allow", "Principal": "*", "Action": "s3:PutObject",
     "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*",
     "Condition": {"ForAllValues:StringLike": {"s3:RequestObjectTagKeys": ["Owner", "Creation*"]}}},
    {"Effect": "Allow", "Principal": "*", "Action": "s3:PutObjectTagging",
     "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*",
     "Condition": {"ForAnyValue:StringEquals": {"s3:RequestObjectTagKeys": ["Department"]}}},
    {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObjectTagging",
     "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*",
     "Condition": {"ForAnyValue:StringEquals": {"s3:RequestObjectTagKeys": ["Secret"]}}}
  ]
}"#;

/// IfExists: a referer, if sent, must be ours; a max-keys, if sent, small.
const IF_EXISTS: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [
    {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
     "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*",
     "Condition": {"StringEqualsIfExists": {"aws:Referer": "https://example.com/"}}},
    {"Effect": "Allow", "Principal": "*", "Action": "s3:ListBucket",
     "Resource": "arn:aws:s3:::amzn-s3-demo-bucket",
     "Condition": {"NumericLessThanEqualsIfExists": {"s3:max-keys": 100}}}
  ]
}"#;

/// Everything for everyone, but no deletes.
const DENY_OVER_ALLOW: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [
    {"Effect": "Allow", "Principal": "*", "Action": "s3:*",
     "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*"},
    {"Effect": "Deny", "Principal": {"AWS": "*"}, "Action": ["s3:DeleteObject", "s3:DeleteObjectVersion"],
     "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*"}
  ]
}"#;

/// Deny everyone but Alice.
const NOT_PRINCIPAL: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{
    "Effect": "Deny",
    "NotPrincipal": {"AWS": ["arn:aws:iam::79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be:root"]},
    "Action": "s3:*",
    "Resource": ["arn:aws:s3:::amzn-s3-demo-bucket", "arn:aws:s3:::amzn-s3-demo-bucket/*"]
  }]
}"#;

/// Bob may do everything but delete; nobody may read outside public/.
const NOT_ACTION_RESOURCE: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [
    {"Effect": "Allow", "Principal": {"AWS": "0b1d2c3e4f5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"},
     "NotAction": "s3:Delete*", "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*"},
    {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
     "NotResource": ["arn:aws:s3:::amzn-s3-demo-bucket/public/*"]}
  ]
}"#;

/// Wildcards in actions and `?` in resources.
const WILDCARDS: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [
    {"Effect": "Allow", "Principal": "*", "Action": ["s3:Get*", "s3:*Object"],
     "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/logs/202?-??.txt"},
    {"Effect": "Allow", "Principal": "*", "Action": "s3:List?ucket",
     "Resource": "arn:aws:s3:::amzn-*"}
  ]
}"#;

/// Condition key names in any case; resources in their own case.
const CASES: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{
    "Effect": "Allow", "Principal": "*", "Action": "S3:getobject",
    "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/Public/*",
    "Condition": {"IpAddress": {"AWS:SOURCEIP": "10.0.0.0/8"},
                  "StringEqualsIgnoreCase": {"aws:UserAgent": "Godwit-Test/1.0"}}
  }]
}"#;

/// aws:SourceArn / aws:SourceAccount, as for S3 server access logs.
const SOURCE_ARN: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{
    "Effect": "Allow", "Principal": "*", "Action": "s3:PutObject",
    "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/logs/*",
    "Condition": {"ArnLike": {"aws:SourceArn": "arn:aws:s3:::source-*"},
                  "StringEquals": {"aws:SourceAccount": "111122223333"}}
  }]
}"#;

/// ARN patterns are matched component by component.
const ARN_PARTS: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{
    "Effect": "Deny", "Principal": "*", "Action": "s3:*",
    "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*",
    "Condition": {"ArnEquals": {"aws:SourceArn": "arn:aws:s*::111122223333:*"}}
  }]
}"#;

/// `${*}` is a literal `*` in a 2012-10-17 policy, text in a 2008 one;
/// other policy variables are text.
const ESCAPES: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{
    "Effect": "Allow", "Principal": "*", "Action": "s3:ListBucket",
    "Resource": "arn:aws:s3:::amzn-s3-demo-bucket",
    "Condition": {"StringLike": {"s3:prefix": ["stars/${*}${?}/*", "home/${aws:username}/*"]}}
  }]
}"#;
const ESCAPES_2008: &str = r#"{
  "Version": "2008-10-17",
  "Statement": [{
    "Effect": "Allow", "Principal": "*", "Action": "s3:ListBucket",
    "Resource": "arn:aws:s3:::amzn-s3-demo-bucket",
    "Condition": {"StringLike": {"s3:prefix": "stars/${*}/*"}}
  }]
}"#;

/// "Granting cross-account permissions to upload objects while ensuring
/// the bucket owner has full control", with a NOR of values.
const ACL_NOR: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{
    "Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
    "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*",
    "Condition": {"StringNotEquals": {"s3:x-amz-acl": ["private", "bucket-owner-full-control"]}}
  }]
}"#;

/// The remaining operators, one statement each.
const OPERATORS: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [
    {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
     "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*",
     "Condition": {"StringNotLike": {"aws:UserAgent": ["*curl*", "*wget*"]},
                   "BinaryEquals": {"s3:x-amz-content-sha256": "aGVsbG8="}}},
    {"Effect": "Allow", "Principal": "*", "Action": "s3:ListBucket",
     "Resource": "arn:aws:s3:::amzn-s3-demo-bucket",
     "Condition": {"NumericNotEquals": {"s3:max-keys": [0, 1]},
                   "NumericGreaterThan": {"s3:max-keys": "0.5"},
                   "DateEquals": {"aws:CurrentTime": "2024-06-01T12:00:00+02:00"}}},
    {"Effect": "Allow", "Principal": "*", "Action": "s3:PutObject",
     "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*",
     "Condition": {"ArnNotLike": {"aws:SourceArn": "arn:aws:s3:::evil-*"},
                   "StringNotEqualsIgnoreCase": {"s3:x-amz-storage-class": "GLACIER"}}}
  ]
}"#;

const SHA_HELLO: &[&str] = &["aGVsbG8="];

#[rustfmt::skip]
const CASES_TABLE: &[Case] = &[
    // Public read.
    case("public read: anonymous get", PUBLIC_READ, ANON, "s3:GetObject", OBJ, &[], Allow),
    case("public read: account get", PUBLIC_READ, A, "s3:GetObjectVersion", OBJ, &[], Allow),
    case("public read: put not granted", PUBLIC_READ, ANON, "s3:PutObject", OBJ, &[], NA),
    case("public read: bucket not covered by /*", PUBLIC_READ, ANON, "s3:GetObject", BKT, &[], NA),
    case("public read: action case-insensitive", PUBLIC_READ, ANON, "S3:GETOBJECT", OBJ, &[], Allow),
    // Another account, by root ARN, id, user ARN, canonical id.
    case("root arn: bob with acl", CROSS_ACCOUNT_ARN, B, "s3:PutObject", OBJ, &[("s3:x-amz-acl", &["public-read"])], Allow),
    case("root arn: bob without acl", CROSS_ACCOUNT_ARN, B, "s3:PutObject", OBJ, &[], NA),
    case("root arn: bob other acl", CROSS_ACCOUNT_ARN, B, "s3:PutObjectAcl", OBJ, &[("s3:x-amz-acl", &["private"])], NA),
    case("root arn: alice", CROSS_ACCOUNT_ARN, A, "s3:PutObject", OBJ, &[("s3:x-amz-acl", &["public-read"])], NA),
    case("root arn: anonymous", CROSS_ACCOUNT_ARN, ANON, "s3:PutObject", OBJ, &[("s3:x-amz-acl", &["public-read"])], NA),
    case("account id: bob lists", CROSS_ACCOUNT_ID, B, "s3:ListBucket", BKT, &[], Allow),
    case("account id: alice", CROSS_ACCOUNT_ID, A, "s3:ListBucket", BKT, &[], NA),
    case("account id: object arn", CROSS_ACCOUNT_ID, B, "s3:ListBucket", OBJ, &[], NA),
    case("user arn: bob's account", CROSS_ACCOUNT_USER, B, "s3:GetBucketLocation", BKT, &[], Allow),
    case("user arn: get", CROSS_ACCOUNT_USER, B, "s3:GetObject", OBJ, &[], Allow),
    case("user arn: anonymous", CROSS_ACCOUNT_USER, ANON, "s3:GetObject", OBJ, &[], NA),
    case("canonical user: upper-case hex", CANONICAL_USER, A, "s3:GetObject", OBJ, &[], Allow),
    case("canonical user: bob", CANONICAL_USER, B, "s3:GetObject", OBJ, &[], NA),
    // Deny plain HTTP.
    case("tls: https read", DENY_INSECURE, ANON, "s3:GetObject", OBJ, &[("aws:securetransport", &["true"])], Allow),
    case("tls: http read", DENY_INSECURE, ANON, "s3:GetObject", OBJ, &[("aws:securetransport", &["false"])], Deny),
    case("tls: http list (deny only)", DENY_INSECURE, A, "s3:ListBucket", BKT, &[("aws:securetransport", &["false"])], Deny),
    case("tls: key missing, Bool false", DENY_INSECURE, ANON, "s3:GetObject", OBJ, &[], Allow),
    case("tls: https list", DENY_INSECURE, A, "s3:ListBucket", BKT, &[("aws:securetransport", &["true"])], NA),
    // Source IP, IPv4 and IPv6.
    case("ip: v4 inside", SOURCE_IP, ANON, "s3:GetObject", OBJ, &[("aws:sourceip", &["192.0.2.7"])], Allow),
    case("ip: v4 outside", SOURCE_IP, ANON, "s3:GetObject", OBJ, &[("aws:sourceip", &["198.51.100.1"])], NA),
    case("ip: v4 excluded", SOURCE_IP, ANON, "s3:GetObject", OBJ, &[("aws:sourceip", &["203.0.113.9"])], NA),
    case("ip: v4-mapped v6", SOURCE_IP, ANON, "s3:GetObject", OBJ, &[("aws:sourceip", &["::ffff:192.0.2.7"])], Allow),
    case("ip: v6 inside", SOURCE_IP, ANON, "s3:ListBucket", BKT, &[("aws:sourceip", &["2001:db8:1234:5678::1"])], Allow),
    case("ip: v6 excluded /80", SOURCE_IP, ANON, "s3:GetObject", OBJ, &[("aws:sourceip", &["2001:db8:1234:5678:abcd::1"])], NA),
    case("ip: v6 outside", SOURCE_IP, ANON, "s3:GetObject", OBJ, &[("aws:sourceip", &["2001:db8:ffff::1"])], NA),
    case("ip: no address", SOURCE_IP, ANON, "s3:GetObject", OBJ, &[], NA),
    case("ip: garbage address", SOURCE_IP, ANON, "s3:GetObject", OBJ, &[("aws:sourceip", &["not-an-ip"])], NA),
    case("ip deny: outside", DENY_OUTSIDE_IP, A, "s3:GetObject", OBJ, &[("aws:sourceip", &["198.51.100.1"])], Deny),
    case("ip deny: inside", DENY_OUTSIDE_IP, A, "s3:GetObject", OBJ, &[("aws:sourceip", &["192.0.2.200"])], NA),
    case("ip deny: bare v6 address", DENY_OUTSIDE_IP, A, "s3:GetObject", OBJ, &[("aws:sourceip", &["2001:db8::1"])], NA),
    case("ip deny: other v6", DENY_OUTSIDE_IP, A, "s3:GetObject", OBJ, &[("aws:sourceip", &["2001:db8::2"])], Deny),
    case("ip deny: missing key, negated", DENY_OUTSIDE_IP, A, "s3:GetObject", OBJ, &[], Deny),
    // Referer.
    case("referer: www", REFERER, ANON, "s3:GetObject", OBJ, &[("aws:referer", &["http://www.example.com/index.html"])], Allow),
    case("referer: apex", REFERER, ANON, "s3:GetObject", OBJ, &[("aws:referer", &["http://example.com/"])], Allow),
    case("referer: other site", REFERER, ANON, "s3:GetObject", OBJ, &[("aws:referer", &["http://example.org/"])], NA),
    case("referer: https is another string", REFERER, ANON, "s3:GetObject", OBJ, &[("aws:referer", &["https://example.com/"])], NA),
    case("referer: none", REFERER, ANON, "s3:GetObject", OBJ, &[], NA),
    // s3:prefix on ListBucket.
    case("prefix: root listing", PREFIX, B, "s3:ListBucket", BKT, &[("s3:prefix", &[""]), ("s3:delimiter", &["/"])], Allow),
    case("prefix: home listing", PREFIX, B, "s3:ListBucket", BKT, &[("s3:prefix", &["home/"]), ("s3:delimiter", &["/"])], Allow),
    case("prefix: home without delimiter", PREFIX, B, "s3:ListBucket", BKT, &[("s3:prefix", &["home/"])], NA),
    case("prefix: own folder", PREFIX, B, "s3:ListBucket", BKT, &[("s3:prefix", &["home/JohnDoe/photos/"])], Allow),
    case("prefix: another folder", PREFIX, B, "s3:ListBucket", BKT, &[("s3:prefix", &["home/JaneDoe/"])], NA),
    case("prefix: missing, Null denies", PREFIX, B, "s3:ListBucket", BKT, &[("s3:delimiter", &["/"])], Deny),
    case("prefix: empty value list is missing", PREFIX, B, "s3:ListBucket", BKT, &[("s3:prefix", &[])], Deny),
    // Object tags.
    case("tags: production object", TAGS, ANON, "s3:GetObject", OBJ, &[("s3:existingobjecttag/environment", &["production"])], Allow),
    case("tags: staging object", TAGS, ANON, "s3:GetObject", OBJ, &[("s3:existingobjecttag/environment", &["staging"])], NA),
    case("tags: untagged object", TAGS, ANON, "s3:GetObject", OBJ, &[], NA),
    case("tags: request tag, key lower-cased", TAGS, ANON, "s3:PutObject", OBJ, &[("s3:requestobjecttag/project", &["Godwit"])], Allow),
    case("tags: request tag value is case-sensitive", TAGS, ANON, "s3:PutObject", OBJ, &[("s3:requestobjecttag/project", &["godwit"])], NA),
    // Server-side encryption.
    case("sse: kms", SSE, A, "s3:PutObject", OBJ, &[("s3:x-amz-server-side-encryption", &["aws:kms"])], Allow),
    case("sse: AES256", SSE, A, "s3:PutObject", OBJ, &[("s3:x-amz-server-side-encryption", &["AES256"])], Deny),
    case("sse: none", SSE, A, "s3:PutObject", OBJ, &[], Deny),
    // Dates.
    case("time: inside", TIME_WINDOW, ANON, "s3:GetObject", OBJ, &[("aws:currenttime", &["2024-06-01T00:00:00Z"])], Allow),
    case("time: before", TIME_WINDOW, ANON, "s3:GetObject", OBJ, &[("aws:currenttime", &["2023-12-31T23:59:59Z"])], NA),
    case("time: at the start (strict)", TIME_WINDOW, ANON, "s3:GetObject", OBJ, &[("aws:currenttime", &["2024-01-01T00:00:00Z"])], NA),
    case("time: after (date-only bound)", TIME_WINDOW, ANON, "s3:GetObject", OBJ, &[("aws:currenttime", &["2025-01-01T00:00:00Z"])], NA),
    case("time: offset puts it after", TIME_WINDOW, ANON, "s3:GetObject", OBJ, &[("aws:currenttime", &["2024-12-31T23:50:00.5-00:20"])], NA),
    case("time: offset puts it inside", TIME_WINDOW, ANON, "s3:GetObject", OBJ, &[("aws:currenttime", &["2025-01-01T00:10:00.5+00:20"])], Allow),
    case("time: not a date", TIME_WINDOW, ANON, "s3:GetObject", OBJ, &[("aws:currenttime", &["yesterday"])], NA),
    case("time: missing", TIME_WINDOW, ANON, "s3:GetObject", OBJ, &[], NA),
    case("epoch: at the start", EPOCH_WINDOW, ANON, "s3:GetObject", OBJ, &[("aws:epochtime", &["1704067200"])], Allow),
    case("epoch: before", EPOCH_WINDOW, ANON, "s3:GetObject", OBJ, &[("aws:epochtime", &["1704067199"])], NA),
    case("epoch: ISO against epoch bounds", EPOCH_WINDOW, ANON, "s3:GetObject", OBJ, &[("aws:epochtime", &["2024-03-01T00:00:00Z"])], Allow),
    // Numbers.
    case("max-keys: 5", MAX_KEYS, ANON, "s3:ListBucket", BKT, &[("s3:max-keys", &["5"])], Allow),
    case("max-keys: 10", MAX_KEYS, ANON, "s3:ListBucket", BKT, &[("s3:max-keys", &["10"])], Allow),
    case("max-keys: 11", MAX_KEYS, ANON, "s3:ListBucket", BKT, &[("s3:max-keys", &["11"])], NA),
    case("max-keys: not a number", MAX_KEYS, ANON, "s3:ListBucket", BKT, &[("s3:max-keys", &["ten"])], NA),
    case("max-keys: missing", MAX_KEYS, ANON, "s3:ListBucket", BKT, &[], NA),
    // Set operators.
    case("all values: one allowed key", TAG_KEYS, ANON, "s3:PutObject", OBJ, &[("s3:requestobjecttagkeys", &["Owner"])], Allow),
    case("all values: both allowed keys", TAG_KEYS, ANON, "s3:PutObject", OBJ, &[("s3:requestobjecttagkeys", &["Owner", "CreationDate"])], Allow),
    case("all values: one key not allowed", TAG_KEYS, ANON, "s3:PutObject", OBJ, &[("s3:requestobjecttagkeys", &["Owner", "Cost"])], NA),
    case("all values: no tags at all", TAG_KEYS, ANON, "s3:PutObject", OBJ, &[], Allow),
    case("any value: has Department", TAG_KEYS, ANON, "s3:PutObjectTagging", OBJ, &[("s3:requestobjecttagkeys", &["Cost", "Department"])], Allow),
    case("any value: lacks Department", TAG_KEYS, ANON, "s3:PutObjectTagging", OBJ, &[("s3:requestobjecttagkeys", &["Cost"])], NA),
    case("any value: no tags", TAG_KEYS, ANON, "s3:PutObjectTagging", OBJ, &[], NA),
    case("any value: Secret denies", TAG_KEYS, ANON, "s3:PutObjectTagging", OBJ, &[("s3:requestobjecttagkeys", &["Department", "Secret"])], Deny),
    // IfExists.
    case("if exists: no referer", IF_EXISTS, ANON, "s3:GetObject", OBJ, &[], Allow),
    case("if exists: our referer", IF_EXISTS, ANON, "s3:GetObject", OBJ, &[("aws:referer", &["https://example.com/"])], Allow),
    case("if exists: other referer", IF_EXISTS, ANON, "s3:GetObject", OBJ, &[("aws:referer", &["https://example.org/"])], NA),
    case("if exists: no max-keys", IF_EXISTS, ANON, "s3:ListBucket", BKT, &[], Allow),
    case("if exists: max-keys too large", IF_EXISTS, ANON, "s3:ListBucket", BKT, &[("s3:max-keys", &["1000"])], NA),
    // Explicit Deny over Allow.
    case("deny over allow: get", DENY_OVER_ALLOW, A, "s3:GetObject", OBJ, &[], Allow),
    case("deny over allow: delete", DENY_OVER_ALLOW, A, "s3:DeleteObject", OBJ, &[], Deny),
    case("deny over allow: anonymous delete version", DENY_OVER_ALLOW, ANON, "s3:deleteobjectversion", OBJ, &[], Deny),
    // NotPrincipal, NotAction, NotResource.
    case("not principal: alice spared", NOT_PRINCIPAL, A, "s3:GetObject", OBJ, &[], NA),
    case("not principal: bob denied", NOT_PRINCIPAL, B, "s3:GetObject", OBJ, &[], Deny),
    case("not principal: anonymous denied", NOT_PRINCIPAL, ANON, "s3:ListBucket", BKT, &[], Deny),
    case("not action: bob puts", NOT_ACTION_RESOURCE, B, "s3:PutObject", "arn:aws:s3:::amzn-s3-demo-bucket/public/a", &[], Allow),
    case("not action: bob deletes", NOT_ACTION_RESOURCE, B, "s3:DeleteObject", "arn:aws:s3:::amzn-s3-demo-bucket/public/a", &[], NA),
    case("not resource: public read", NOT_ACTION_RESOURCE, B, "s3:GetObject", "arn:aws:s3:::amzn-s3-demo-bucket/public/a", &[], Allow),
    case("not resource: private read denied", NOT_ACTION_RESOURCE, B, "s3:GetObject", OBJ, &[], Deny),
    case("not resource: other action untouched", NOT_ACTION_RESOURCE, A, "s3:PutObject", OBJ, &[], NA),
    // Wildcards.
    case("wildcards: s3:Get*", WILDCARDS, ANON, "s3:GetObjectAcl", "arn:aws:s3:::amzn-s3-demo-bucket/logs/2024-01.txt", &[], Allow),
    case("wildcards: s3:*Object", WILDCARDS, ANON, "s3:PutObject", "arn:aws:s3:::amzn-s3-demo-bucket/logs/2024-01.txt", &[], Allow),
    case("wildcards: s3:*Object is anchored", WILDCARDS, ANON, "s3:PutObjectAcl", "arn:aws:s3:::amzn-s3-demo-bucket/logs/2024-01.txt", &[], NA),
    case("wildcards: ? is one character", WILDCARDS, ANON, "s3:GetObject", "arn:aws:s3:::amzn-s3-demo-bucket/logs/2024-1.txt", &[], NA),
    case("wildcards: ? is not zero characters", WILDCARDS, ANON, "s3:GetObject", "arn:aws:s3:::amzn-s3-demo-bucket/logs/202-01.txt", &[], NA),
    case("wildcards: ? in the action", WILDCARDS, ANON, "s3:listbucket", BKT, &[], Allow),
    case("wildcards: bucket wildcard spans keys", WILDCARDS, ANON, "s3:ListBucket", OBJ, &[], Allow),
    // Case.
    case("case: key name any case", CASES, ANON, "s3:GetObject", "arn:aws:s3:::amzn-s3-demo-bucket/Public/a", &[("aws:sourceip", &["10.1.2.3"]), ("aws:useragent", &["GODWIT-TEST/1.0"])], Allow),
    case("case: resource is case-sensitive", CASES, ANON, "s3:GetObject", "arn:aws:s3:::amzn-s3-demo-bucket/public/a", &[("aws:sourceip", &["10.1.2.3"]), ("aws:useragent", &["Godwit-Test/1.0"])], NA),
    case("case: ignoring case still compares", CASES, ANON, "s3:GetObject", "arn:aws:s3:::amzn-s3-demo-bucket/Public/a", &[("aws:sourceip", &["10.1.2.3"]), ("aws:useragent", &["Godwit-Test/2.0"])], NA),
    // ARNs.
    case("arn like: source bucket", SOURCE_ARN, ANON, "s3:PutObject", "arn:aws:s3:::amzn-s3-demo-bucket/logs/1", &[("aws:sourcearn", &["arn:aws:s3:::source-bucket"]), ("aws:sourceaccount", &["111122223333"])], Allow),
    case("arn like: other account", SOURCE_ARN, ANON, "s3:PutObject", "arn:aws:s3:::amzn-s3-demo-bucket/logs/1", &[("aws:sourcearn", &["arn:aws:s3:::source-bucket"]), ("aws:sourceaccount", &["444455556666"])], NA),
    case("arn like: other bucket", SOURCE_ARN, ANON, "s3:PutObject", "arn:aws:s3:::amzn-s3-demo-bucket/logs/1", &[("aws:sourcearn", &["arn:aws:s3:::other"]), ("aws:sourceaccount", &["111122223333"])], NA),
    case("arn parts: matches", ARN_PARTS, ANON, "s3:GetObject", OBJ, &[("aws:sourcearn", &["arn:aws:s3::111122223333:accesspoint/x"])], Deny),
    case("arn parts: * stays in its component", ARN_PARTS, ANON, "s3:GetObject", OBJ, &[("aws:sourcearn", &["arn:aws:s3:eu::111122223333:x"])], NA),
    case("arn parts: not an arn", ARN_PARTS, ANON, "s3:GetObject", OBJ, &[("aws:sourcearn", &["s3::111122223333"])], NA),
    // Escapes and policy variables.
    case("escapes: literal * and ?", ESCAPES, ANON, "s3:ListBucket", BKT, &[("s3:prefix", &["stars/*?/x"])], Allow),
    case("escapes: * is not a wildcard there", ESCAPES, ANON, "s3:ListBucket", BKT, &[("s3:prefix", &["stars/ab/x"])], NA),
    case("escapes: variables are literal text", ESCAPES, ANON, "s3:ListBucket", BKT, &[("s3:prefix", &["home/${aws:username}/a"])], Allow),
    case("escapes: variables are not substituted", ESCAPES, ANON, "s3:ListBucket", BKT, &[("s3:prefix", &["home/alice/a"]), ("aws:username", &["alice"])], NA),
    case("escapes 2008: text", ESCAPES_2008, ANON, "s3:ListBucket", BKT, &[("s3:prefix", &["stars/${*}/a"])], Allow),
    case("escapes 2008: not a literal *", ESCAPES_2008, ANON, "s3:ListBucket", BKT, &[("s3:prefix", &["stars/*/a"])], NA),
    // NOR of a negated operator's values.
    case("nor: private", ACL_NOR, B, "s3:PutObject", OBJ, &[("s3:x-amz-acl", &["private"])], NA),
    case("nor: owner full control", ACL_NOR, B, "s3:PutObject", OBJ, &[("s3:x-amz-acl", &["bucket-owner-full-control"])], NA),
    case("nor: public-read", ACL_NOR, B, "s3:PutObject", OBJ, &[("s3:x-amz-acl", &["public-read"])], Deny),
    case("nor: no acl", ACL_NOR, B, "s3:PutObject", OBJ, &[], Deny),
    // The remaining operators.
    case("ops: binary and not like", OPERATORS, ANON, "s3:GetObject", OBJ, &[("aws:useragent", &["aws-cli/2"]), ("s3:x-amz-content-sha256", SHA_HELLO)], Allow),
    case("ops: not like refuses curl", OPERATORS, ANON, "s3:GetObject", OBJ, &[("aws:useragent", &["curl/8.0"]), ("s3:x-amz-content-sha256", SHA_HELLO)], NA),
    case("ops: binary differs", OPERATORS, ANON, "s3:GetObject", OBJ, &[("aws:useragent", &["aws-cli/2"]), ("s3:x-amz-content-sha256", &["aGVsbG8h"])], NA),
    case("ops: numeric and date", OPERATORS, ANON, "s3:ListBucket", BKT, &[("s3:max-keys", &["2"]), ("aws:currenttime", &["2024-06-01T10:00:00Z"])], Allow),
    case("ops: numeric not equals", OPERATORS, ANON, "s3:ListBucket", BKT, &[("s3:max-keys", &["1"]), ("aws:currenttime", &["2024-06-01T10:00:00Z"])], NA),
    case("ops: date equals is an instant", OPERATORS, ANON, "s3:ListBucket", BKT, &[("s3:max-keys", &["2"]), ("aws:currenttime", &["2024-06-01T12:00:00Z"])], NA),
    case("ops: arn not like, storage class", OPERATORS, ANON, "s3:PutObject", OBJ, &[("aws:sourcearn", &["arn:aws:s3:::good"]), ("s3:x-amz-storage-class", &["STANDARD"])], Allow),
    case("ops: arn not like refuses", OPERATORS, ANON, "s3:PutObject", OBJ, &[("aws:sourcearn", &["arn:aws:s3:::evil-1"])], NA),
    case("ops: not equals ignore case", OPERATORS, ANON, "s3:PutObject", OBJ, &[("s3:x-amz-storage-class", &["glacier"])], NA),
];

#[test]
fn policy_decisions_follow_aws_examples() {
    let mut failures = Vec::new();
    for c in CASES_TABLE {
        let got = decide(&parse(c.policy), c);
        if got != c.want {
            failures.push(format!("{}: got {got:?}, want {:?}", c.name, c.want));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `denies` (the owner's shortcut), given only the values of
/// `deny_keys`, says Deny exactly where `evaluate` does, on every row of
/// the table.
#[test]
fn denies_agrees_with_evaluate() {
    let mut failures = Vec::new();
    for c in CASES_TABLE {
        let policy = parse(c.policy);
        let full = decide(&policy, c) == Deny;
        let short = decide_with(&policy, c, |p, r| {
            let r = Request {
                context: &r.context[..p.deny_keys().len()],
                ..*r
            };
            match p.denies(&r) {
                true => Deny,
                false => NA,
            }
        }) == Deny;
        if full != short {
            failures.push(format!("{}: evaluate Deny {full}, denies {short}", c.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A Deny written after the Allow it overrides still wins (Denies are
/// walked first), and a key tested by several conditions is one slot of
/// the context, which every one of them reads.
#[test]
fn statement_order_and_shared_keys() {
    let policy = parse(SSE);
    assert_eq!(policy.keys(), ["s3:x-amz-server-side-encryption"]);
    assert_eq!(policy.deny_keys(), policy.keys());
    type Keys = &'static [(&'static str, &'static [&'static str])];
    let put = |context: Keys| case("sse", SSE, A, "s3:PutObject", OBJ, context, NA);
    let kms: Keys = &[("s3:x-amz-server-side-encryption", &["aws:kms"])];
    let aes: Keys = &[("s3:x-amz-server-side-encryption", &["AES256"])];
    assert_eq!(decide(&policy, &put(kms)), Allow);
    assert_eq!(decide(&policy, &put(aes)), Deny);
    assert_eq!(decide(&policy, &put(&[])), Deny);
}

/// A statement around `body` (a JSON fragment of fields), for the
/// refusals below.
fn statement_with(body: &str) -> String {
    format!(
        r#"{{"Version": "2012-10-17", "Statement": [{{"Effect": "Allow", "Principal": "*", {body}}}]}}"#
    )
}

#[test]
fn malformed_policies_are_refused_with_s3s_messages() {
    let get = r#""Action": "s3:GetObject", "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*""#;
    let with_condition = |cond: &str| statement_with(&format!(r#"{get}, "Condition": {cond}"#));
    let big = format!(
        r#"{{"Statement": [{{"Sid": "{}", "Effect": "Allow", "Principal": "*", {get}}}]}}"#,
        "x".repeat(MAX_POLICY_SIZE)
    );
    #[rustfmt::skip]
    let cases: Vec<(&str, String, &str)> = vec![
        ("invalid json", r#"{"Statement": ["#.into(), "This policy contains invalid Json"),
        ("not an object", "[]".into(), "the first byte must be '{'"),
        ("missing statement", r#"{"Version": "2012-10-17"}"#.into(), "Missing required field Statement"),
        ("empty statement", r#"{"Statement": []}"#.into(), "Statement is empty"),
        ("statement not an object", r#"{"Statement": "x"}"#.into(), "Invalid policy document"),
        ("missing effect", format!(r#"{{"Statement": {{"Principal": "*", {get}}}}}"#), "Missing required field Effect"),
        ("bad effect", format!(r#"{{"Statement": {{"Effect": "Permit", "Principal": "*", {get}}}}}"#), "Invalid effect: Permit"),
        ("effect is case-sensitive", format!(r#"{{"Statement": {{"Effect": "allow", "Principal": "*", {get}}}}}"#), "Invalid effect: allow"),
        ("bad version", r#"{"Version": "2020-01-01", "Statement": []}"#.into(), "valid version string"),
        ("resource of another bucket", statement_with(r#""Action": "s3:GetObject", "Resource": "arn:aws:s3:::other-bucket/*""#), "Policy has invalid resource"),
        ("resource prefix of the bucket", statement_with(r#""Action": "s3:GetObject", "Resource": "arn:aws:s3:::amzn-s3-demo/*""#), "Policy has invalid resource"),
        ("resource wildcard not matching the bucket", statement_with(r#""Action": "s3:GetObject", "Resource": "arn:aws:s3:::other-*/*""#), "Policy has invalid resource"),
        ("resource not an s3 arn", statement_with(r#""Action": "s3:GetObject", "Resource": "amzn-s3-demo-bucket/*""#), "Policy has invalid resource"),
        ("resource star", statement_with(r#""Action": "s3:GetObject", "Resource": "*""#), "Policy has invalid resource"),
        ("resource empty list", statement_with(r#""Action": "s3:GetObject", "Resource": []"#), "Policy has invalid resource"),
        ("missing resource", statement_with(r#""Action": "s3:GetObject""#), "Missing required field Resource"),
        ("both resource and not resource", statement_with(&format!(r#"{get}, "NotResource": "arn:aws:s3:::amzn-s3-demo-bucket""#)), "Policy has invalid resource"),
        ("non-s3 action", statement_with(r#""Action": "iam:PassRole", "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*""#), "Policy has invalid action"),
        ("action without a name", statement_with(r#""Action": "s3:", "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*""#), "Policy has invalid action"),
        ("missing action", statement_with(r#""Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*""#), "Missing required field Action"),
        ("no principal", format!(r#"{{"Statement": {{"Effect": "Allow", {get}}}}}"#), "Missing required field Principal"),
        ("principal string", format!(r#"{{"Statement": {{"Effect": "Allow", "Principal": "alice", {get}}}}}"#), "Invalid principal in policy"),
        ("principal wildcard account", format!(r#"{{"Statement": {{"Effect": "Allow", "Principal": {{"AWS": "arn:aws:iam::*:root"}}, {get}}}}}"#), "Invalid principal in policy"),
        ("principal role", format!(r#"{{"Statement": {{"Effect": "Allow", "Principal": {{"AWS": "arn:aws:iam::123456789012:role/x"}}, {get}}}}}"#), "Invalid principal in policy"),
        ("principal service", format!(r#"{{"Statement": {{"Effect": "Allow", "Principal": {{"Service": "logging.s3.amazonaws.com"}}, {get}}}}}"#), "Invalid principal in policy"),
        ("principal short canonical id", format!(r#"{{"Statement": {{"Effect": "Allow", "Principal": {{"CanonicalUser": "abc"}}, {get}}}}}"#), "Invalid principal in policy"),
        ("principal empty", format!(r#"{{"Statement": {{"Effect": "Allow", "Principal": {{}}, {get}}}}}"#), "Invalid principal in policy"),
        ("unknown condition operator", with_condition(r#"{"StringEqualz": {"s3:prefix": "a"}}"#), "Invalid Condition type : StringEqualz"),
        ("operator is case-sensitive", with_condition(r#"{"stringequals": {"s3:prefix": "a"}}"#), "Invalid Condition type : stringequals"),
        ("NullIfExists", with_condition(r#"{"NullIfExists": {"s3:prefix": "true"}}"#), "Invalid Condition type : NullIfExists"),
        ("unknown condition key", with_condition(r#"{"StringEquals": {"aws:FooBar": "a"}}"#), "Policy has an invalid condition key"),
        ("tag key without a tag", with_condition(r#"{"StringEquals": {"s3:ExistingObjectTag/": "a"}}"#), "Policy has an invalid condition key"),
        ("bad ip", with_condition(r#"{"IpAddress": {"aws:SourceIp": "10.0.0.300/8"}}"#), "Invalid Condition value"),
        ("source ip must be an address whatever the operator", with_condition(r#"{"StringLike": {"aws:SourceIp": "10.*"}}"#), "Invalid Condition value"),
        ("bad number", with_condition(r#"{"NumericLessThan": {"s3:max-keys": "ten"}}"#), "Invalid Condition value"),
        ("bad date", with_condition(r#"{"DateLessThan": {"aws:CurrentTime": "tomorrow"}}"#), "Invalid Condition value"),
        ("bad bool", with_condition(r#"{"Bool": {"aws:SecureTransport": "yes"}}"#), "Invalid Condition value"),
        ("bad base64", with_condition(r#"{"BinaryEquals": {"s3:x-amz-content-sha256": "!!"}}"#), "Invalid Condition value"),
        ("condition value an object", with_condition(r#"{"StringEquals": {"s3:prefix": {"a": 1}}}"#), "Invalid policy document"),
        ("unknown top-level field", r#"{"Statement": [], "Foo": 1}"#.into(), "Unknown field Foo"),
        ("unknown statement field", statement_with(&format!(r#"{get}, "Effects": "Allow""#)), "Unknown field Effects"),
        ("duplicate sid", format!(r#"{{"Statement": [{{"Sid": "A", "Effect": "Allow", "Principal": "*", {get}}}, {{"Sid": "A", "Effect": "Deny", "Principal": "*", {get}}}]}}"#), "Statement IDs (SID) in a single policy must be unique"),
        ("over 20 KiB", big, "Policy exceeds the maximum allowed document size."),
    ];
    let mut failures = Vec::new();
    for (name, json, want) in &cases {
        match Policy::parse(json, BUCKET) {
            Ok(_) => failures.push(format!("{name}: accepted")),
            Err(e) if !e.0.contains(want) => {
                failures.push(format!("{name}: {:?} lacks {want:?}", e.0))
            }
            Err(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn well_formed_variants_are_accepted() {
    let get = r#""Action": "s3:GetObject", "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*""#;
    // Indentation does not count against the size limit.
    let indented = format!(
        "{{\"Statement\": {{\"Effect\": \"Allow\", \"Principal\": \"*\", {get}}}{}}}",
        " ".repeat(MAX_POLICY_SIZE)
    );
    let accepted = [
        format!(r#"{{"Statement": {{"Effect": "Allow", "Principal": "*", {get}}}}}"#),
        format!(
            r#"  {{"Id": "x", "Version": "2008-10-17", "Statement": {{"Effect": "Deny", "Principal": {{"AWS": ["*"]}}, {get}}}}}"#
        ),
        statement_with(r#""Action": "*", "Resource": "arn:aws:s3:::amzn-s3-demo-bucket""#),
        statement_with(r#""Action": "s3:*", "Resource": "arn:aws:s3:::*""#),
        statement_with(
            r#""Action": "S3:GetObject", "Resource": "arn:aws:s3:::amzn-s3-demo-?ucket/a""#,
        ),
        statement_with(&format!(r#"{get}, "Condition": {{}}"#)),
        statement_with(&format!(
            r#"{get}, "Condition": {{"ForAllValues:StringEqualsIgnoreCaseIfExists": {{"S3:RequestObjectTagKeys": []}},
                                     "Null": {{"s3:object-lock-mode": false}},
                                     "DateLessThan": {{"s3:object-lock-retain-until-date": "2030-01-01T00:00Z"}}}}"#
        )),
        // Sids need only be unique among those present.
        format!(
            r#"{{"Statement": [{{"Effect": "Allow", "Principal": "*", {get}}}, {{"Effect": "Allow", "Principal": "*", {get}}}, {{"Sid": "one", "Effect": "Allow", "Principal": "*", {get}}}]}}"#
        ),
        indented,
    ];
    for json in &accepted {
        if let Err(e) = Policy::parse(json, BUCKET) {
            panic!("{e}: {json}");
        }
    }
}

#[test]
fn public_policies_are_told_apart() {
    let grant = |principal: &str, condition: &str| {
        format!(
            r#"{{"Version": "2012-10-17", "Statement": [{{"Effect": "Allow", "Principal": {principal},
                "Action": "s3:GetObject", "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*"{condition}}}]}}"#
        )
    };
    #[rustfmt::skip]
    let cases = [
        ("star, no condition", grant(r#""*""#, ""), true),
        ("AWS star", grant(r#"{"AWS": "*"}"#, ""), true),
        ("AWS star among accounts", grant(&format!(r#"{{"AWS": ["{BOB}", "*"]}}"#), ""), true),
        ("source ip 10/8", grant(r#""*""#, r#", "Condition": {"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}"#), false),
        ("source ip everything", grant(r#""*""#, r#", "Condition": {"IpAddress": {"aws:SourceIp": "0.0.0.0/0"}}"#), true),
        ("source ip everything v6", grant(r#""*""#, r#", "Condition": {"IpAddress": {"aws:SourceIp": ["10.0.0.0/8", "::/0"]}}"#), true),
        ("not ip address", grant(r#""*""#, r#", "Condition": {"NotIpAddress": {"aws:SourceIp": "10.0.0.0/8"}}"#), true),
        ("ip if exists", grant(r#""*""#, r#", "Condition": {"IpAddressIfExists": {"aws:SourceIp": "10.0.0.0/8"}}"#), true),
        ("fixed source arn", grant(r#""*""#, r#", "Condition": {"ArnEquals": {"aws:SourceArn": "arn:aws:s3:::logs"}}"#), false),
        ("wildcard source arn", grant(r#""*""#, r#", "Condition": {"ArnLike": {"aws:SourceArn": "arn:aws:s3:::*"}}"#), true),
        ("fixed source account", grant(r#""*""#, r#", "Condition": {"StringEquals": {"aws:SourceAccount": "111122223333"}}"#), false),
        ("fixed principal account", grant(r#""*""#, r#", "Condition": {"StringEquals": {"aws:PrincipalAccount": ["111122223333"]}}"#), false),
        ("all values of a fixed account", grant(r#""*""#, r#", "Condition": {"ForAllValues:StringEquals": {"aws:PrincipalAccount": "111122223333"}}"#), true),
        ("condition on another key", grant(r#""*""#, r#", "Condition": {"Bool": {"aws:SecureTransport": "true"}}"#), true),
        ("referer is not a limit", grant(r#""*""#, r#", "Condition": {"StringEquals": {"aws:Referer": "https://example.com/"}}"#), true),
        ("specific account", grant(&format!(r#"{{"AWS": "{BOB}"}}"#), ""), false),
        ("canonical user", grant(&format!(r#"{{"CanonicalUser": "{ALICE}"}}"#), ""), false),
    ];
    let mut failures = Vec::new();
    for (name, json, want) in &cases {
        if parse(json).is_public() != *want {
            failures.push(format!("{name}: want is_public = {want}"));
        }
    }
    let deny_only = parse(
        r#"{"Statement": {"Effect": "Deny", "Principal": "*", "Action": "s3:*",
            "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*"}}"#,
    );
    if deny_only.is_public() {
        failures.push("deny only: want is_public = false".into());
    }
    let not_principal = parse(&format!(
        r#"{{"Statement": {{"Effect": "Allow", "NotPrincipal": {{"AWS": "{BOB}"}}, "Action": "s3:GetObject",
            "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*"}}}}"#
    ));
    if !not_principal.is_public() {
        failures.push("allow with NotPrincipal: want is_public = true".into());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(parse(PUBLIC_READ).is_public());
    assert!(!parse(CROSS_ACCOUNT_ARN).is_public());
    assert!(parse(DENY_OVER_ALLOW).is_public());
}

#[test]
fn condition_keys_are_listed_lower_case() {
    let policy = parse(TAGS);
    assert_eq!(
        policy.keys(),
        [
            "s3:existingobjecttag/environment",
            "s3:requestobjecttag/project"
        ]
    );
    assert!(parse(PUBLIC_READ).keys().is_empty());
    // Allow statements only: the Deny walk reads no key.
    assert!(policy.deny_keys().is_empty());
}
