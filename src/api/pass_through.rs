//! The last stage for what kache does not answer itself: the request goes
//! to the apiserver with its method, path, query, headers and body intact
//! (streamed both ways), under kache's upstream credentials and impersonating
//! the client ([`impersonation_headers`]), so upstream authorizes, audits and
//! queues it as the client's own. Hop-by-hop
//! headers (RFC 9110 §7.6.1) are dropped in both directions, except that a
//! connection upgrade (exec, attach, port-forward: WebSocket or SPDY) keeps
//! its `Connection: Upgrade` and `Upgrade` and, once upstream answers 101,
//! becomes a byte tunnel between the client and the apiserver. A whole
//! collection travels on a lane of its own ([`lane`]).

use http::header::{CONNECTION, HOST, HeaderMap, HeaderName, HeaderValue, TE, TRAILER, TRANSFER_ENCODING, UPGRADE};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Body as _;
use hyper::body::Incoming;
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;

use apimachinery::auth::UserInfo;
use apimachinery::negotiate::Negotiated;
use apimachinery::status::ApiError;

use super::body::{self, ApiBody, BoxError};
use super::request::RequestInfo;
use crate::upstream::client::{Client, Lane};

/// Headers that describe one connection, not the message; as names, not
/// text, which each removal would parse again (a relay removes them twice).
const HOP_BY_HOP: [HeaderName; 7] = [
    CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    TRANSFER_ENCODING,
    TE,
    TRAILER,
    UPGRADE,
];

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
    for name in &HOP_BY_HOP {
        headers.remove(name);
    }
}

/// The protocol an HTTP/1.1 request asks to upgrade to, if it does.
fn upgrade_protocol(req: &Request<Incoming>) -> Option<HeaderValue> {
    let connection_upgrade = req
        .headers()
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("upgrade")));
    if req.version() != http::Version::HTTP_11 || !connection_upgrade {
        return None;
    }
    req.headers().get(UPGRADE).cloned()
}

/// A request body of announced length up to this (every write a client
/// sends: objects, patches) is read whole before it goes upstream, so it
/// leaves in one DATA frame with its end of stream — streamed, its end may
/// follow in a frame of its own, which the apiserver waits for.
const WHOLE_BODY: u64 = 1 << 20;

/// The lane a relay of the request `info` describes takes: its
/// own connection for a whole collection — a list without a limit, or a
/// watch that first sends every object (`sendInitialEvents`) — which may
/// be many megabytes; a stream of a shared connection for any other watch
/// or stream (a followed log), which may last for hours; else a kept
/// connection (an answer that ends soon).
pub fn lane(info: &RequestInfo) -> Lane {
    let (method, attributes, query) = (&info.method, &info.attributes, &info.query);
    let get = method == http::Method::GET && attributes.resource_request;
    match attributes.verb.as_str() {
        "list" if get && query.get("limit").is_none_or(|l| l.parse::<i64>().is_ok_and(|l| l <= 0)) => Lane::Dedicated,
        "watch" if get && query.on("sendInitialEvents") => Lane::Dedicated,
        "watch" => Lane::Http2,
        _ if method == http::Method::GET && info.stream => Lane::Http2,
        _ => Lane::KeptAlive,
    }
}

