//! POST Object: a browser form upload (`POST /bucket`,
//! `multipart/form-data`), S3's
//! (https://docs.aws.amazon.com/AmazonS3/latest/API/RESTObjectPOST.html)
//! and OSS's PostObject.
//!
//! The form's fields before `file` are read whole (at most
//! `MAX_FORM_FIELDS` bytes, as S3 allows); fields after the file are
//! ignored, as S3 does. The credentials are fields too: a policy signed
//! with SigV4 (`x-amz-credential`, `x-amz-signature`), SigV2
//! (`AWSAccessKeyId`, `signature`), OSS V1 (`OSSAccessKeyId`,
//! `Signature`) or OSS V4 (`x-oss-credential`, `x-oss-signature`), each
//! an HMAC of the base64 policy with the key's secret, derived as the
//! header schemes derive it (`crate::auth`). A form without policy or
//! signature acts for the request's own caller (anonymous, for a
//! browser). The policy is checked by `post_policy`.
//!
//! The upload itself is PutObject's: the form's fields become the
//! headers of a PutObject request (`acl` -> `x-amz-acl`, `tagging` ->
//! `x-amz-tagging`, the content headers, `x-amz-meta-*`, ...), which is
//! authorized as a PutObject of the form's key and run by
//! `object::put_object` with the file part as its body. The file part is
//! streamed, never buffered: the put path takes a body of unknown length
//! (as it does for aws-chunked uploads without a declared length) and
//! `FileBody` checks the policy's `content-length-range` on the bytes as
//! they pass, failing the stream (so nothing is committed) outside it.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use godwit_common::types::Account;
use godwit_common::ByteStream;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use serde::Serialize;

use super::post_policy::{check_length, substitute_filename, FormFields, PostPolicy};
use super::{object, ApiResult, Ctx, DialectRules, XmlDoc};
use crate::auth::sigv4::{self, Credential};
use crate::auth::{
    derive_signing_key, hmac_sha256, parse_amz_date, signatures_match, sigv2, AuthOutcome,
    AuthScheme, PayloadCheck, SignedHeaders,
};
use crate::authz::{self, Access, ClientConn};
use crate::dialect::Dialect;
use crate::error::{from_io, S3Error};
use crate::router::Endpoint;
use crate::xml::{render, url_encode};
use crate::Gateway;

/// The most the fields before `file` may hold, names and values (S3
/// refuses a form whose fields preceding the file pass 20 KB).
pub const MAX_FORM_FIELDS: usize = 20 * 1024;
/// What follows the file (ignored fields, the closing boundary) is read
/// and dropped up to this much before the upload commits, so that the
/// connection can carry the next request; past it, the connection is
/// closed. A request whose signature covers its whole body is read to
/// its end whatever its size, since only the end proves it.
const MAX_TRAILING_BYTES: usize = 64 * 1024;

/// What an OSS form needs of the OSS dialect, handed in by `dispatch`
/// (`api` names no dialect).
pub struct OssForms {
    /// `oss::wire::alias_request_headers`: the S3 names of the form's
    /// `x-oss-*` fields.
    pub alias_headers: fn(&mut HeaderMap),
    /// `oss::wire::rules`.
    pub rules: fn(&HeaderMap, Dialect) -> DialectRules,
    /// `oss::auth::region_matches`: an OSS V4 credential's region.
    pub region_matches: fn(&str, &str) -> bool,
}

// ---- reading the form ----

fn malformed_form() -> S3Error {
    S3Error::MalformedPOSTRequest
}

/// S3's answer to a form without a field it needs.
fn missing(name: &str) -> S3Error {
    S3Error::InvalidArgument(format!(
        "Bucket POST must contain a field named '{name}'.  If it is specified, please check the \
         order of the fields."
    ))
}

/// A multipart error as the client's error: a failure of the request
/// body underneath keeps its own (IncompleteBody, RequestTimeout, ...).
fn form_error(e: multer::Error) -> S3Error {
    match e {
        multer::Error::StreamReadFailed(inner) => match inner.downcast::<std::io::Error>() {
            Ok(io) => from_io(*io),
            Err(_) => S3Error::IncompleteBody,
        },
        _ => malformed_form(),
    }
}

