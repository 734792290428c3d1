//! Authorization covers every operation: an account that does not own a
//! bucket can do nothing to it or to its objects, whatever the operation
//! — implemented or not (an unimplemented one must answer AccessDenied,
//! not NotImplemented, to a stranger), S3 or OSS-only, bucket or object,
//! and a copy must not read a source bucket the caller does not own.
//!
//! `SAMPLES` holds one request per operation the router knows
//! (`Endpoint::NAMES`), except ListBuckets and CreateBucket, which every
//! account may call (checked on their own below). The table is checked
//! against the router first: every row must route to the operation it
//! names, and every operation must have a row, so an operation added
//! later fails this test until it has one (and is then denied like the
//! rest). Then one `godwit server` is started, root fills a victim bucket
//! (versioned, tagged, with a default encryption and a multipart upload
//! in progress), a second
//! account sends every row at it, and each must answer 403 AccessDenied
//! (a HEAD's error has no body: its status alone is checked); root
//! finally reads the bucket back and nothing may have changed. Failures
//! are collected and reported together, one line per operation.
//!
//! The rows are requests that would succeed, or at least act, if
//! authorization let them through (real keys, the real upload id, bodies
//! with their Content-MD5), so a missing check shows as a changed bucket
//! as well as a wrong status.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use godwit_gateway::router::{self, Endpoint, Query};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use support::*;

const ROOT_ID: &str = "AUTHZROOTKEY00000001";
const ROOT_SECRET: &str = "authz-every-op-secret-0123456789abcdefgh";

/// The victim's object every object-level row addresses; the multipart
/// upload in progress is on this key too.
const KEY: &str = "doc.txt";
/// A second object, untouched by the rows (a DeleteObjects or a listing
/// gone wrong would still show on it).
const OTHER: &str = "other.txt";

/// What a row addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum At {
    /// `/` (no bucket): only WriteGetObjectResponse is such an operation
    /// besides ListBuckets; it has no bucket to own, so only root may.
    Service,
    /// `/{bucket}`.
    Bucket,
    /// `/{bucket}/{key}`.
    Object,
}
use At::*;

/// (operation name, method, what it addresses, query, extra headers,
/// body). Query, header values and body may hold `{bucket}`, `{key}`,
/// `{upload}` (the upload id, percent-encoded in the query), `{part_etag}`
/// and, in headers, `{md5}` (Content-MD5 of the filled body).
type Sample = (
    &'static str,
    &'static str,
    At,
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static str,
);

/// Operations any account may call (they name no bucket it must own).
const OPEN_TO_ALL: &[&str] = &["ListBuckets", "CreateBucket"];

const MD5: (&str, &str) = ("content-md5", "{md5}");
const COPY_SOURCE: (&str, &str) = ("x-amz-copy-source", "/{bucket}/{key}");

const VERSIONING_SUSPENDED: &str = "<VersioningConfiguration \
    xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Status>Suspended</Status>\
    </VersioningConfiguration>";
const VERSIONING_ENABLED: &[u8] = b"<VersioningConfiguration \
    xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Status>Enabled</Status>\
    </VersioningConfiguration>";
const DELETE_KEYS: &str = "<Delete><Object><Key>{key}</Key></Object>\
    <Object><Key>other.txt</Key></Object></Delete>";
const S3_REPLICATION: &str = "<ReplicationConfiguration>\
    <Role>arn:aws:iam::000000000000:role/r</Role><Rule><ID>r1</ID><Status>Enabled</Status>\
    <Priority>1</Priority><DeleteMarkerReplication><Status>Disabled</Status>\
    </DeleteMarkerReplication><Filter><Prefix></Prefix></Filter><Destination>\
    <Bucket>arn:aws:s3:::elsewhere</Bucket></Destination></Rule></ReplicationConfiguration>";
const OSS_REPLICATION_ADD: &str = "<ReplicationConfiguration><Rule><Action>ALL</Action>\
    <Destination><Bucket>elsewhere</Bucket><Location>oss-cn-hangzhou</Location>\
    </Destination></Rule></ReplicationConfiguration>";
const OSS_REPLICATION_DELETE: &str = "<ReplicationRules><ID>r1</ID></ReplicationRules>";
const OSS_RTC: &str =
    "<ReplicationRule><RTC><Status>enabled</Status></RTC><ID>r1</ID></ReplicationRule>";
const TAGS: &str = "<Tagging><TagSet><Tag><Key>stolen</Key><Value>yes</Value></Tag>\
    </TagSet></Tagging>";
const CORS: &str = "<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod>\
    <AllowedOrigin>*</AllowedOrigin></CORSRule></CORSConfiguration>";
