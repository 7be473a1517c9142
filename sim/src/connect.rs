//! The connect subresources of pods, `exec`, `attach` and `portforward`: the
//! checks kube-apiserver makes before it upgrades a request (the pod exists,
//! the container is one of the pod's, the pod is on a node, at least one
//! stream is asked for, the request is an upgrade), the WebSocket or SPDY
//! handshake with its protocol negotiation, and the hand-off of the upgraded
//! connection to a [`remotecommand`] or [`portforward`] session.
//!
//! Invariants: every refusal is an [`ApiError`] sent before any upgrade; a
//! 101 is only answered to an HTTP/1.1 request whose upgrade hyper can hand
//! over, with exactly one negotiated subprotocol.

use crate::request_body::Drained;
use http::header::{CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_PROTOCOL, SEC_WEBSOCKET_VERSION, UPGRADE};
use http::{HeaderMap, Method, Request, Response, StatusCode, Version};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;

use crate::body::{self, Body};
use crate::object::Obj;
use crate::portforward;
use crate::remotecommand::{self, Job, Streams};
use apimachinery::status::ApiError;

/// The `Upgrade` token of SPDY.
const SPDY: &str = "SPDY/3.1";
/// The header in which SPDY clients list their stream protocols.
const STREAM_PROTOCOL: &str = "x-stream-protocol-version";

/// A connect subresource of pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subresource {
    /// `pods/exec`.
    Exec,
    /// `pods/attach`.
    Attach,
    /// `pods/portforward`.
    PortForward,
}

impl Subresource {
    /// The subresource named by the last path segment.
    pub fn of(segment: &str) -> Option<Self> {
        match segment {
            "exec" => Some(Self::Exec),
            "attach" => Some(Self::Attach),
            "portforward" => Some(Self::PortForward),
            _ => None,
        }
    }
}

/// Serves `sub` of `pod` (already read from storage).
pub fn handle(mut req: Request<Drained>, pod: &Obj, sub: Subresource) -> Result<Response<Body>, ApiError> {
    let query = Query::parse(req.uri().query().unwrap_or(""));
    let spec: Value =
        serde_json::from_slice::<Value>(&pod.item).ok().and_then(|mut v| v.get_mut("spec").map(Value::take)).unwrap_or_default();
    let name = pod.name.as_str();
    if sub != Subresource::PortForward {
        check_container(&spec, name, query.one("container"))?;
    }
    if spec.get("nodeName").and_then(Value::as_str).is_none_or(str::is_empty) {
        return Err(ApiError::bad_request(format!("pod {name} does not have a host assigned")));
    }
    if sub == Subresource::PortForward {
        return port_forward(req);
    }
    let tty = query.flag("tty");
    let streams = Streams { stdin: query.flag("stdin"), stdout: query.flag("stdout"), stderr: query.flag("stderr") && !tty, tty };
    if !streams.stdin && !streams.stdout && !streams.stderr {
        return Err(ApiError::bad_request("you must specify at least 1 of stdin, stdout, stderr"));
    }
    let job = if sub == Subresource::Exec {
        let argv = query.all("command");
        if argv.is_empty() {
            // kubectl refuses an empty command itself; the runtime could not start one.
            return Err(ApiError::bad_request("you must specify at least 1 command"));
        }
        Job::Exec { pod: name.to_string(), argv }
    } else {
        Job::Attach { namespace: pod.namespace.clone(), pod: name.to_string() }
    };
    let (resp, protocol) = accept_websocket(&req, &remotecommand::PROTOCOLS)?;
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        // A client that never completes the upgrade only ends this task.
        let Ok(upgraded) = on_upgrade.await else { return };
        let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        remotecommand::serve(ws, protocol, streams, job).await;
    });
    Ok(resp)
}

/// Port forwarding: SPDY tunnelled in a WebSocket, or a plain SPDY upgrade.
fn port_forward(mut req: Request<Drained>) -> Result<Response<Body>, ApiError> {
    if is_upgrade(req.headers()) && header(req.headers(), UPGRADE).is_some_and(|u| u.eq_ignore_ascii_case(SPDY)) {
        if req.version() != Version::HTTP_11 {
            return Err(ApiError::bad_request("unable to upgrade: a SPDY upgrade is an HTTP/1.1 request"));
        }
        let offered: Vec<&str> = list(req.headers(), STREAM_PROTOCOL);
        if !offered.is_empty() && !offered.contains(&portforward::PROTOCOL) {
            return Err(ApiError::bad_request(format!(
                "unable to upgrade: none of the client's stream protocols [{}] is supported; supports [{}]",
                offered.join(" "),
                portforward::PROTOCOL
            )));
        }
        let on_upgrade = hyper::upgrade::on(&mut req);
        tokio::spawn(async move {
            let Ok(upgraded) = on_upgrade.await else { return };
            portforward::serve(TokioIo::new(upgraded)).await;
        });
        return Ok(Response::builder()
            .status(StatusCode::SWITCHING_PROTOCOLS)
            .header(CONNECTION, "Upgrade")
            .header(UPGRADE, SPDY)
            .header(STREAM_PROTOCOL, portforward::PROTOCOL)
            .body(body::full(""))
            .expect("valid response"));
    }
    let (resp, _) = accept_websocket(&req, &[portforward::TUNNEL_PROTOCOL])?;
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else { return };
        let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        portforward::serve_tunnel(ws).await;
    });
    Ok(resp)
}