/// The form up to its file.
struct Form {
    fields: FormFields,
    /// The `file` part, unread.
    file: multer::Field<'static>,
    /// The file part's `filename` (for `${filename}`).
    filename: String,
    /// The request body, read to its end by `FileBody` after the file.
    body: SharedBody,
}

/// The request body under the multipart parser, shared so that what the
/// parser leaves unread after the file can still be read to the body's
/// end, where its own checks run (Content-Length, a payload hash).
#[derive(Clone)]
struct SharedBody(Arc<Mutex<ByteStream>>);

impl Stream for SharedBody {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut body = self.0.lock().unwrap_or_else(|p| p.into_inner());
        body.as_mut().poll_next(cx)
    }
}

impl SharedBody {
    /// Reads what follows the file (S3 ignores it) to the body's end, up
    /// to `budget` bytes (None: all of it). A failure of the body itself
    /// is the upload's failure.
    async fn finish(mut self, budget: Option<usize>) -> Result<(), S3Error> {
        let mut left = budget.unwrap_or(usize::MAX);
        while let Some(chunk) = self.next().await {
            match left.checked_sub(chunk.map_err(from_io)?.len()) {
                Some(l) => left = l,
                // Past the budget the connection is left to close.
                None => return Ok(()),
            }
        }
        Ok(())
    }
}

/// The boundary of a `multipart/form-data` request; S3 refuses any
/// other POST to a bucket as a failed precondition.
fn boundary(headers: &HeaderMap) -> Result<String, S3Error> {
    let content_type = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let is_form = content_type
        .split(';')
        .next()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("multipart/form-data"));
    if !is_form {
        return Err(S3Error::PreconditionFailed);
    }
    multer::parse_boundary(content_type).map_err(|_| malformed_form())
}

/// Reads the fields before `file` (names compared ignoring case), and
/// stops at the file.
async fn read_form(body: ByteStream, boundary: String) -> Result<Form, S3Error> {
    let body = SharedBody(Arc::new(Mutex::new(body)));
    let mut multipart = multer::Multipart::new(body.clone(), boundary);
    let mut fields = FormFields::default();
    let mut budget = MAX_FORM_FIELDS;
    let too_large = || S3Error::MaxPostPreDataLengthExceeded;
    loop {
        let Some(mut field) = multipart.next_field().await.map_err(form_error)? else {
            return Err(S3Error::InvalidArgument(
                "POST requires exactly one file upload per request.".into(),
            ));
        };
        let name = field.name().ok_or_else(malformed_form)?.to_string();
        if name.eq_ignore_ascii_case("file") {
            let filename = field.file_name().unwrap_or_default().to_string();
            return Ok(Form {
                fields,
                file: field,
                filename,
                body,
            });
        }
        budget = budget.checked_sub(name.len()).ok_or_else(too_large)?;
        let mut value = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(form_error)? {
            budget = budget.checked_sub(chunk.len()).ok_or_else(too_large)?;
            value.extend_from_slice(&chunk);
        }
        let value = String::from_utf8(value).map_err(|_| {
            S3Error::InvalidArgument(format!("The form field {name} is not UTF-8 text."))
        })?;
        fields.push(&name, value)?;
    }
}

// ---- the form's signature ----

const OSS_V4_ALGORITHM: &str = "OSS4-HMAC-SHA256";
/// OSS V4's key derivation (`oss::auth::v4`): `aliyun_v4` + secret, then
/// date, region, `oss`, `aliyun_v4_request`.
const OSS_V4_SECRET_PREFIX: &str = "aliyun_v4";
const OSS_V4_SERVICE: &str = "oss";
const OSS_V4_TERMINATOR: &str = "aliyun_v4_request";

/// How a form is signed.
enum FormSignature<'a> {
    /// Neither policy nor signature.
    Unsigned,
    /// `x-amz-algorithm`, `x-amz-credential`, `x-amz-date`, `x-amz-signature`.
    AwsV4 {
        credential: Credential,
        signature: &'a str,
    },
    /// `AWSAccessKeyId` and `signature`.
    AwsV2 {
        access_key: &'a str,
        signature: &'a str,
    },
    /// `OSSAccessKeyId` and `Signature`.
    OssV1 {
        access_key: &'a str,
        signature: &'a str,
    },
    /// `x-oss-signature-version`, `x-oss-credential`, `x-oss-date`,
    /// `x-oss-signature`.
    OssV4 {
        credential: Credential,
        signature: &'a str,
    },
}

