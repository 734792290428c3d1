//! The S3 ACL document a PutBucketAcl / PutObjectAcl body carries,
//! read event by event (as `xml::requests::parse_delete` reads `Delete`):
//! serde cannot tell a `Grantee`'s `xsi:type` by namespace, and clients
//! differ in where they declare it.

use godwit_common::access::Permission;
use quick_xml::events::{BytesStart, Event};
use quick_xml::name::{Namespace, ResolveResult};
use quick_xml::NsReader;

use super::{canonical_id, group_of, AclRequest, GranteeRef, XmlAcl, MAX_GRANTS};
use crate::error::S3Error;
use crate::xml::responses::XSI_NS;

/// A PutBucketAcl / PutObjectAcl body:
///
/// ```xml
/// <AccessControlPolicy xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
///   <Owner><ID>..</ID><DisplayName>..</DisplayName></Owner>
///   <AccessControlList>
///     <Grant>
///       <Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
///                xsi:type="CanonicalUser|AmazonCustomerByEmail|Group">
///         <ID/> | <EmailAddress/> | <URI/>
///       </Grantee>
///       <Permission>READ</Permission>
///     </Grant>
///   </AccessControlList>
/// </AccessControlPolicy>
/// ```
///
/// Elements are matched by local name, whatever their namespace or
/// prefix, and in any order (boto3 sends `Owner` last); unknown elements
/// are skipped. `xsi:type` is the `type` attribute in the XSI namespace
/// (or under an undeclared `xsi:` prefix, which some clients send).
///
/// Errors: a document that does not parse, another root, no
/// `AccessControlList`, an `Owner` without `ID`, a grant without a
/// grantee type, the element its type needs, or a known permission, or
/// more than `MAX_GRANTS` grants → MalformedACLError; an id that is not
/// canonical or an unknown group URI → InvalidArgument (as in headers).
pub fn from_xml(body: &[u8]) -> Result<XmlAcl, S3Error> {
    let mut reader = NsReader::from_reader(body);
    let mut doc = DocParser::default();
    loop {
        let event = reader
            .read_event()
            .map_err(|_| S3Error::MalformedACLError)?;
        match event {
            Event::Start(e) => doc.open(&reader, &e)?,
            Event::Empty(e) => {
                doc.open(&reader, &e)?;
                doc.close()?;
            }
            Event::Text(t) => {
                let text = t.unescape().map_err(|_| S3Error::MalformedACLError)?;
                doc.text.push_str(&text);
            }
            Event::CData(c) => {
                let text = std::str::from_utf8(&c).map_err(|_| S3Error::MalformedACLError)?;
                doc.text.push_str(text);
            }
            Event::End(_) => doc.close()?,
            // S3's bodies have no DTD (and quick-xml's DOCTYPE handling
            // is where its fuzzed panics were: `xml::parse`).
            Event::DocType(_) => return Err(S3Error::MalformedACLError),
            Event::Eof => break,
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
        }
    }
    doc.finish()
}

/// A grant being read.
#[derive(Default)]
struct GrantDraft {
    xsi_type: Option<String>,
    saw_grantee: bool,
    id: Option<String>,
    email: Option<String>,
    uri: Option<String>,
    permission: Option<String>,
}

impl GrantDraft {
    fn build(self) -> Result<(GranteeRef, Permission), S3Error> {
        let malformed = || S3Error::MalformedACLError;
        let permission = self
            .permission
            .as_deref()
            .and_then(Permission::from_s3_name)
            .ok_or_else(malformed)?;
        let grantee = match self.xsi_type.as_deref().ok_or_else(malformed)? {
            "CanonicalUser" => GranteeRef::Id(canonical_id(&self.id.ok_or_else(malformed)?)?),
            "AmazonCustomerByEmail" => GranteeRef::Email(self.email.ok_or_else(malformed)?),
            "Group" => GranteeRef::Group(group_of(&self.uri.ok_or_else(malformed)?)?),
            _ => return Err(malformed()),
        };
        Ok((grantee, permission))
    }
}

/// The state of `from_xml`: the open elements by local name, the text
/// of the innermost one, and what was read so far.
#[derive(Default)]
struct DocParser {
    path: Vec<String>,
    text: String,
    saw_root: bool,
    saw_list: bool,
    owner: Option<Option<String>>,
    grant: Option<GrantDraft>,
    grants: Vec<(GranteeRef, Permission)>,
}

