//! Pass-through: every request kache does not answer from memory goes to
//! the apiserver with its method, path, query, headers and body intact
//! (streamed both ways), under kache's upstream credentials. Hop-by-hop
//! headers (RFC 9110 §7.6.1) are dropped in both directions.

use http::header::{CONNECTION, HOST, HeaderMap, HeaderName};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::api::body::{self, ApiBody, BoxError};
use crate::upstream::client::Client;

/// Headers that describe one connection, not the message.
const HOP_BY_HOP: &[&str] = &["connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"];

/// Removes hop-by-hop headers, including those `Connection` names.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect::<Vec<HeaderName>>())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(*name);
    }
}

/// Forwards `req` upstream and streams the answer back.
pub async fn forward(client: &Client, req: Request<Incoming>) -> Response<ApiBody> {
    let (mut parts, incoming) = req.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |pq| pq.as_str());
    let uri = match client.uri(path) {
        Ok(u) => u,
        Err(e) => return bad_gateway(&e.to_string()),
    };
    strip_hop_by_hop(&mut parts.headers);
    parts.headers.remove(HOST);
    let mut up = Request::builder().method(parts.method).uri(uri).version(http::Version::HTTP_11);
    if let Some(h) = up.headers_mut() {
        *h = parts.headers;
    }
    let up = match up.body(incoming.map_err(|e| Box::new(e) as BoxError).boxed()) {
        Ok(r) => r,
        Err(e) => return bad_gateway(&e.to_string()),
    };
    match client.send(up).await {
        Ok(resp) => {
            let (mut parts, incoming) = resp.into_parts();
            strip_hop_by_hop(&mut parts.headers);
            Response::from_parts(parts, incoming.map_err(|e| Box::new(e) as BoxError).boxed())
        }
        Err(e) => bad_gateway(&e.to_string()),
    }
}

/// What a client sees when the apiserver cannot be reached: a `Status` like
/// the apiserver's own 503 for an unavailable backend.
fn bad_gateway(why: &str) -> Response<ApiBody> {
    tracing::warn!(error = why, "pass-through failed");
    let status = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("error trying to reach the apiserver: {why}"), "reason": "ServiceUnavailable", "code": 503
    });
    let mut resp = Response::new(body::full(serde_json::to_vec(&status).unwrap_or_default()));
    *resp.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    resp.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    resp
}