fn credential_error(detail: &str) -> S3Error {
    S3Error::AuthorizationQueryParametersError(format!(
        "Error parsing the X-Amz-Credential parameter; {detail}"
    ))
}

impl<'a> FormSignature<'a> {
    /// Reads the signature fields of `fields`, checking the credential's
    /// scope against this gateway's `region` as the header schemes do.
    fn read(fields: &'a FormFields, region: &str, oss: &OssForms) -> Result<Self, S3Error> {
        let get = |name: &str| fields.get(name).filter(|v| !v.is_empty());
        let require = |name: &str| get(name).ok_or_else(|| missing(name));
        let any = |names: &[&str]| names.iter().any(|n| fields.has(n));

        if any(&["x-amz-algorithm", "x-amz-credential", "x-amz-signature"]) {
            let algorithm = require("x-amz-algorithm")?;
            if algorithm != sigv4::ALGORITHM {
                return Err(S3Error::InvalidArgument(format!(
                    "Invalid x-amz-algorithm: only {} is supported.",
                    sigv4::ALGORITHM
                )));
            }
            let credential = Credential::parse(require("x-amz-credential")?).ok_or_else(|| {
                credential_error(
                    "the Credential is mal-formed; expecting \
                     \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".",
                )
            })?;
            if let Some(problem) = credential.scope_problem(sigv4::SERVICE) {
                return Err(credential_error(&problem));
            }
            if credential.region != region {
                return Err(credential_error(&format!(
                    "the region '{}' is wrong; expecting '{region}'",
                    credential.region
                )));
            }
            check_date(require("x-amz-date")?, &credential)?;
            let signature = require("x-amz-signature")?;
            require("policy")?;
            return Ok(FormSignature::AwsV4 {
                credential,
                signature,
            });
        }
        if any(&[
            "x-oss-signature-version",
            "x-oss-credential",
            "x-oss-signature",
        ]) {
            if require("x-oss-signature-version")? != OSS_V4_ALGORITHM {
                return Err(S3Error::InvalidArgument(format!(
                    "Invalid x-oss-signature-version: only {OSS_V4_ALGORITHM} is supported."
                )));
            }
            let credential = Credential::parse(require("x-oss-credential")?)
                .filter(|c| c.service == OSS_V4_SERVICE && c.terminator == OSS_V4_TERMINATOR)
                .ok_or_else(|| {
                    S3Error::InvalidArgument(format!(
                        "Invalid x-oss-credential; expecting \
                         \"<AccessKeyId>/<SignDate>/<Region>/{OSS_V4_SERVICE}/{OSS_V4_TERMINATOR}\"."
                    ))
                })?;
            if !(oss.region_matches)(&credential.region, region) {
                return Err(S3Error::InvalidArgument(
                    "Invalid signing region in x-oss-credential.".into(),
                ));
            }
            check_date(require("x-oss-date")?, &credential)?;
            let signature = require("x-oss-signature")?;
            require("policy")?;
            return Ok(FormSignature::OssV4 {
                credential,
                signature,
            });
        }
        if fields.has("ossaccesskeyid") {
            let access_key = require("OSSAccessKeyId")?;
            let signature = require("Signature")?;
            require("policy")?;
            return Ok(FormSignature::OssV1 {
                access_key,
                signature,
            });
        }
        if any(&["awsaccesskeyid", "signature", "policy"]) {
            let access_key = require("AWSAccessKeyId")?;
            let signature = require("signature")?;
            require("policy")?;
            return Ok(FormSignature::AwsV2 {
                access_key,
                signature,
            });
        }
        Ok(FormSignature::Unsigned)
    }

