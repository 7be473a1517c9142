//! What a request carries in its body: read whole under the apiserver's
//! 3 MiB limit (413 past it), and decoded as the object of a resource or
//! the preconditions of a delete.

use http::header::CONTENT_TYPE;
use http::{HeaderMap, Request};
use http_body_util::BodyExt;
use serde_json::Value;

use super::encoding::header;
use crate::db::Preconditions;
use crate::request_body::Drained;
use crate::resources::ResourceType;
use apimachinery::protobuf;
use apimachinery::status::ApiError;

/// The apiserver's limit on request bodies (3 MiB, `MaxRequestBodyBytes`).
const MAX_BODY: usize = 3 * 1024 * 1024;

/// The body, read whole (413 past the limit), and the request's headers.
pub(super) async fn read_body(req: Request<Drained>) -> Result<(HeaderMap, Vec<u8>), ApiError> {
    let (parts, incoming) = req.into_parts();
    let limited = http_body_util::Limited::new(incoming, MAX_BODY);
    let bytes = limited.collect().await.map_err(|e| {
        let mut err = ApiError::bad_request(format!("Request entity too large: limit is {MAX_BODY}"));
        if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() {
            err.code = 413;
            err.reason = "RequestEntityTooLarge";
        } else {
            err.message = format!("unable to read the request body: {e}");
        }
        err
    })?;
    Ok((parts.headers, bytes.to_bytes().to_vec()))
}

/// The object of `rt` that the request's body carries.
pub(super) async fn read_object(req: Request<Drained>, rt: &ResourceType) -> Result<Value, ApiError> {
    let (headers, bytes) = read_body(req).await?;
    parse_json(rt, &headers, &bytes)
}

/// An object of `rt` read from the body (JSON, or protobuf as kubectl's typed
/// generators send it), in the `Content-Type` the headers say.
fn parse_json(rt: &ResourceType, headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    let ct = header(headers, CONTENT_TYPE.as_str()).unwrap_or("application/json");
    let v: Value = if ct.starts_with(protobuf::MEDIA_TYPE) {
        // kubectl's typed generators (create configmap, secret, namespace) send protobuf.
        protobuf::decode_json(body)
            .map_err(|e| ApiError::bad_request(e.to_string()))?
            .ok_or_else(|| ApiError::unsupported_media_type(ct))?
    } else if ct.starts_with("application/json") || ct.is_empty() {
        serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("Object 'Kind' is missing in '{}': {e}", String::from_utf8_lossy(body))))?
    } else {
        return Err(ApiError::unsupported_media_type(ct));
    };
    if let Some(kind) = v.get("kind").and_then(Value::as_str)
        && kind != rt.kind
    {
        return Err(ApiError::bad_request(format!("the body of the request was of kind {kind:?}, not {:?}", rt.kind)));
    }
    Ok(v)
}

/// The preconditions of a `DeleteOptions` body (none when it is not one).
pub(super) fn preconditions(body: &[u8]) -> Preconditions {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let get = |k: &str| v.pointer(&format!("/preconditions/{k}")).and_then(Value::as_str).map(str::to_string);
    Preconditions { uid: get("uid"), resource_version: get("resourceVersion") }
}