/// Forwards `req`, which `info` describes, upstream on its [`lane`] and
/// streams the answer back. `user`: the authenticated client, whom upstream
/// then sees by impersonation (`None` only when kache authenticates no one
/// and listens on loopback).
pub async fn forward(client: &Client, mut req: Request<Incoming>, info: &RequestInfo, user: Option<&UserInfo>) -> Response<ApiBody> {
    let (lane, stream) = (lane(info), info.stream);
    let upgrade = upgrade_protocol(&req).map(|protocol| (protocol, hyper::upgrade::on(&mut req)));
    let (mut parts, incoming) = req.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |pq| pq.as_str());
    let uri = match client.uri(path) {
        Ok(u) => u,
        Err(e) => return bad_gateway(&e.to_string()),
    };
    strip_hop_by_hop(&mut parts.headers);
    parts.headers.remove(HOST);
    if let Some(user) = user {
        impersonation_headers(&mut parts.headers, user);
    }
    if let Some((protocol, _)) = &upgrade {
        parts.headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
        parts.headers.insert(UPGRADE, protocol.clone());
    }
    let mut up = Request::builder().method(parts.method).uri(uri).version(http::Version::HTTP_11);
    if let Some(h) = up.headers_mut() {
        *h = parts.headers;
    }
    let body = match incoming.size_hint().exact().filter(|len| *len <= WHOLE_BODY && upgrade.is_none()) {
        // Read whole: it leaves in one DATA frame with its end.
        Some(_) => match incoming.collect().await {
            Ok(whole) => Full::new(whole.to_bytes()).map_err(|never| match never {}).boxed(),
            Err(e) => return super::encode::error(Negotiated::default(), &ApiError::bad_request(format!("reading the request body: {e}"))),
        },
        None => incoming.map_err(|e| Box::new(e) as BoxError).boxed(),
    };
    let up = match up.body(body) {
        Ok(r) => r,
        Err(e) => return bad_gateway(&e.to_string()),
    };
    let sent = match upgrade {
        Some(_) => client.send_upgrade(up).await,
        None => client.send_on(up, lane).await,
    };
    let mut resp = match sent {
        Ok(resp) => resp,
        Err(e) => return bad_gateway(&e.to_string()),
    };
    let switching = resp.status() == StatusCode::SWITCHING_PROTOCOLS;
    let tunnel = match upgrade {
        Some((_, downstream)) if switching => Some((downstream, hyper::upgrade::on(&mut resp))),
        _ => None,
    };
    let (mut parts, incoming) = resp.into_parts();
    // A 101 names the protocol switched to; those two headers go back as sent.
    let switched: Vec<_> = [UPGRADE, CONNECTION]
        .into_iter()
        .filter(|_| tunnel.is_some())
        .filter_map(|name| parts.headers.get(&name).cloned().map(|v| (name, v)))
        .collect();
    strip_hop_by_hop(&mut parts.headers);
    parts.headers.extend(switched);
    if let Some((downstream, upstream)) = tunnel {
        tokio::spawn(splice(downstream, upstream));
    }
    Response::from_parts(parts, body::relay(incoming, stream))
}

/// Copies bytes both ways between the upgraded client and upstream
/// connections until both sides have closed.
async fn splice(downstream: OnUpgrade, upstream: OnUpgrade) {
    let (client, server) = match tokio::try_join!(downstream, upstream) {
        Ok(pair) => pair,
        Err(e) => {
            tracing::debug!(error = %e, "connection upgrade failed");
            return;
        }
    };
    match tokio::io::copy_bidirectional(&mut TokioIo::new(client), &mut TokioIo::new(server)).await {
        Ok((up, down)) => tracing::debug!(bytes_up = up, bytes_down = down, "upgraded connection closed"),
        Err(e) => tracing::debug!(error = %e, "upgraded connection ended"),
    }
}

/// Marks an answer kache made itself because the apiserver could not be
/// reached: the apiserver never saw the request (so kache audits it).
#[derive(Debug, Clone, Copy)]
pub struct Unreached;

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
    resp.extensions_mut().insert(Unreached);
    resp
}