    fn access_key(&self) -> &str {
        match self {
            FormSignature::Unsigned => "",
            FormSignature::AwsV4 { credential, .. } | FormSignature::OssV4 { credential, .. } => {
                &credential.access_key
            }
            FormSignature::AwsV2 { access_key, .. } | FormSignature::OssV1 { access_key, .. } => {
                access_key
            }
        }
    }

    fn scheme(&self) -> AuthScheme {
        match self {
            FormSignature::Unsigned => AuthScheme::Anonymous,
            FormSignature::AwsV4 { .. } => AuthScheme::AwsV4,
            FormSignature::AwsV2 { .. } => AuthScheme::AwsV2,
            FormSignature::OssV1 { .. } => AuthScheme::OssV1,
            FormSignature::OssV4 { .. } => AuthScheme::OssV4,
        }
    }

    fn given(&self) -> &str {
        match self {
            FormSignature::Unsigned => "",
            FormSignature::AwsV4 { signature, .. }
            | FormSignature::AwsV2 { signature, .. }
            | FormSignature::OssV1 { signature, .. }
            | FormSignature::OssV4 { signature, .. } => signature,
        }
    }

    /// The signature of `policy` (the field as sent) with `secret`: an
    /// HMAC with the scheme's key, hex for the V4 schemes, base64 for
    /// the HMAC-SHA1 ones.
    fn expected(&self, secret: &str, policy: &str) -> String {
        match self {
            FormSignature::Unsigned => String::new(),
            FormSignature::AwsV4 { credential, .. } => {
                let key = sigv4::signing_key(
                    secret,
                    &credential.date,
                    &credential.region,
                    &credential.service,
                );
                hex::encode(hmac_sha256(&key, policy.as_bytes()))
            }
            FormSignature::OssV4 { credential, .. } => {
                let key = derive_signing_key(
                    OSS_V4_SECRET_PREFIX,
                    secret,
                    &credential.date,
                    &credential.region,
                    &credential.service,
                    &credential.terminator,
                );
                hex::encode(hmac_sha256(&key, policy.as_bytes()))
            }
            FormSignature::AwsV2 { .. } | FormSignature::OssV1 { .. } => {
                sigv2::signature(secret, policy)
            }
        }
    }
}

/// `x-amz-date` / `x-oss-date`: `YYYYMMDDTHHMMSSZ` on the credential's day.
fn check_date(date: &str, credential: &Credential) -> Result<(), S3Error> {
    if date.len() != 16 || !date.is_ascii() || parse_amz_date(date).is_none() {
        return Err(S3Error::InvalidArgument(
            "The form's date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"".into(),
        ));
    }
    if date[..8] != credential.date {
        return Err(credential_error(
            "Invalid credential date. Date is not the same as the form's date.",
        ));
    }
    Ok(())
}

/// Verifies a signed form: the caller is the key's account.
async fn verify(
    gw: &Gateway,
    signature: &FormSignature<'_>,
    policy: &str,
) -> Result<(AuthOutcome, Arc<Account>), S3Error> {
    let key = gw.keys.key(signature.access_key()).await?;
    let expected = signature.expected(&key.secret_access_key, policy);
    if !signatures_match(&expected, signature.given()) {
        return Err(S3Error::SignatureDoesNotMatch);
    }
    let caller = gw.accounts.of_key(&key).await?;
    let region = match signature {
        FormSignature::AwsV4 { credential, .. } | FormSignature::OssV4 { credential, .. } => {
            Some(credential.region.clone())
        }
        _ => None,
    };
    let outcome = AuthOutcome {
        access_key_id: key.access_key_id.clone(),
        payload: PayloadCheck::Unsigned,
        region,
        scheme: signature.scheme(),
        signed: SignedHeaders::default(),
    };
    Ok((outcome, caller))
}

// ---- the PutObject the form stands for ----

/// Form fields passed on as the header of the same name.
const SAME_NAME_FIELDS: [&str; 7] = [
    "cache-control",
    "content-type",
    "content-disposition",
    "content-encoding",
    "content-language",
    "expires",
    "content-md5",
];