const ENCRYPTION: &str = "<ServerSideEncryptionConfiguration><Rule>\
    <ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm>\
    </ApplyServerSideEncryptionByDefault><BucketKeyEnabled>true</BucketKeyEnabled></Rule>\
    </ServerSideEncryptionConfiguration>";
/// Root's default encryption of the victim (the intruder's differs).
const VICTIM_ENCRYPTION: &[u8] = b"<ServerSideEncryptionConfiguration><Rule>\
    <ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm>\
    </ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>";
const LIFECYCLE: &str = "<LifecycleConfiguration><Rule><ID>x</ID><Filter></Filter>\
    <Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>\
    </LifecycleConfiguration>";
const POLICY: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::{bucket}/*"}]}"#;
const WEBSITE: &str = "<WebsiteConfiguration><IndexDocument><Suffix>index.html</Suffix>\
    </IndexDocument></WebsiteConfiguration>";
const PUBLIC_ACCESS: &str = "<PublicAccessBlockConfiguration>\
    <BlockPublicAcls>false</BlockPublicAcls></PublicAccessBlockConfiguration>";
const OWNERSHIP: &str = "<OwnershipControls><Rule><ObjectOwnership>ObjectWriter\
    </ObjectOwnership></Rule></OwnershipControls>";
const COMPLETE: &str = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>\
    <ETag>{part_etag}</ETag></Part></CompleteMultipartUpload>";
const POST_FORM: &str = "--godwitformboundary\r\n\
    Content-Disposition: form-data; name=\"key\"\r\n\r\n{key}\r\n\
    --godwitformboundary\r\n\
    Content-Disposition: form-data; name=\"file\"; filename=\"x\"\r\n\
    Content-Type: text/plain\r\n\r\nposted by another account\r\n\
    --godwitformboundary--\r\n";
const POST_FORM_TYPE: (&str, &str) = (
    "content-type",
    "multipart/form-data; boundary=godwitformboundary",
);
const SELECT: &str = "<SelectObjectContentRequest><Expression>SELECT * FROM S3Object\
    </Expression><ExpressionType>SQL</ExpressionType><InputSerialization><CSV/>\
    </InputSerialization><OutputSerialization><CSV/></OutputSerialization>\
    </SelectObjectContentRequest>";

/// One request per operation addressed at a bucket or an object, in
/// `Endpoint` declaration order. An operation added to the router needs a
/// row here (`samples_cover_every_operation` says which).
#[rustfmt::skip]
const SAMPLES: &[Sample] = &[
    // ---- buckets: implemented ----
    ("HeadBucket", "HEAD", Bucket, "", &[], ""),
    ("DeleteBucket", "DELETE", Bucket, "", &[], ""),
    ("GetBucketLocation", "GET", Bucket, "location", &[], ""),
    ("GetBucketVersioning", "GET", Bucket, "versioning", &[], ""),
    ("PutBucketVersioning", "PUT", Bucket, "versioning", &[MD5], VERSIONING_SUSPENDED),
    ("GetBucketAcl", "GET", Bucket, "acl", &[], ""),
    ("ListObjects", "GET", Bucket, "", &[], ""),
    ("ListObjectsV2", "GET", Bucket, "list-type=2", &[], ""),
    ("ListObjectVersions", "GET", Bucket, "versions", &[], ""),
    ("ListMultipartUploads", "GET", Bucket, "uploads", &[], ""),
    ("DeleteObjects", "POST", Bucket, "delete", &[MD5], DELETE_KEYS),
    ("GetBucketReplication", "GET", Bucket, "replication", &[], ""),
    ("PutBucketReplication", "PUT", Bucket, "replication", &[MD5], S3_REPLICATION),
    ("DeleteBucketReplication", "DELETE", Bucket, "replication", &[], ""),
    ("OssPutBucketReplication", "POST", Bucket, "replication&comp=add", &[MD5], OSS_REPLICATION_ADD),
    ("OssDeleteBucketReplication", "POST", Bucket, "replication&comp=delete", &[MD5], OSS_REPLICATION_DELETE),
    ("GetBucketReplicationLocation", "GET", Bucket, "replicationLocation", &[], ""),
    ("GetBucketReplicationProgress", "GET", Bucket, "replicationProgress&rule-id=r1", &[], ""),
    ("PutBucketRtc", "PUT", Bucket, "rtc", &[MD5], OSS_RTC),
    ("GetBucketInfo", "GET", Bucket, "bucketInfo", &[], ""),
    ("GetBucketStat", "GET", Bucket, "stat", &[], ""),
    // The victim is versioned: this would enable Object Lock on it.
    ("GetObjectLockConfiguration", "GET", Bucket, "object-lock", &[], ""),
    ("PutObjectLockConfiguration", "PUT", Bucket, "object-lock", &[MD5],
        "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>\
         <Rule><DefaultRetention><Mode>COMPLIANCE</Mode><Days>1</Days></DefaultRetention></Rule>\
         </ObjectLockConfiguration>"),
    // The victim has a default encryption: a put would replace it, a
    // delete remove it.
    ("GetBucketEncryption", "GET", Bucket, "encryption", &[], ""),
    ("PutBucketEncryption", "PUT", Bucket, "encryption", &[MD5], ENCRYPTION),
    ("DeleteBucketEncryption", "DELETE", Bucket, "encryption", &[], ""),

    // ---- buckets: not implemented ----
    ("PutBucketAcl", "PUT", Bucket, "acl", &[("x-amz-acl", "public-read-write")], ""),
    ("GetBucketAccelerateConfiguration", "GET", Bucket, "accelerate", &[], ""),
    ("PutBucketAccelerateConfiguration", "PUT", Bucket, "accelerate", &[],
        "<AccelerateConfiguration><Status>Enabled</Status></AccelerateConfiguration>"),
    ("GetBucketAnalyticsConfiguration", "GET", Bucket, "analytics&id=a1", &[], ""),
    ("PutBucketAnalyticsConfiguration", "PUT", Bucket, "analytics&id=a1", &[],
        "<AnalyticsConfiguration><Id>a1</Id><StorageClassAnalysis/></AnalyticsConfiguration>"),
    ("DeleteBucketAnalyticsConfiguration", "DELETE", Bucket, "analytics&id=a1", &[], ""),
    ("ListBucketAnalyticsConfigurations", "GET", Bucket, "analytics", &[], ""),
    ("GetBucketCors", "GET", Bucket, "cors", &[], ""),
    ("PutBucketCors", "PUT", Bucket, "cors", &[MD5], CORS),
    ("DeleteBucketCors", "DELETE", Bucket, "cors", &[], ""),
    ("GetBucketIntelligentTieringConfiguration", "GET", Bucket, "intelligent-tiering&id=t1", &[], ""),
    ("PutBucketIntelligentTieringConfiguration", "PUT", Bucket, "intelligent-tiering&id=t1", &[],
        "<IntelligentTieringConfiguration><Id>t1</Id><Status>Enabled</Status>\
         </IntelligentTieringConfiguration>"),
    ("DeleteBucketIntelligentTieringConfiguration", "DELETE", Bucket, "intelligent-tiering&id=t1", &[], ""),
    ("ListBucketIntelligentTieringConfigurations", "GET", Bucket, "intelligent-tiering", &[], ""),
    ("GetBucketInventoryConfiguration", "GET", Bucket, "inventory&id=i1", &[], ""),
    ("PutBucketInventoryConfiguration", "PUT", Bucket, "inventory&id=i1", &[],
        "<InventoryConfiguration><Id>i1</Id><IsEnabled>true</IsEnabled></InventoryConfiguration>"),
    ("DeleteBucketInventoryConfiguration", "DELETE", Bucket, "inventory&id=i1", &[], ""),
    ("ListBucketInventoryConfigurations", "GET", Bucket, "inventory", &[], ""),
    ("GetBucketLifecycleConfiguration", "GET", Bucket, "lifecycle", &[], ""),
    ("PutBucketLifecycleConfiguration", "PUT", Bucket, "lifecycle", &[MD5], LIFECYCLE),
    ("DeleteBucketLifecycle", "DELETE", Bucket, "lifecycle", &[], ""),
    ("GetBucketLogging", "GET", Bucket, "logging", &[], ""),
    ("PutBucketLogging", "PUT", Bucket, "logging", &[MD5], "<BucketLoggingStatus/>"),
    ("GetBucketMetricsConfiguration", "GET", Bucket, "metrics&id=m1", &[], ""),
    ("PutBucketMetricsConfiguration", "PUT", Bucket, "metrics&id=m1", &[],
        "<MetricsConfiguration><Id>m1</Id></MetricsConfiguration>"),
    ("DeleteBucketMetricsConfiguration", "DELETE", Bucket, "metrics&id=m1", &[], ""),
    ("ListBucketMetricsConfigurations", "GET", Bucket, "metrics", &[], ""),
    ("GetBucketNotificationConfiguration", "GET", Bucket, "notification", &[], ""),
    ("PutBucketNotificationConfiguration", "PUT", Bucket, "notification", &[],
        "<NotificationConfiguration/>"),
    ("GetBucketOwnershipControls", "GET", Bucket, "ownershipControls", &[], ""),
    ("PutBucketOwnershipControls", "PUT", Bucket, "ownershipControls", &[MD5], OWNERSHIP),
    ("DeleteBucketOwnershipControls", "DELETE", Bucket, "ownershipControls", &[], ""),
    ("GetBucketPolicy", "GET", Bucket, "policy", &[], ""),
    ("PutBucketPolicy", "PUT", Bucket, "policy", &[MD5], POLICY),
    ("DeleteBucketPolicy", "DELETE", Bucket, "policy", &[], ""),
    ("GetBucketPolicyStatus", "GET", Bucket, "policyStatus", &[], ""),
    ("GetBucketRequestPayment", "GET", Bucket, "requestPayment", &[], ""),
    ("PutBucketRequestPayment", "PUT", Bucket, "requestPayment", &[MD5],
        "<RequestPaymentConfiguration><Payer>Requester</Payer></RequestPaymentConfiguration>"),
    ("GetBucketTagging", "GET", Bucket, "tagging", &[], ""),
    ("PutBucketTagging", "PUT", Bucket, "tagging", &[MD5], TAGS),
    ("DeleteBucketTagging", "DELETE", Bucket, "tagging", &[], ""),
    ("GetBucketWebsite", "GET", Bucket, "website", &[], ""),
    ("PutBucketWebsite", "PUT", Bucket, "website", &[MD5], WEBSITE),
    ("DeleteBucketWebsite", "DELETE", Bucket, "website", &[], ""),
    ("GetPublicAccessBlock", "GET", Bucket, "publicAccessBlock", &[], ""),
    ("PutPublicAccessBlock", "PUT", Bucket, "publicAccessBlock", &[MD5], PUBLIC_ACCESS),
    ("DeletePublicAccessBlock", "DELETE", Bucket, "publicAccessBlock", &[], ""),
    // A browser form upload; signed in the header here (a real form
    // carries a POST policy instead), which routes the same.
    ("PostObject", "POST", Bucket, "", &[POST_FORM_TYPE], POST_FORM),

    // ---- objects: implemented ----
    ("GetObject", "GET", Object, "", &[], ""),
    ("HeadObject", "HEAD", Object, "", &[], ""),
    ("PutObject", "PUT", Object, "", &[], "overwritten by another account"),
    // Onto itself with new metadata: the copy's destination is the victim.
    ("CopyObject", "PUT", Object, "",
        &[COPY_SOURCE, ("x-amz-metadata-directive", "REPLACE"), ("x-amz-meta-by", "intruder")], ""),
    ("DeleteObject", "DELETE", Object, "", &[], ""),
    ("GetObjectAcl", "GET", Object, "acl", &[], ""),
    ("CreateMultipartUpload", "POST", Object, "uploads", &[], ""),
    ("UploadPart", "PUT", Object, "partNumber=2&uploadId={upload}", &[], "a part from another account"),
    ("UploadPartCopy", "PUT", Object, "partNumber=2&uploadId={upload}", &[COPY_SOURCE], ""),
    ("CompleteMultipartUpload", "POST", Object, "uploadId={upload}", &[], COMPLETE),
    ("AbortMultipartUpload", "DELETE", Object, "uploadId={upload}", &[], ""),
    ("ListParts", "GET", Object, "uploadId={upload}", &[], ""),
    ("GetObjectTagging", "GET", Object, "tagging", &[], ""),
    ("PutObjectTagging", "PUT", Object, "tagging", &[MD5], TAGS),
    ("DeleteObjectTagging", "DELETE", Object, "tagging", &[], ""),
    ("GetObjectMeta", "HEAD", Object, "objectMeta", &[], ""),
    ("PutSymlink", "PUT", Object, "symlink", &[("x-oss-symlink-target", "{key}")], ""),
    ("GetSymlink", "GET", Object, "symlink", &[], ""),
    // The victim has no Object Lock: these must be refused before meta
    // would answer InvalidRequest.
    ("GetObjectLegalHold", "GET", Object, "legal-hold", &[], ""),
    ("PutObjectLegalHold", "PUT", Object, "legal-hold", &[MD5], "<LegalHold><Status>ON</Status></LegalHold>"),
    ("GetObjectRetention", "GET", Object, "retention", &[], ""),
    ("PutObjectRetention", "PUT", Object, "retention", &[MD5],
        "<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>2099-01-01T00:00:00Z</RetainUntilDate></Retention>"),

    // ---- objects: not implemented ----
    ("PutObjectAcl", "PUT", Object, "acl", &[("x-amz-acl", "public-read")], ""),
    ("GetObjectAttributes", "GET", Object, "attributes", &[("x-amz-object-attributes", "ETag,ObjectSize")], ""),
    ("GetObjectTorrent", "GET", Object, "torrent", &[], ""),
    ("RestoreObject", "POST", Object, "restore", &[], "<RestoreRequest><Days>1</Days></RestoreRequest>"),
    ("AppendObject", "POST", Object, "append&position=0", &[], "appended by another account"),
    ("SelectObjectContent", "POST", Object, "select&select-type=2", &[], SELECT),
    // Routed only without a bucket (S3 Object Lambda's callback): no
    // bucket to own, so no account but root may send it.
    ("WriteGetObjectResponse", "POST", Service, "WriteGetObjectResponse",
        &[("x-amz-request-route", "route"), ("x-amz-request-token", "token")], "body"),
    // A CORS preflight (signed here): answered before authorization, and
    // refused since the victim has no CORS rules.
    ("Options", "OPTIONS", Object, "",
        &[("origin", "https://evil.example"), ("access-control-request-method", "PUT")], ""),
];

/// The values the placeholders of a row stand for.
struct Fill<'a> {
    bucket: &'a str,
    key: &'a str,
    upload: &'a str,
    part_etag: &'a str,
}

impl Fill<'_> {
    fn apply(&self, s: &str, in_query: bool) -> String {
        let upload = if in_query {
            encode(self.upload)
        } else {
            self.upload.to_string()
        };
        s.replace("{bucket}", self.bucket)
            .replace("{key}", self.key)
            .replace("{upload}", &upload)
            .replace("{part_etag}", self.part_etag)
    }

    /// Path and query of a row.
    fn target(&self, at: At, query: &str) -> String {
        let path = match at {
            Service => "/".to_string(),
            Bucket => format!("/{}", self.bucket),
            Object => format!("/{}/{}", self.bucket, encode(self.key)),
        };
        if query.is_empty() {
            path
        } else {
            format!("{path}?{}", self.apply(query, true))
        }
    }

    /// Body and headers of a row, placeholders filled.
    fn request(&self, sample: &Sample) -> (Vec<(String, String)>, Vec<u8>) {
        let body = self.apply(sample.5, false).into_bytes();
        let md5 = base64_md5(&body);
        let headers = sample
            .4
            .iter()
            .map(|(k, v)| (k.to_string(), self.apply(v, false).replace("{md5}", &md5)))
            .collect();
        (headers, body)
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The operation the router picks for `sample`.
fn route(sample: &Sample, fill: &Fill) -> Result<&'static str, String> {
    let (_, method, at, query, _, _) = sample;
    let method = Method::from_bytes(method.as_bytes()).map_err(|e| e.to_string())?;
    let (headers, _) = fill.request(sample);
    let mut map = HeaderMap::new();
    for (k, v) in &headers {
        map.append(
            HeaderName::from_bytes(k.as_bytes()).map_err(|e| e.to_string())?,
            HeaderValue::from_str(v).map_err(|e| e.to_string())?,
        );
    }
    let query = fill.apply(query, true);
    let (bucket, key) = match at {
        Service => (None, None),
        Bucket => (Some(fill.bucket), None),
        Object => (Some(fill.bucket), Some(fill.key)),
    };
    router::parse(&method, bucket, key, &Query::parse(Some(&query)), &map)
        .map(|ep| ep.name())
        .map_err(|e| format!("{e:?}"))
}

/// Every row routes to the operation it names, and every operation but
/// those open to all has exactly one row.
fn check_samples_cover_every_operation() {
    let fill = Fill {
        bucket: "victim-bucket",
        key: KEY,
        upload: "some-upload-id",
        part_etag: "\"0123456789abcdef0123456789abcdef\"",
    };
    let mut problems = Vec::new();
    let mut rows = BTreeSet::new();
    for sample in SAMPLES {
        let name = sample.0;
        if !rows.insert(name) {
            problems.push(format!("{name}: more than one row in SAMPLES"));
        }
        if OPEN_TO_ALL.contains(&name) {
            problems.push(format!(
                "{name}: open to every account, it has no row in SAMPLES"
            ));
        }
        match route(sample, &fill) {
            Ok(got) if got == name => {}
            Ok(got) => problems.push(format!(
                "{name}: its row ({} {}) routes to {got}: fix the row",
                sample.1,
                fill.target(sample.2, sample.3)
            )),
            Err(e) => problems.push(format!(
                "{name}: its row ({} {}) does not route: {e}",
                sample.1,
                fill.target(sample.2, sample.3)
            )),
        }
    }
    let names: BTreeSet<&str> = Endpoint::NAMES.iter().copied().collect();
    assert_eq!(names.len(), Endpoint::NAMES.len(), "duplicate names");
    for name in &names {
        if !rows.contains(name) && !OPEN_TO_ALL.contains(name) {
            problems.push(format!(
                "{name}: no row in SAMPLES (tests/authz_every_operation.rs). Add one: a \
                 request for {name} at the victim bucket or object, which must be denied \
                 to an account that does not own the bucket (or, if every account may \
                 call it, add it to OPEN_TO_ALL and test that separately)"
            ));
        }
    }
    for name in rows.iter().chain(OPEN_TO_ALL) {
        if !names.contains(name) {
            problems.push(format!(
                "{name}: not an operation of the router (Endpoint::NAMES): remove or \
                 rename its row"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "SAMPLES does not match the router:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn samples_cover_every_operation() {
    check_samples_cover_every_operation();
}

/// Contents of every `<tag>...</tag>` in `xml`, in order.
fn tag_values<'a>(xml: &'a str, tag: &str) -> Vec<&'a str> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(i) = rest.find(&open) {
        rest = &rest[i + open.len()..];
        let Some(j) = rest.find(&close) else { break };
        out.push(&rest[..j]);
        rest = &rest[j + close.len()..];
    }
    out
}

/// An error body without what differs between two identical requests.
fn normalize(body: &str) -> String {
    let mut out = body.to_string();
    for tag in ["RequestId", "HostId"] {
        for v in tag_values(body, tag) {
            out = out.replace(&format!("<{tag}>{v}</{tag}>"), "");
        }
    }
    out
}

/// What root sees of one resource: status, the headers that describe the
/// object, and the body.
async fn observe(root: &S3, path: &str) -> String {
    let r = root.get(path).await;
    let status = r.status().as_u16();
    let mut headers: Vec<String> = r
        .headers()
        .iter()
        .filter(|(k, _)| {
            let k = k.as_str();
            [
                "etag",
                "last-modified",
                "content-length",
                "content-type",
                "x-amz-version-id",
                "x-amz-tagging-count",
                "x-amz-delete-marker",
            ]
            .contains(&k)
                || k.starts_with("x-amz-meta-")
        })
        .map(|(k, v)| format!("{k}: {}", v.to_str().unwrap_or("<binary>")))
        .collect();
    headers.sort();
    let body = r.text().await.unwrap();
    format!("{status}\n{}\n{}", headers.join("\n"), normalize(&body))
}

/// Everything about the victim bucket that a request let through could
/// change, as root reads it.
async fn snapshot(root: &S3, bucket: &str, upload: &str) -> BTreeMap<String, String> {
    let key = encode(KEY);
    let mut paths = vec![
        format!("/{bucket}?versioning"),
        format!("/{bucket}?versions"),
        format!("/{bucket}?list-type=2"),
        format!("/{bucket}?uploads"),
        format!("/{bucket}/{key}?uploadId={}", encode(upload)),
        format!("/{bucket}/{key}"),
        format!("/{bucket}/{key}?tagging"),
        format!("/{bucket}/{key}?acl"),
        format!("/{bucket}/{}", encode(OTHER)),
        format!("/{bucket}/{}?tagging", encode(OTHER)),
        format!("/{bucket}?replication"),
        format!("/{bucket}?cors"),
        format!("/{bucket}?lifecycle"),
        format!("/{bucket}?tagging"),
        format!("/{bucket}?encryption"),
        format!("/{bucket}?acl"),
        format!("/{bucket}?location"),
    ];
    // Every version's body too (an overwrite would be a new version, but
    // the old ones must still read the same).
    let versions = root
        .get(&format!("/{bucket}?versions"))
        .await
        .text()
        .await
        .unwrap();
    for v in tag_values(&versions, "Version") {
        let (k, id) = (tag_values(v, "Key"), tag_values(v, "VersionId"));
        paths.push(format!(
            "/{bucket}/{}?versionId={}",
            encode(k[0]),
            encode(id[0])
        ));
    }
    let mut out = BTreeMap::new();
    for p in paths {
        let seen = observe(root, &p).await;
        out.insert(p, seen);
    }
    out
}

/// Status and S3 error code of a response (`-` for a HEAD, whose error
/// has no body).
async fn outcome(r: reqwest::Response, head: bool) -> (u16, String) {
    let status = r.status().as_u16();
    let body = r.text().await.unwrap_or_default();
    let code = if head {
        "-".to_string()
    } else {
        error_code(&body)
    };
    (status, code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_on_another_accounts_bucket_is_denied() {
    check_samples_cover_every_operation();

    // ---- one all-in-one server ----
    let dir = tempfile::tempdir().unwrap();
    let [s3_port, admin_port] = free_ports::<2>();
    let data = dir.path().join("data");
    let _server = Proc::spawn(
        "server",
        &[
            "server",
            "--data-dir",
            data.to_str().unwrap(),
            "--s3-listen",
            &format!("127.0.0.1:{s3_port}"),
            "--admin-listen",
            &format!("127.0.0.1:{admin_port}"),
        ],
        &[
            ("GODWIT_ACCESS_KEY_ID", ROOT_ID),
            ("GODWIT_SECRET_ACCESS_KEY", ROOT_SECRET),
        ],
        dir.path(),
    );
    let s3_url = format!("http://127.0.0.1:{s3_port}");
    let admin_url = format!("http://127.0.0.1:{admin_port}");
    wait_healthy(&admin_url, Duration::from_secs(60)).await;
    let root = S3::new(&s3_url, ROOT_ID, ROOT_SECRET);
    let admin = S3::admin(&admin_url, ROOT_ID, ROOT_SECRET);

    // ---- root's bucket: versioned, two objects, a tag, an upload ----
    let suffix = &uuid::Uuid::new_v4().simple().to_string()[..12];
    let victim = format!("victim-{suffix}");
    assert_eq!(root.put(&format!("/{victim}"), vec![]).await.status(), 200);
    let r = root
        .send(
            "PUT",
            &format!("/{victim}?versioning"),
            &[("content-md5", &base64_md5(VERSIONING_ENABLED))],
            VERSIONING_ENABLED.to_vec(),
        )
        .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let doc = format!("/{victim}/{}", encode(KEY));
    for body in ["first version", "second version"] {
        let r = root.put(&doc, body.as_bytes().to_vec()).await;
        assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    }
    let other = format!("/{victim}/{}", encode(OTHER));
    assert_eq!(root.put(&other, b"other".to_vec()).await.status(), 200);
    let tags =
        b"<Tagging><TagSet><Tag><Key>owner</Key><Value>root</Value></Tag></TagSet></Tagging>";
    let r = root
        .send(
            "PUT",
            &format!("{doc}?tagging"),
            &[("content-md5", &base64_md5(tags))],
            tags.to_vec(),
        )
        .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let r = root
        .send("POST", &format!("{doc}?uploads"), &[], vec![])
        .await;
    assert_eq!(r.status(), 200);
    let upload = tag_values(&r.text().await.unwrap(), "UploadId")[0].to_string();
    let r = root
        .put(
            &format!("{doc}?partNumber=1&uploadId={}", encode(&upload)),
            pattern(1000, 7),
        )
        .await;
    assert_eq!(r.status(), 200);
    let part_etag = r.headers()["etag"].to_str().unwrap().to_string();

    let r = root
        .send(
            "PUT",
            &format!("/{victim}?encryption"),
            &[("content-md5", &base64_md5(VICTIM_ENCRYPTION))],
            VICTIM_ENCRYPTION.to_vec(),
        )
        .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());

    let before = snapshot(&root, &victim, &upload).await;
    let seen = |path: String| before[&path].as_str();
    let versions = seen(format!("/{victim}?versions"));
    assert_eq!(tag_values(versions, "Version").len(), 3, "{versions}");
    let uploads = seen(format!("/{victim}?uploads"));
    assert!(uploads.contains(&upload), "{uploads}");
    let parts = seen(format!("{doc}?uploadId={}", encode(&upload)));
    assert!(parts.contains("<PartNumber>1</PartNumber>"), "{parts}");
    let tagging = seen(format!("{doc}?tagging"));
    assert!(tagging.contains("<Key>owner</Key>"), "{tagging}");
    let encryption = seen(format!("/{victim}?encryption"));
    assert!(
        encryption.contains("<BucketKeyEnabled>false</BucketKeyEnabled>"),
        "{encryption}"
    );

    // ---- a second account and its key ----
    let r = admin
        .send("POST", "/admin/v1/accounts?name=intruder", &[], vec![])
        .await;
    assert!(r.status().is_success(), "create account: {}", r.status());
    let account: serde_json::Value = r.json().await.unwrap();
    let account_id = account["id"].as_str().unwrap().to_string();
    assert_eq!(account["is_root"], false, "{account}");
    let r = admin
        .send(
            "POST",
            "/admin/v1/keys?name=intruder-key&account=intruder",
            &[],
            vec![],
        )
        .await;
    assert!(r.status().is_success(), "create key: {}", r.status());
    let key: serde_json::Value = r.json().await.unwrap();
    assert_eq!(key["account"].as_str(), Some(account_id.as_str()), "{key}");
    assert_eq!(key["is_root"], false, "{key}");
    let intruder = S3::new(
        &s3_url,
        key["access_key_id"].as_str().unwrap(),
        key["secret_access_key"].as_str().unwrap(),
    );
    let i = &intruder;
    eventually(
        "the new key is accepted",
        Duration::from_secs(10),
        || async move { i.get("/").await.status() == 200 },
    )
    .await;

    let mut failures = Vec::new();

    // ---- what every account may do, and NoSuchBucket ----
    let listed = intruder.get("/").await.text().await.unwrap();
    if listed.contains(&victim) {
        failures.push(format!("ListBuckets shows the victim bucket: {listed}"));
    }
    let r = intruder.put(&format!("/{victim}"), vec![]).await;
    let (status, code) = outcome(r, false).await;
    if (status, code.as_str()) != (409, "BucketAlreadyExists") {
        failures.push(format!(
            "CreateBucket of another account's bucket: {status} {code}, want 409 BucketAlreadyExists"
        ));
    }
    let r = intruder.get(&format!("/nobucket-{suffix}/x")).await;
    let (status, code) = outcome(r, false).await;
    if (status, code.as_str()) != (404, "NoSuchBucket") {
        failures.push(format!(
            "GetObject in a bucket that does not exist: {status} {code}, want 404 NoSuchBucket"
        ));
    }

    // ---- every other operation, at the victim ----
    let fill = Fill {
        bucket: &victim,
        key: KEY,
        upload: &upload,
        part_etag: &part_etag,
    };
    for sample in SAMPLES {
        let (name, method, at, query, _, _) = *sample;
        let target = fill.target(at, query);
        let (headers, body) = fill.request(sample);
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let r = intruder.send(method, &target, &headers, body).await;
        let head = method == "HEAD";
        let (status, code) = outcome(r, head).await;
        // A CORS preflight is answered before authorization, as on S3:
        // the victim has no CORS rules, so it is refused all the same.
        let want = match name {
            "Options" => "AccessForbidden",
            _ => "AccessDenied",
        };
        if status != 403 || !(head || code == want) {
            failures.push(format!(
                "{name} ({method} {target}): {status} {code}, want 403 {want}"
            ));
        }
    }

    // ---- copies out of the victim into the intruder's own bucket ----
    let own = format!("intruder-{suffix}");
    let r = intruder.put(&format!("/{own}"), vec![]).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let source = format!("/{victim}/{}", encode(KEY));
    let r = intruder
        .send(
            "PUT",
            &format!("/{own}/stolen"),
            &[("x-amz-copy-source", &source)],
            vec![],
        )
        .await;
    let (status, code) = outcome(r, false).await;
    if (status, code.as_str()) != (403, "AccessDenied") {
        failures.push(format!(
            "CopyObject from the victim into the intruder's bucket: {status} {code}, \
             want 403 AccessDenied"
        ));
    }
    let r = intruder
        .send("POST", &format!("/{own}/stolen?uploads"), &[], vec![])
        .await;
    assert_eq!(r.status(), 200);
    let own_upload = tag_values(&r.text().await.unwrap(), "UploadId")[0].to_string();
    let own_parts = format!("/{own}/stolen?uploadId={}", encode(&own_upload));
    let r = intruder
        .send(
            "PUT",
            &format!(
                "/{own}/stolen?partNumber=1&uploadId={}",
                encode(&own_upload)
            ),
            &[("x-amz-copy-source", &source)],
            vec![],
        )
        .await;
    let (status, code) = outcome(r, false).await;
    if (status, code.as_str()) != (403, "AccessDenied") {
        failures.push(format!(
            "UploadPartCopy from the victim into the intruder's upload: {status} {code}, \
             want 403 AccessDenied"
        ));
    }
    let parts = intruder.get(&own_parts).await.text().await.unwrap();
    if parts.contains("<Part>") {
        failures.push(format!("the intruder's upload got a part: {parts}"));
    }
    let r = intruder.send("DELETE", &own_parts, &[], vec![]).await;
    assert_eq!(r.status(), 204);
    let versions = intruder
        .get(&format!("/{own}?versions"))
        .await
        .text()
        .await
        .unwrap();
    if versions.contains("<Version>") || versions.contains("<DeleteMarker>") {
        failures.push(format!("the intruder's bucket is not empty: {versions}"));
    }
    let listed = intruder.get("/").await.text().await.unwrap();
    if !listed.contains(&format!("<Name>{own}</Name>")) || listed.contains(&victim) {
        failures.push(format!(
            "ListBuckets should show the intruder's own bucket only: {listed}"
        ));
    }

    // ---- root sees the victim exactly as before ----
    let after = snapshot(&root, &victim, &upload).await;
    for path in before.keys().chain(after.keys()).collect::<BTreeSet<_>>() {
        match (before.get(path), after.get(path)) {
            (Some(was), Some(now)) if was == now => {}
            (Some(was), Some(now)) => failures.push(format!(
                "GET {path} (as root) changed:\n--- before\n{was}\n--- after\n{now}"
            )),
            (Some(_), None) => failures.push(format!("version gone: GET {path}")),
            (None, _) => failures.push(format!("new version: GET {path}")),
        }
    }

    assert!(
        failures.is_empty(),
        "{} failure(s) of authorization:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Content-MD5 of `body`.
fn base64_md5(body: &[u8]) -> String {
    use base64::Engine;
    use md5::Digest;
    base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(body))
}