impl DocParser {
    fn open(&mut self, reader: &NsReader<&[u8]>, e: &BytesStart) -> Result<(), S3Error> {
        let name = std::str::from_utf8(e.local_name().into_inner())
            .map_err(|_| S3Error::MalformedACLError)?
            .to_string();
        let parent = |p: &[&str]| self.path.iter().map(String::as_str).eq(p.iter().copied());
        if self.path.is_empty() {
            if self.saw_root || name != "AccessControlPolicy" {
                return Err(S3Error::MalformedACLError);
            }
            self.saw_root = true;
        } else if parent(&["AccessControlPolicy"]) {
            match name.as_str() {
                "Owner" if self.owner.is_none() => self.owner = Some(None),
                "AccessControlList" if !self.saw_list => self.saw_list = true,
                "Owner" | "AccessControlList" => return Err(S3Error::MalformedACLError),
                _ => {}
            }
        } else if parent(&["AccessControlPolicy", "AccessControlList"]) && name == "Grant" {
            if self.grants.len() >= MAX_GRANTS {
                return Err(S3Error::MalformedACLError);
            }
            self.grant = Some(GrantDraft::default());
        } else if parent(&["AccessControlPolicy", "AccessControlList", "Grant"])
            && name == "Grantee"
        {
            let draft = self.grant.as_mut().ok_or(S3Error::MalformedACLError)?;
            if draft.saw_grantee {
                return Err(S3Error::MalformedACLError);
            }
            draft.saw_grantee = true;
            draft.xsi_type = xsi_type(reader, e)?;
        }
        self.path.push(name);
        self.text.clear();
        Ok(())
    }

    fn close(&mut self) -> Result<(), S3Error> {
        let name = self.path.pop().ok_or(S3Error::MalformedACLError)?;
        let text = std::mem::take(&mut self.text).trim().to_string();
        let parent: Vec<&str> = self.path.iter().map(String::as_str).collect();
        let set = |slot: &mut Option<String>| {
            if slot.is_some() {
                return Err(S3Error::MalformedACLError);
            }
            *slot = Some(text.clone());
            Ok(())
        };
        match (parent.as_slice(), name.as_str()) {
            (["AccessControlPolicy", "Owner"], "ID") => match &mut self.owner {
                Some(id) => set(id)?,
                None => return Err(S3Error::MalformedACLError),
            },
            (["AccessControlPolicy"], "Owner") if !matches!(&self.owner, Some(Some(id)) if !id.is_empty()) =>
            {
                return Err(S3Error::MalformedACLError);
            }
            (["AccessControlPolicy", "AccessControlList", "Grant", "Grantee"], field) => {
                let draft = self.grant.as_mut().ok_or(S3Error::MalformedACLError)?;
                match field {
                    "ID" => set(&mut draft.id)?,
                    "EmailAddress" => set(&mut draft.email)?,
                    "URI" => set(&mut draft.uri)?,
                    _ => {}
                }
            }
            (["AccessControlPolicy", "AccessControlList", "Grant"], "Permission") => {
                let draft = self.grant.as_mut().ok_or(S3Error::MalformedACLError)?;
                set(&mut draft.permission)?;
            }
            (["AccessControlPolicy", "AccessControlList"], "Grant") => {
                let draft = self.grant.take().ok_or(S3Error::MalformedACLError)?;
                self.grants.push(draft.build()?);
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(self) -> Result<XmlAcl, S3Error> {
        if !self.saw_root || !self.path.is_empty() || !self.saw_list {
            return Err(S3Error::MalformedACLError);
        }
        Ok(XmlAcl {
            owner_id: self.owner.flatten(),
            request: AclRequest {
                canned: None,
                grants: self.grants,
            },
        })
    }
}

/// The `xsi:type` of a `Grantee`, without any prefix its value carries.
fn xsi_type(reader: &NsReader<&[u8]>, e: &BytesStart) -> Result<Option<String>, S3Error> {
    for attr in e.attributes() {
        let attr = attr.map_err(|_| S3Error::MalformedACLError)?;
        let (ns, local) = reader.resolve_attribute(attr.key);
        if local.as_ref() != b"type" {
            continue;
        }
        let is_xsi = match ns {
            ResolveResult::Bound(Namespace(uri)) => uri == XSI_NS.as_bytes(),
            ResolveResult::Unknown(prefix) => prefix == b"xsi",
            ResolveResult::Unbound => false,
        };
        if is_xsi {
            let value = attr
                .unescape_value()
                .map_err(|_| S3Error::MalformedACLError)?;
            let value = value.trim();
            let bare = value.rsplit(':').next().unwrap_or(value);
            return Ok(Some(bare.to_string()));
        }
    }
    Ok(None)
}