/// Prefixes of form fields passed on as headers (what a PutObject reads
/// or authorization may condition on). Nothing else gets through: no
/// `x-godwit-*`, no copy source, no framing header.
const PASSED_PREFIXES: [&str; 6] = [
    "x-amz-meta-",
    "x-amz-checksum-",
    "x-amz-server-side-encryption",
    "x-amz-storage-class",
    "x-amz-website-redirect-location",
    "x-amz-object-lock-",
];

/// The same for an OSS form, whose fields `OssForms::alias_headers`
/// renames afterwards.
const OSS_PASSED_PREFIXES: [&str; 6] = [
    "x-oss-meta-",
    "x-oss-object-acl",
    "x-oss-forbid-overwrite",
    "x-oss-storage-class",
    "x-oss-server-side-encryption",
    "x-oss-tagging",
];

/// Request headers the upload keeps: authorization's `aws:Referer` and
/// `aws:UserAgent`, and the Host of the object's Location.
const KEPT_REQUEST_HEADERS: [&str; 3] = ["host", "user-agent", "referer"];

fn header_name(name: &str) -> Result<HeaderName, S3Error> {
    HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes())
        .map_err(|_| S3Error::InvalidArgument(format!("The form field name {name} is not valid.")))
}

fn header_value(name: &str, value: &str) -> Result<HeaderValue, S3Error> {
    HeaderValue::from_bytes(value.as_bytes()).map_err(|_| {
        S3Error::InvalidArgument(format!("The value of the form field {name} is not valid."))
    })
}

/// The headers of the PutObject a form stands for.
fn form_headers(
    request: &HeaderMap,
    fields: &FormFields,
    oss_form: bool,
) -> Result<HeaderMap, S3Error> {
    let mut out = HeaderMap::new();
    for name in KEPT_REQUEST_HEADERS {
        if let Some(v) = request.get(name) {
            out.insert(name, v.clone());
        }
    }
    for f in fields.iter() {
        let lower = f.name.to_ascii_lowercase();
        let (name, value) = match lower.as_str() {
            "acl" => ("x-amz-acl".to_string(), f.value.clone()),
            "tagging" => {
                let tags = crate::xml::tagging::parse_tagging(f.value.as_bytes())?;
                let encoded = url::form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(&tags)
                    .finish();
                ("x-amz-tagging".to_string(), encoded)
            }
            // Without `aws-chunked`, which would make the put path read
            // the file as aws-chunked framing.
            "content-encoding" => match super::headers::without_aws_chunked(&f.value) {
                Some(v) => (lower, v),
                None => continue,
            },
            n if SAME_NAME_FIELDS.contains(&n) => (lower, f.value.clone()),
            n if PASSED_PREFIXES.iter().any(|p| n.starts_with(p)) => (lower, f.value.clone()),
            n if oss_form && OSS_PASSED_PREFIXES.iter().any(|p| n.starts_with(p)) => {
                (lower, f.value.clone())
            }
            _ => continue,
        };
        out.insert(header_name(&name)?, header_value(&f.name, &value)?);
    }
    Ok(out)
}

