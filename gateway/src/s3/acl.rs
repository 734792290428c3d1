//! The S3 documents of GetBucketAcl and GetObjectAcl: an
//! `AccessControlPolicy` with the owner and one `Grant` per stored grant,
//! account grantees as `CanonicalUser` (ID, DisplayName), groups as
//! `Group` (URI)
//! (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetBucketAcl.html).

use axum::response::Response;
use godwit_common::access::Grantee;
use http::StatusCode;

use crate::acl::{AclView, GrantView};
use crate::api::{version_header, xml_response};
use crate::error::S3Error;
use crate::xml::render as render_xml;
use crate::xml::responses::{self, AccessControlList, AccessControlPolicy, Ns};

/// The document of `view`, with `x-amz-version-id` when it names a
/// version. `own_acl` plays no part: S3 shows the grants it is given.
pub fn render(view: AclView) -> Result<Response, S3Error> {
    let doc = AccessControlPolicy {
        xmlns: Ns::default(),
        owner: view.owner,
        acl: AccessControlList {
            grant: view.grants.into_iter().map(grant).collect(),
        },
    };
    let mut resp = xml_response(StatusCode::OK, render_xml("AccessControlPolicy", &doc)?);
    if let Some(vid) = &view.version_id {
        version_header(resp.headers_mut(), vid, true);
    }
    Ok(resp)
}

fn grant(g: GrantView) -> responses::Grant {
    let grantee = match g.grantee {
        Grantee::Account(id) => responses::Grantee::canonical_user(id, g.display_name),
        Grantee::Group(group) => responses::Grantee::group(group.uri()),
    };
    responses::Grant {
        grantee,
        permission: g.permission.s3_name(),
    }
}

#[cfg(test)]
mod tests {
    use godwit_common::access::{Acl, Grant, Group, Permission};

    use super::*;
    use crate::acl::{expand, from_xml, view_grants, GranteeRef};
    use crate::xml::responses::Owner;

    const ALICE: &str = "a11ce00000000000000000000000000000000000000000000000000000000001";
    const BOB: &str = "b0b0000000000000000000000000000000000000000000000000000000000002";

    async fn body_of(resp: Response) -> String {
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    fn view(acl: &Acl, object: bool, version_id: Option<&str>) -> AclView {
        AclView {
            owner: Owner::new(ALICE, "alice"),
            grants: view_grants(acl, |id| (id == ALICE).then(|| "alice".to_string())),
            object,
            own_acl: true,
            version_id: version_id.map(str::to_string),
        }
    }

    fn every_kind_of_grant() -> Acl {
        let g = |grantee, permission| Grant {
            grantee,
            permission,
        };
        Acl {
            grants: vec![
                g(Grantee::Account(ALICE.into()), Permission::FullControl),
                g(Grantee::Account(BOB.into()), Permission::Read),
                g(Grantee::Account(BOB.into()), Permission::WriteAcp),
                g(Grantee::Group(Group::AllUsers), Permission::Read),
                g(
                    Grantee::Group(Group::AuthenticatedUsers),
                    Permission::ReadAcp,
                ),
                g(Grantee::Group(Group::LogDelivery), Permission::Write),
            ],
        }
    }

    /// What GetBucketAcl renders, PutBucketAcl reads back unchanged: the
    /// owner, every grantee type Godwit stores and every permission.
    #[tokio::test]
    async fn rendered_acl_parses_back_to_the_same_grants() {
        let acl = every_kind_of_grant();
        let resp = render(view(&acl, false, None)).unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert!(resp.headers().get("x-amz-version-id").is_none());
        let xml = body_of(resp).await;
        let parsed = from_xml(xml.as_bytes()).unwrap();
        assert_eq!(parsed.owner_id.as_deref(), Some(ALICE));
        let want: Vec<(GranteeRef, Permission)> = acl
            .grants
            .iter()
            .map(|g| {
                let who = match &g.grantee {
                    Grantee::Account(id) => GranteeRef::Id(id.clone()),
                    Grantee::Group(group) => GranteeRef::Group(*group),
                };
                (who, g.permission)
            })
            .collect();
        assert_eq!(parsed.request.grants, want);
        // Parsed grants expand to themselves (no canned ACL).
        assert_eq!(expand(&parsed.request, ALICE, ALICE), want);
    }

    #[tokio::test]
    async fn acl_document_is_what_aws_sends() {
        let acl = Acl {
            grants: vec![
                Grant {
                    grantee: Grantee::Account(ALICE.into()),
                    permission: Permission::FullControl,
                },
                Grant {
                    grantee: Grantee::Group(Group::AllUsers),
                    permission: Permission::Read,
                },
            ],
        };
        let xml = body_of(render(view(&acl, false, None)).unwrap()).await;
        let want = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <AccessControlPolicy xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
             <Owner><ID>{ALICE}</ID><DisplayName>alice</DisplayName></Owner>\
             <AccessControlList>\
             <Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"CanonicalUser\">\
             <ID>{ALICE}</ID><DisplayName>alice</DisplayName></Grantee><Permission>FULL_CONTROL</Permission></Grant>\
             <Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"Group\">\
             <URI>http://acs.amazonaws.com/groups/global/AllUsers</URI></Grantee><Permission>READ</Permission></Grant>\
             </AccessControlList></AccessControlPolicy>"
        );
        assert_eq!(xml, want);
    }

    #[tokio::test]
    async fn unnamed_account_grantee_has_no_display_name() {
        let acl = Acl {
            grants: vec![Grant {
                grantee: Grantee::Account(BOB.into()),
                permission: Permission::Read,
            }],
        };
        let xml = body_of(render(view(&acl, false, None)).unwrap()).await;
        assert!(
            xml.contains(&format!(
                "xsi:type=\"CanonicalUser\"><ID>{BOB}</ID></Grantee>"
            )),
            "{xml}"
        );
    }

    #[tokio::test]
    async fn empty_acl_renders_and_parses_back_empty() {
        let xml = body_of(render(view(&Acl::default(), false, None)).unwrap()).await;
        let parsed = from_xml(xml.as_bytes()).unwrap();
        assert!(parsed.request.grants.is_empty(), "{xml}");
    }

    #[tokio::test]
    async fn object_acl_carries_the_version_id_it_is_given() {
        let acl = Acl::private(ALICE);
        let resp = render(view(&acl, true, Some("v1"))).unwrap();
        assert_eq!(resp.headers()["x-amz-version-id"], "v1");
        let resp = render(view(
            &acl,
            true,
            Some(godwit_common::types::NULL_VERSION_ID),
        ))
        .unwrap();
        assert_eq!(resp.headers()["x-amz-version-id"], "null");
    }
}
