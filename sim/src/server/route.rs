//! Routing: the apiserver's paths to what answers them — discovery and
//! OpenAPI, health, version, the process metrics, the control paths, the review APIs, and
//! resource requests. A path that names nothing is the apiserver's 404.

use std::sync::Arc;

use http::header::{ACCEPT, CONTENT_TYPE};
use http::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};

use super::encoding::{Writer, header};
use super::resource::{self, Target};
use super::{admin, review};
use crate::body::{self, Body};
use crate::request_body::Drained;
use crate::state::State;
use apimachinery::status::ApiError;

/// The media type of aggregated discovery, which kubectl asks for first.
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Answers the request from what its method and path name.
pub(super) async fn route(
    state: &Arc<State>,
    req: Request<Drained>,
    enc: Writer,
    server_address: &str,
) -> Result<Response<Body>, ApiError> {
    let path = req.uri().path().to_string();
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let reg = state.registry().clone();
    let aggregated = header(req.headers(), ACCEPT.as_str()).is_some_and(|a| a.contains(AGGREGATED));
    let discovery = |v: Value| Ok(enc.value(StatusCode::OK, &v));
    match (req.method(), segs.as_slice()) {
        (&Method::GET, ["api"] | ["apis"]) if aggregated => {
            let mut r = enc.value(StatusCode::OK, &reg.aggregated(segs[0] == "api"));
            r.headers_mut().insert(CONTENT_TYPE, AGGREGATED.parse().expect("valid header"));
            Ok(r)
        }
        (&Method::GET, ["api"]) => discovery(reg.api_versions(server_address)),
        (&Method::GET, ["apis"]) => discovery(reg.api_group_list()),
        (&Method::GET, ["api", "v1"]) => discovery(reg.api_resource_list("", "v1")),
        (&Method::GET, ["apis", g]) => discovery(reg.api_group_doc(g).ok_or_else(ApiError::no_such_path)?),
        (&Method::GET, ["apis", g, v]) if reg.serves_group_version(g, v) => discovery(reg.api_resource_list(g, v)),
        (&Method::GET, ["version"]) => discovery(version()),
        (&Method::GET, ["openapi", "v3"]) => discovery(reg.openapi_root()),
        (&Method::GET, ["openapi", "v3", "api", v]) => discovery(reg.openapi_group_version("", v).ok_or_else(ApiError::no_such_path)?),
        (&Method::GET, ["openapi", "v3", "apis", g, v]) => discovery(reg.openapi_group_version(g, v).ok_or_else(ApiError::no_such_path)?),
        (&Method::GET, ["healthz" | "readyz" | "livez"]) => Ok(Response::new(body::full("ok"))),
        (&Method::GET, ["metrics"]) => {
            let mut r = Response::new(body::full(super::process_metrics::exposition()));
            r.headers_mut().insert(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8".parse().expect("valid header"));
            Ok(r)
        }
        (_, ["_sim", op]) => admin::admin(state, req, op, enc).await,
        (&Method::POST, ["apis", "authentication.k8s.io", "v1", "tokenreviews"]) => review::review(state, req, enc, "TokenReview").await,
        (&Method::POST, ["apis", "authorization.k8s.io", "v1", "subjectaccessreviews"]) => {
            review::review(state, req, enc, "SubjectAccessReview").await
        }
        (_, ["api", "v1", rest @ ..]) if !rest.is_empty() => {
            let t = Target::parse(state, "", "v1", rest)?;
            resource::resource(state, req, t, enc).await
        }
        (_, ["apis", g, v, rest @ ..]) if !rest.is_empty() => {
            let t = Target::parse(state, g, v, rest)?;
            resource::resource(state, req, t, enc).await
        }
        _ => Err(ApiError::no_such_path()),
    }
}

fn version() -> Value {
    json!({"major": "1", "minor": "36", "emulationMajor": "1", "emulationMinor": "36", "gitVersion": "v1.36.2-kache-sim",
           "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean", "buildDate": "2026-11-01T00:00:00Z",
           "goVersion": "go1.25.0", "compiler": "gc", "platform": "linux/amd64"})
}