/// The object's URL as the response shows it: the request's scheme,
/// host and path, and the key.
fn object_url(parts: &http::request::Parts, key: &str) -> String {
    let secure = parts
        .extensions
        .get::<ClientConn>()
        .is_some_and(|c| c.secure);
    let scheme = if secure { "https" } else { "http" };
    let host = parts
        .headers
        .get(http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    let path = parts.uri.path().trim_end_matches('/');
    format!("{scheme}://{host}{path}/{}", url_encode(key))
}

// ---- the file ----

/// Where the file stream leaves the error that ended it: the put path
/// sees only that its body failed.
type Failure = Arc<Mutex<Option<S3Error>>>;

/// The file part as the upload's body, held to the policy's
/// `content-length-range` as it streams. Its end is reported only once
/// the rest of the request body has been read: a body whose own check
/// fails after the file (a payload hash, a cut connection) must not
/// leave a committed object behind.
struct FileBody {
    /// The `file` part; gone once read to its end.
    file: Option<multer::Field<'static>>,
    /// The request body, to be read to its end after the file.
    body: Option<SharedBody>,
    /// How much of what follows is read: all of it when the request's
    /// signature covers the whole body (None), else `MAX_TRAILING_BYTES`.
    trailing: Option<usize>,
    seen: u64,
    range: Option<(u64, u64)>,
    failure: Failure,
}

impl FileBody {
    fn new(form_file: multer::Field<'static>, body: SharedBody) -> Self {
        FileBody {
            file: Some(form_file),
            body: Some(body),
            trailing: Some(MAX_TRAILING_BYTES),
            seen: 0,
            range: None,
            failure: Failure::default(),
        }
    }

    fn fail(&mut self, e: S3Error) -> std::io::Error {
        self.file = None;
        self.body = None;
        *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
        std::io::Error::other("form file refused")
    }

    async fn next(&mut self) -> Option<Result<Bytes, std::io::Error>> {
        let file = self.file.as_mut()?;
        match file.chunk().await {
            Ok(Some(chunk)) => {
                self.seen += chunk.len() as u64;
                // Too large is known at once; too small only at the end.
                let max_only = self.range.map(|(_, max)| (0, max));
                match check_length(self.seen, max_only) {
                    Ok(()) => Some(Ok(chunk)),
                    Err(e) => Some(Err(self.fail(e))),
                }
            }
            Ok(None) => {
                self.file = None;
                let body = self.body.take()?;
                let checked = match body.finish(self.trailing).await {
                    Ok(()) => check_length(self.seen, self.range),
                    Err(e) => Err(e),
                };
                checked.err().map(|e| Err(self.fail(e)))
            }
            Err(e) => Some(Err(self.fail(form_error(e)))),
        }
    }

    fn into_stream(self) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send {
        // Fused: the body reader may poll once more after the end.
        futures::stream::unfold(self, |mut file| async move {
            let item = file.next().await?;
            Some((item, file))
        })
        .fuse()
    }
}

// ---- the answer ----

/// The document of `success_action_status=201`.
#[derive(Serialize)]
struct PostResponse<'a> {
    #[serde(rename = "Location")]
    location: &'a str,
    #[serde(rename = "Bucket")]
    bucket: &'a str,
    #[serde(rename = "Key")]
    key: &'a str,
    #[serde(rename = "ETag")]
    etag: &'a str,
}

/// `success_action_redirect` (or the older `redirect`) with the bucket,
/// key and ETag added to its query; None when it is not a URL S3 could
/// interpret, which leaves the answer to `success_action_status`.
fn redirect_url(fields: &FormFields, bucket: &str, key: &str, etag: &str) -> Option<String> {
    let raw = fields
        .get("success_action_redirect")
        .or_else(|| fields.get("redirect"))?;
    let mut url = url::Url::parse(raw.trim()).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    url.query_pairs_mut()
        .append_pair("bucket", bucket)
        .append_pair("key", key)
        .append_pair("etag", etag);
    Some(url.into())
}

/// The answer to a stored form: a 303 to the redirect, or the
/// `success_action_status` asked for (200, 201 with a PostResponse
/// document, 204 otherwise), with the PutObject's headers and Location.
fn respond(ctx: &Ctx, fields: &FormFields, put: Response) -> Result<Response, S3Error> {
    let (mut head, _) = put.into_parts();
    let etag = head
        .headers
        .get(http::header::ETAG)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let location = object_url(&ctx.parts, ctx.key());
    head.headers
        .insert(http::header::LOCATION, header_value("location", &location)?);
    if let Some(to) = redirect_url(fields, ctx.bucket(), ctx.key(), &etag) {
        head.status = StatusCode::SEE_OTHER;
        head.headers
            .insert(http::header::LOCATION, header_value("redirect", &to)?);
        return Ok(Response::from_parts(head, Body::empty()));
    }
    let body = match fields.get("success_action_status").map(str::trim) {
        Some("200") => {
            head.status = StatusCode::OK;
            Body::empty()
        }
        Some("201") => {
            head.status = StatusCode::CREATED;
            let doc = PostResponse {
                location: &location,
                bucket: ctx.bucket(),
                key: ctx.key(),
                etag: &etag,
            };
            head.headers.insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/xml"),
            );
            head.extensions.insert(XmlDoc);
            Body::from(render("PostResponse", &doc)?)
        }
        // S3 answers any other value, or none, with 204.
        _ => {
            head.status = StatusCode::NO_CONTENT;
            Body::empty()
        }
    };
    Ok(Response::from_parts(head, body))
}