/// The apiserver's container check: a named container must be one of the
/// pod's (init and ephemeral ones included); an unnamed one is the only one.
fn check_container(spec: &Value, pod: &str, container: Option<&str>) -> Result<(), ApiError> {
    let names = |field: &str| -> Vec<String> {
        spec.get(field)
            .and_then(Value::as_array)
            .map(|cs| cs.iter().filter_map(|c| c.get("name").and_then(Value::as_str)).map(str::to_string).collect())
            .unwrap_or_default()
    };
    let main = names("containers");
    match container {
        Some(c) if !c.is_empty() => {
            if main.iter().chain(&names("initContainers")).chain(&names("ephemeralContainers")).any(|n| n == c) {
                Ok(())
            } else {
                Err(ApiError::bad_request(format!("container {c} is not valid for pod {pod}")))
            }
        }
        _ => match main.len() {
            1 => Ok(()),
            0 => Err(ApiError::bad_request(format!("a container name must be specified for pod {pod}"))),
            _ => {
                let all: Vec<String> = main.into_iter().chain(names("initContainers")).chain(names("ephemeralContainers")).collect();
                Err(ApiError::bad_request(format!("a container name must be specified for pod {pod}, choose one of: [{}]", all.join(" "))))
            }
        },
    }
}

/// The query of a connect request.
struct Query(Vec<(String, String)>);

impl Query {
    fn parse(query: &str) -> Self {
        Self(form_urlencoded::parse(query.as_bytes()).into_owned().collect())
    }

    fn one(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    fn all(&self, key: &str) -> Vec<String> {
        self.0.iter().filter(|(k, _)| k == key).map(|(_, v)| v.clone()).collect()
    }

    /// A boolean as the apiserver's query conversion reads it: absent, empty,
    /// `false` and `0` are false, anything else is true.
    fn flag(&self, key: &str) -> bool {
        self.one(key).is_some_and(|v| !matches!(v.to_ascii_lowercase().as_str(), "" | "false" | "0"))
    }
}

fn header(headers: &HeaderMap, name: http::header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The comma-separated values of every `name` header.
fn list<'a>(headers: &'a HeaderMap, name: &str) -> Vec<&'a str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

/// Whether the request asks to upgrade the connection at all.
fn is_upgrade(headers: &HeaderMap) -> bool {
    header(headers, UPGRADE).is_some() && list(headers, CONNECTION.as_str()).iter().any(|t| t.eq_ignore_ascii_case("upgrade"))
}

/// Checks a WebSocket upgrade request and negotiates one of `supported`
/// (the first the client lists); returns the 101 response and the protocol.
fn accept_websocket(req: &Request<Drained>, supported: &[&'static str]) -> Result<(Response<Body>, &'static str), ApiError> {
    let headers = req.headers();
    if !is_upgrade(headers) {
        return Err(ApiError::bad_request("Upgrade request required"));
    }
    let upgrade = header(headers, UPGRADE).unwrap_or_default();
    if !upgrade.eq_ignore_ascii_case("websocket") {
        return Err(ApiError::bad_request(format!(
            "unable to upgrade: the simulator serves this subresource over WebSockets only, not {upgrade:?}"
        )));
    }
    if req.method() != Method::GET || req.version() != Version::HTTP_11 {
        return Err(ApiError::bad_request("websocket: the handshake is an HTTP/1.1 GET request"));
    }
    if header(headers, SEC_WEBSOCKET_VERSION) != Some("13") {
        return Err(ApiError::bad_request("websocket: unsupported version: 13 not found in 'Sec-Websocket-Version' header"));
    }
    let key = header(headers, SEC_WEBSOCKET_KEY)
        .filter(|k| !k.trim().is_empty())
        .ok_or_else(|| ApiError::bad_request("websocket: not a websocket handshake: 'Sec-WebSocket-Key' header is missing or blank"))?;
    let offered = list(headers, SEC_WEBSOCKET_PROTOCOL.as_str());
    let protocol = offered.iter().find_map(|o| supported.iter().find(|s| *s == o)).ok_or_else(|| {
        ApiError::bad_request(format!(
            "requested protocol(s) are not supported: [{}]; supports [{}]",
            offered.join(" "),
            supported.join(" ")
        ))
    })?;
    let resp = Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(UPGRADE, "websocket")
        .header(CONNECTION, "Upgrade")
        .header(SEC_WEBSOCKET_ACCEPT, derive_accept_key(key.trim().as_bytes()))
        .header(SEC_WEBSOCKET_PROTOCOL, *protocol)
        .body(body::full(""))
        .expect("valid response");
    Ok((resp, protocol))
}
