//! `TokenReview`s and `SubjectAccessReview`s, answered from the policy in
//! force (404 without one), as the apiserver's authentication and
//! authorization APIs answer them.

use http::{Request, Response, StatusCode};
use serde_json::{Value, json};

use super::encoding::Writer;
use super::request::read_body;
use crate::body::Body;
use crate::request_body::Drained;
use crate::state::State;
use apimachinery::auth::{Attributes, UserInfo};
use apimachinery::status::ApiError;

/// `POST …/tokenreviews` and `…/subjectaccessreviews`, answered from the policy.
pub(super) async fn review(state: &State, req: Request<Drained>, enc: Writer, kind: &str) -> Result<Response<Body>, ApiError> {
    let policy = state.policy().ok_or_else(ApiError::no_such_path)?;
    let resource = if kind == "TokenReview" { "tokenreviews.authentication.k8s.io" } else { "subjectaccessreviews.authorization.k8s.io" };
    state.count(resource.to_string(), "create");
    let (_, body) = read_body(req).await?;
    let mut review: Value = serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(format!("a bad {kind}: {e}")))?;
    let spec = review.get("spec").cloned().unwrap_or_default();
    let status = if kind == "TokenReview" {
        match spec.get("token").and_then(Value::as_str).and_then(|t| policy.authenticate(t)) {
            Some(user) => json!({"authenticated": true, "user": user}),
            None => json!({"authenticated": false, "error": "invalid bearer token"}),
        }
    } else {
        let text = |k: &str| spec.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        let user = UserInfo {
            name: text("user"),
            uid: text("uid"),
            groups: serde_json::from_value(spec.get("groups").cloned().unwrap_or(json!([]))).unwrap_or_default(),
            extra: serde_json::from_value(spec.get("extra").cloned().unwrap_or(json!({}))).unwrap_or_default(),
        };
        let attrs = match (spec.get("resourceAttributes"), spec.get("nonResourceAttributes")) {
            (Some(r), _) => {
                let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                Attributes {
                    verb: s("verb"),
                    resource_request: true,
                    group: s("group"),
                    version: s("version"),
                    resource: s("resource"),
                    subresource: s("subresource"),
                    namespace: s("namespace"),
                    name: s("name"),
                    path: String::new(),
                }
            }
            (None, Some(n)) => Attributes {
                verb: n.get("verb").and_then(Value::as_str).unwrap_or_default().into(),
                path: n.get("path").and_then(Value::as_str).unwrap_or_default().into(),
                ..Attributes::default()
            },
            (None, None) => return Err(ApiError::bad_request("a SubjectAccessReview needs resourceAttributes or nonResourceAttributes")),
        };
        match policy.decide(&user, &attrs) {
            Some(reason) if !reason.is_empty() => json!({"allowed": true, "reason": reason}),
            Some(_) => json!({"allowed": true}),
            None => json!({"allowed": false}),
        }
    };
    review["status"] = status;
    review["metadata"] = json!({"creationTimestamp": null});
    Ok(enc.value(StatusCode::CREATED, &review))
}