/// The headers a request passed through carries so that upstream sees the
/// client's user: every `Authorization` and `Impersonate-*` header of the
/// client removed (kache's own credentials go with the request), and the
/// user, groups, uid and extras impersonated.
pub fn impersonation_headers(headers: &mut HeaderMap, user: &UserInfo) {
    let names: Vec<HeaderName> = headers.keys().filter(|k| k.as_str().starts_with("impersonate-")).cloned().collect();
    for n in names {
        headers.remove(n);
    }
    headers.remove(http::header::AUTHORIZATION);
    let value = |s: &str| HeaderValue::from_str(s).ok();
    if let Some(v) = value(&user.name) {
        headers.insert("impersonate-user", v);
    }
    for g in &user.groups {
        if let Some(v) = value(g) {
            headers.append("impersonate-group", v);
        }
    }
    if let Some(v) = value(&user.uid).filter(|_| !user.uid.is_empty()) {
        headers.insert("impersonate-uid", v);
    }
    for (k, vs) in &user.extra {
        let key: String = form_urlencoded::byte_serialize(k.as_bytes()).collect();
        if let Ok(name) = HeaderName::from_bytes(format!("impersonate-extra-{}", key.to_ascii_lowercase()).as_bytes()) {
            for v in vs {
                if let Some(v) = value(v) {
                    headers.append(name.clone(), v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_collections_take_a_dedicated_lane_streams_share_http2_and_the_rest_keep_one_alive() {
        let lane = |method: http::Method, path: &str, query: &str| {
            lane(&RequestInfo::of(&method, &format!("{path}?{query}").parse().expect("a URI")))
        };
        let informer = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
        for (method, path, query, expected) in [
            (http::Method::GET, "/api/v1/pods", "", Lane::Dedicated),
            (http::Method::GET, "/api/v1/pods", "limit=0&resourceVersion=0", Lane::Dedicated),
            (http::Method::GET, "/apis/apps/v1/namespaces/a/deployments", "labelSelector=x%3Dy", Lane::Dedicated),
            (http::Method::GET, "/api/v1/pods", informer, Lane::Dedicated),
            (http::Method::GET, "/api/v1/pods", "limit=500", Lane::KeptAlive),
            (http::Method::GET, "/api/v1/namespaces/a/pods/x", "", Lane::KeptAlive),
            (http::Method::POST, "/api/v1/namespaces/a/pods", "", Lane::KeptAlive),
            (http::Method::PATCH, "/api/v1/namespaces/a/configmaps/c", "", Lane::KeptAlive),
            (http::Method::GET, "/version", "", Lane::KeptAlive),
            (http::Method::GET, "/api/v1/pods", "watch=1&resourceVersion=5", Lane::Http2),
            (http::Method::GET, "/api/v1/pods", "watch=1&sendInitialEvents=false", Lane::Http2),
            (http::Method::GET, "/api/v1/watch/pods", "", Lane::Http2),
            (http::Method::GET, "/api/v1/namespaces/a/pods/x/log", "follow=true", Lane::Http2),
        ] {
            assert_eq!(lane(method.clone(), path, query), expected, "{method} {path}?{query}");
        }
    }

    #[test]
    fn hop_by_hop_headers_and_those_connection_names_stay_on_their_hop() {
        let mut h = HeaderMap::new();
        for (name, value) in [
            ("connection", "keep-alive, X-Hop"),
            ("keep-alive", "timeout=5"),
            ("x-hop", "1"),
            ("transfer-encoding", "chunked"),
            ("te", "trailers"),
            ("proxy-connection", "keep-alive"),
            ("content-type", "application/json"),
            ("audit-id", "a"),
        ] {
            h.append(HeaderName::from_static(name), value.parse().unwrap());
        }
        strip_hop_by_hop(&mut h);
        let left: Vec<&str> = h.keys().map(HeaderName::as_str).collect();
        assert_eq!(left, ["content-type", "audit-id"]);
    }

    #[test]
    fn passed_through_requests_impersonate_the_client() {
        let mut h = HeaderMap::new();
        h.insert(http::header::AUTHORIZATION, "Bearer client".parse().unwrap());
        h.insert("impersonate-user", "root".parse().unwrap());
        h.insert("accept", "application/json".parse().unwrap());
        let user = UserInfo {
            name: "alice".into(),
            uid: "u1".into(),
            groups: vec!["dev".into(), apimachinery::auth::AUTHENTICATED.into()],
            extra: [("scopes.example.com/x".to_string(), vec!["a".to_string()])].into(),
        };
        impersonation_headers(&mut h, &user);
        assert!(h.get(http::header::AUTHORIZATION).is_none(), "the client's credentials never go upstream");
        assert_eq!(h.get("impersonate-user").unwrap(), "alice");
        assert_eq!(h.get_all("impersonate-group").iter().collect::<Vec<_>>(), ["dev", "system:authenticated"]);
        assert_eq!(h.get("impersonate-uid").unwrap(), "u1");
        assert_eq!(h.get("impersonate-extra-scopes.example.com%2fx").unwrap(), "a");
        assert_eq!(h.get("accept").unwrap(), "application/json");
    }
}