// ---- the operation ----

/// POST Object. `lib.rs` leaves an anonymous request's authorization to
/// this handler (the credentials are in the body); a signed request was
/// authorized as PostObject before dispatch and is authorized again here
/// as the PutObject its form asks for.
pub async fn post_object(ctx: Ctx, body: Body, oss: &OssForms) -> ApiResult {
    let Ctx {
        gw,
        parts,
        query,
        bucket,
        auth,
        caller,
        dialect,
        ..
    } = ctx;
    let bucket = bucket.unwrap_or_default();
    let boundary = boundary(&parts.headers)?;
    // The request body as sent (a header-signed request's payload hash
    // is checked here), then the form inside it.
    let decoded = crate::body::decode(&parts, &auth, body)?;
    // A signature over the whole body is verified only at its end, which
    // the upload must wait for before it commits.
    let body_signed = !matches!(auth.payload, PayloadCheck::Unsigned);
    let Form {
        mut fields,
        file,
        filename,
        body: request_body,
    } = read_form(decoded.stream, boundary).await?;

    let key = substitute_filename(fields.get("key").ok_or_else(|| missing("key"))?, &filename);
    fields.set("key", key.clone());

    let signature = FormSignature::read(&fields, &gw.cfg.region, oss)?;
    let oss_form = matches!(
        signature,
        FormSignature::OssV1 { .. } | FormSignature::OssV4 { .. }
    );
    let mut range = None;
    let (auth, caller) = match &signature {
        // No policy: the request's own caller (anonymous, for a browser).
        // Its body is checked as it streams; the file is not framed by it.
        FormSignature::Unsigned => {
            let mut own = auth;
            own.payload = PayloadCheck::Unsigned;
            (own, caller)
        }
        // `FormSignature::read` made sure of the policy.
        signed => {
            let policy_b64 = fields.get("policy").unwrap_or_default();
            let form_caller = verify(&gw, signed, policy_b64).await?;
            let policy = PostPolicy::decode(policy_b64)?;
            // S3 wants every field named by a condition; OSS does not.
            let every_field_named = !oss_form;
            let now = time::OffsetDateTime::now_utc();
            policy.check(&fields, &bucket, now, every_field_named)?;
            range = policy.length_range();
            form_caller
        }
    };

    let mut headers = form_headers(&parts.headers, &fields, oss_form)?;
    let (dialect, rules) = if oss_form {
        (oss.alias_headers)(&mut headers);
        (Dialect::Oss, (oss.rules)(&headers, Dialect::Oss))
    } else {
        (dialect, DialectRules::default())
    };
    let mut put_parts = http::Request::new(()).into_parts().0;
    put_parts.method = parts.method;
    put_parts.uri = parts.uri;
    put_parts.version = parts.version;
    put_parts.headers = headers;
    put_parts.extensions = parts.extensions;

    authz::authorize(
        &gw,
        &Access {
            ep: &Endpoint::PutObject,
            bucket: Some(&bucket),
            key: Some(&key),
            caller: &caller,
            parts: &put_parts,
            query: &query,
            signature_version: auth.scheme.signature_version(),
        },
    )
    .await?;

    let mut file = FileBody::new(file, request_body);
    file.range = range;
    if body_signed {
        file.trailing = None;
    }
    let failure = file.failure.clone();
    let put_ctx = Ctx {
        gw: gw.clone(),
        parts: put_parts,
        query,
        bucket: Some(bucket),
        key: Some(key),
        auth,
        caller,
        dialect,
        rules,
    };
    let put = object::put_object(&put_ctx, Body::from_stream(file.into_stream())).await;
    // The put path reports a failed body as incomplete; the file stream
    // knows why it failed.
    let refused = failure.lock().unwrap_or_else(|p| p.into_inner()).take();
    let put = match (put, refused) {
        (Err(_), Some(why)) => return Err(why.into()),
        (put, _) => put?,
    };
    Ok(respond(&put_ctx, &fields, put)?)
}

#[cfg(test)]
#[path = "post_object_tests.rs"]
mod tests;
