//! The HTTP front: routing of apiserver paths, one handler per verb, and the
//! response encodings (JSON, indented JSON for curl, gzip over 128 KiB).
//!
//! Every request is answered; every refusal is a `Status` (see `apimachinery::status`).

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::request_body::Drained;
use bytes::Bytes;
use http::header::{ACCEPT, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE, RETRY_AFTER, USER_AGENT, VARY};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};

use crate::body::{self, Body, Writes};
use crate::connect::{self, Subresource};
use crate::db::{Deleted, Preconditions};
use crate::list;
use crate::pace::Pace;
use crate::patch::{self, PatchType};
use crate::resources::{ResourceId, ResourceType};
use crate::state::State;
use crate::watch;
use apimachinery::auth::{Attributes, UserInfo};
use apimachinery::json;
use apimachinery::list::{ListMeta, check_fields};
use apimachinery::negotiate::{self, Endpoint};
use apimachinery::params::{ListOptions, parse_resource_version};
use apimachinery::partial::{self, MetaVersion};
use apimachinery::status::ApiError;
use apimachinery::table::{self, IncludeObject, unix_now};
use apimachinery::{cbor, protobuf};

/// The apiserver's limit on request bodies (3 MiB, `MaxRequestBodyBytes`).
const MAX_BODY: usize = 3 * 1024 * 1024;

/// Responses above this size are gzipped when the client accepts it (the apiserver's 128 KiB).
const GZIP_THRESHOLD: usize = 128 * 1024;

/// The media type of aggregated discovery, which kubectl asks for first.
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// How a response is to be encoded, from the request's headers and query,
/// and how it goes on the wire.
#[derive(Debug, Clone, Copy, Default)]
struct Encoding {
    pretty: bool,
    gzip: bool,
    /// Protobuf rather than JSON (built-in kinds whose client asked for it).
    protobuf: bool,
    /// CBOR rather than JSON (with the `CBORServingAndStorage` gate on).
    cbor: bool,
    /// YAML rather than JSON: the JSON document through `JSONToYAML`, written whole.
    yaml: bool,
    /// The request came over HTTP/2: bodies are cut as Go's HTTP/2 server cuts them.
    http2: bool,
}

impl Encoding {
    fn of<B>(req: &Request<B>, cbor_gate: bool) -> Self {
        let headers = req.headers();
        let pretty = negotiate::pretty(req.uri().query().unwrap_or(""), header(headers, USER_AGENT.as_str()));
        let gzip = negotiate::accepts_gzip(header(headers, ACCEPT_ENCODING.as_str()));
        // Errors of a request asking protobuf first are protobuf `Status`es (a resource without protobuf negotiates it off).
        let format = negotiate::negotiate(header(headers, ACCEPT.as_str()), &Endpoint::BUILTIN.with_cbor(cbor_gate)).map(|m| m.encoding);
        let (protobuf, yaml, cbor) = (
            format == Some(negotiate::Encoding::Protobuf),
            format == Some(negotiate::Encoding::Yaml),
            format == Some(negotiate::Encoding::Cbor),
        );
        Self {
            pretty: pretty && format == Some(negotiate::Encoding::Json),
            gzip,
            protobuf,
            cbor,
            yaml,
            http2: req.version() == http::Version::HTTP_2,
        }
    }

    /// A JSON or protobuf document from shared chunks, encoded whole.
    fn respond(self, status: StatusCode, parts: Vec<Bytes>) -> Response<Body> {
        self.respond_written(status, parts, Writes::Whole, None)
    }

    /// A list written item by item by the apiserver's streaming encoders,
    /// released no faster than `pace` allows.
    fn respond_list(self, parts: Vec<Bytes>, pace: Option<Pace>) -> Response<Body> {
        self.respond_written(StatusCode::OK, parts, Writes::EachPart, pace)
    }

    /// A JSON or protobuf response from shared chunks that its encoder writes as `writes` says.
    fn respond_written(self, status: StatusCode, parts: Vec<Bytes>, writes: Writes, pace: Option<Pace>) -> Response<Body> {
        let (parts, writes) = match self.yaml {
            true => (vec![Bytes::from(apimachinery::yaml::from_json(&parts.concat()).expect("the simulator writes JSON"))], Writes::Whole),
            false => (parts, writes),
        };
        let len: usize = parts.iter().map(Bytes::len).sum();
        let content_type = match (self.protobuf, self.cbor, self.yaml) {
            (true, _, _) => protobuf::MEDIA_TYPE,
            (_, true, _) => cbor::MEDIA_TYPE,
            (_, _, true) => "application/yaml",
            _ => "application/json",
        };
        let mut resp = Response::builder().status(status).header(CONTENT_TYPE, content_type);
        let parts = if self.protobuf || self.cbor || self.yaml {
            parts
        } else if self.pretty {
            vec![Bytes::from(json::indent(&parts.concat()))]
        } else {
            let mut parts = parts;
            parts.push(Bytes::from_static(json::END));
            parts
        };
        if self.gzip && len > GZIP_THRESHOLD {
            let mut enc = flate2::write::GzEncoder::new(Vec::with_capacity(len / 8), flate2::Compression::fast());
            for p in &parts {
                enc.write_all(p).expect("writing to memory");
            }
            let gz = enc.finish().expect("writing to memory");
            resp = resp.header(CONTENT_ENCODING, "gzip").header(VARY, "Accept-Encoding");
            return resp.body(body::written(vec![Bytes::from(gz)], Writes::Whole, self.http2, pace)).expect("valid response");
        }
        resp.body(body::written(parts, writes, self.http2, pace)).expect("valid response")
    }

    fn value(self, status: StatusCode, v: &Value) -> Response<Body> {
        self.respond(status, vec![Bytes::from(serde_json::to_vec(v).expect("values serialize"))])
    }

    fn error(self, e: &ApiError) -> Response<Body> {
        // A 406 cannot be written in a type the client asked for: the
        // apiserver falls back to indented JSON (`WriteRawJSON`).
        let enc = if e.code == 406 { Encoding { pretty: true, protobuf: false, cbor: false, yaml: false, ..self } } else { self };
        let body = match (enc.protobuf, enc.cbor) {
            (true, _) => crate::proto::status(e),
            (_, true) => crate::cbor::status(e),
            _ => Bytes::from(e.body()),
        };
        let mut resp = enc.respond(StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), vec![body]);
        if let Some(s) = e.retry_after {
            resp.headers_mut().insert(RETRY_AFTER, s.into());
        }
        resp
    }
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// A parsed resource path.
#[derive(Debug)]
struct Target {
    res: ResourceId,
    namespace: Option<String>,
    name: Option<String>,
    sub: Option<String>,
    watch_path: bool,
}

fn resource_target(state: &State, group: &str, version: &str, rest: &[&str]) -> Result<Target, ApiError> {
    let (watch_path, rest) = match rest {
        ["watch", rest @ ..] => (true, rest),
        _ => (false, rest),
    };
    let (namespace, rest): (Option<String>, &[&str]) = match rest {
        // `/api/v1/namespaces/NAME[/status|/finalize]` is the namespace itself, not a resource in it.
        ["namespaces", _] => (None, rest),
        ["namespaces", _, "status" | "finalize"] if group.is_empty() => (None, rest),
        ["namespaces", ns, rest @ ..] => (Some((*ns).to_string()), rest),
        _ => (None, rest),
    };
    let (plural, name, sub) = match rest {
        [p] => (*p, None, None),
        [p, n] => (*p, Some((*n).to_string()), None),
        [p, n, s] => (*p, Some((*n).to_string()), Some((*s).to_string())),
        _ => return Err(ApiError::no_such_path()),
    };
    let res = state.registry().find(group, version, plural).ok_or_else(ApiError::no_such_path)?;
    let rt = state.registry().get(res);
    if (namespace.is_some() && !rt.namespaced) || (rt.namespaced && namespace.is_none() && name.is_some()) {
        return Err(ApiError::no_such_path());
    }
    Ok(Target { res, namespace, name, sub, watch_path })
}

/// Serves one request.
pub async fn handle(
    state: Arc<State>,
    req: Request<Drained>,
    server_address: String,
    client_cert: Option<crate::ClientCert>,
) -> Response<Body> {
    state.wait_unstalled().await;
    let enc = Encoding::of(&req, state.config.cbor);
    if let Some(done) = state.generating()
        && !matches!(req.uri().path(), "/healthz" | "/livez")
    {
        let mut e = ApiError::unavailable();
        e.message = format!("the simulated cluster is not ready: {done} of {} objects generated", state.config.workload.objects());
        return enc.error(&e);
    }
    let public = matches!(req.uri().path(), "/healthz" | "/livez" | "/readyz" | "/version");
    let verified_cert = client_cert.as_ref().is_some_and(|c| c.verified);
    if !public && !state.config.auth.allows(header(req.headers(), http::header::AUTHORIZATION.as_str()), verified_cert) {
        return enc.error(&ApiError::unauthorized());
    }
    // The `/_sim/` control paths belong to the test harness, not to the API the policy guards.
    if let Some(policy) = state.policy()
        && !public
        && !req.uri().path().starts_with("/_sim/")
        && let Err(e) = enforce(&policy, &req, client_cert)
    {
        return enc.error(&e);
    }
    match route(&state, req, enc, &server_address).await {
        Ok(r) => r,
        Err(e) => enc.error(&e),
    }
}

/// Authenticates the request (a verified client certificate, else a bearer
/// token of the policy, else anonymous if the policy allows it), applies its
/// impersonation, and authorizes it, as the apiserver's filters do.
fn enforce(policy: &crate::Policy, req: &Request<Drained>, client_cert: Option<crate::ClientCert>) -> Result<(), ApiError> {
    let client_cert_presented = client_cert.is_some();
    let token = header(req.headers(), http::header::AUTHORIZATION.as_str()).and_then(|a| a.strip_prefix("Bearer ")).map(str::trim);
    // As the apiserver's union of authenticators: a valid certificate, else a valid token; a certificate that does not verify is no one (401 unless a token authenticates).
    let user = match (client_cert.and_then(|c| c.user), token) {
        (Some(user), _) => Some(user),
        (None, Some(token)) => policy.authenticate(token),
        (None, None) if client_cert_presented => None,
        (None, None) => policy.anonymous.then(UserInfo::anonymous),
    };
    let user = user.ok_or_else(ApiError::unauthorized)?;
    let user = policy.impersonated(&user, req.headers())?.unwrap_or(user);
    let attrs = Attributes::of(req.method().as_str(), req.uri().path(), req.uri().query().unwrap_or(""));
    if policy.allows(&user, &attrs) { Ok(()) } else { Err(attrs.forbidden(&user.name, "")) }
}

/// `POST …/tokenreviews` and `…/subjectaccessreviews`, answered from the policy.
async fn review(state: &State, req: Request<Drained>, enc: Encoding, kind: &str) -> Result<Response<Body>, ApiError> {
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
        json!({"allowed": policy.allows(&user, &attrs)})
    };
    review["status"] = status;
    review["metadata"] = json!({"creationTimestamp": null});
    Ok(enc.value(StatusCode::CREATED, &review))
}

async fn route(state: &Arc<State>, req: Request<Drained>, enc: Encoding, server_address: &str) -> Result<Response<Body>, ApiError> {
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
        (&Method::POST, ["_sim", "policy"]) => {
            let (_, body) = read_body(req).await?;
            let policy: crate::Policy = serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(format!("a bad policy: {e}")))?;
            state.set_policy(policy);
            Ok(enc.value(StatusCode::OK, &json!({"policy": "replaced"})))
        }
        (_, ["_sim", op]) => admin(state, op, req.uri().query().unwrap_or(""), enc),
        (&Method::POST, ["apis", "authentication.k8s.io", "v1", "tokenreviews"]) => review(state, req, enc, "TokenReview").await,
        (&Method::POST, ["apis", "authorization.k8s.io", "v1", "subjectaccessreviews"]) => {
            review(state, req, enc, "SubjectAccessReview").await
        }
        (_, ["api", "v1", rest @ ..]) if !rest.is_empty() => {
            let t = resource_target(state, "", "v1", rest)?;
            resource(state, req, t, enc).await
        }
        (_, ["apis", g, v, rest @ ..]) if !rest.is_empty() => {
            let t = resource_target(state, g, v, rest)?;
            resource(state, req, t, enc).await
        }
        _ => Err(ApiError::no_such_path()),
    }
}

fn version() -> Value {
    json!({"major": "1", "minor": "36", "emulationMajor": "1", "emulationMinor": "36", "gitVersion": "v1.36.2-kache-sim",
           "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean", "buildDate": "2026-11-01T00:00:00Z",
           "goVersion": "go1.25.0", "compiler": "gc", "platform": "linux/amd64"})
}

fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

async fn read_body(req: Request<Drained>) -> Result<(HeaderMap, Vec<u8>), ApiError> {
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

/// What a Table row carries of `o`.
fn row_object(rt: &ResourceType, o: &crate::object::Obj, include: IncludeObject, version: MetaVersion) -> Option<Vec<Bytes>> {
    match include {
        IncludeObject::None => None,
        IncludeObject::Metadata => Some(partial::object_in(version, [o.served_metadata(rt)])),
        IncludeObject::Object => Some(vec![Bytes::from(o.with_type(rt))]),
    }
}

fn object_response(enc: Encoding, status: StatusCode, rt: &ResourceType, o: &crate::object::Obj) -> Response<Body> {
    if enc.cbor {
        return match crate::cbor::document(rt, o, false) {
            Ok(parts) => enc.respond(status, parts),
            Err(e) => enc.error(&e),
        };
    }
    let doc = if enc.protobuf { crate::proto::message(rt).map(|m| crate::proto::document(rt, &m, &o.item, false)) } else { None };
    match doc {
        Some(Ok(parts)) => enc.respond(status, parts),
        Some(Err(e)) => enc.error(&e),
        None => enc.respond(status, vec![Bytes::from(o.with_type(rt))]),
    }
}

/// The Table printer of a resource: a built-in's, or a custom resource's from its CRD as stored now.
fn printer_of(state: &State, res: ResourceId) -> Option<Arc<table::Printer>> {
    let reg = state.registry();
    let rt = reg.get(res);
    if reg.is_builtin(res) {
        return table::printer(&rt.group, &rt.plural);
    }
    let crds = reg.builtin("apiextensions.k8s.io", "customresourcedefinitions");
    let db = state.db.read();
    let crd = db.get(crds, &format!("{}.{}", rt.plural, rt.group), db.rev())?;
    table::crd_printer(&crd.item, &rt.version).map(Arc::new)
}

async fn resource(state: &Arc<State>, req: Request<Drained>, t: Target, mut enc: Encoding) -> Result<Response<Body>, ApiError> {
    let reg = state.registry().clone();
    let rt = reg.get(t.res);
    let ns = t.namespace.clone().unwrap_or_default();
    let query = req.uri().query().unwrap_or("").to_string();
    let method = req.method().clone();
    // Tables for lists and GETs of the resources with a printer (watches stay plain JSON).
    let printer = printer_of(state, t.res).filter(|_| !apimachinery::params::is_stream(req.uri().path(), &query));
    let message = crate::proto::message(rt);
    // Custom resources have protobuf for metadata-only answers, not for their objects.
    let base = if message.is_some() { Endpoint::BUILTIN } else { Endpoint::CUSTOM }.with_cbor(state.config.cbor);
    let endpoint = Endpoint { tables: printer.is_some(), ..base };
    let media = negotiate::negotiate(header(req.headers(), ACCEPT.as_str()), &endpoint)
        .ok_or_else(|| ApiError::not_acceptable_gated(state.config.cbor))?;
    enc.protobuf = media.encoding == negotiate::Encoding::Protobuf;
    enc.cbor = media.encoding == negotiate::Encoding::Cbor;
    enc.yaml = media.encoding == negotiate::Encoding::Yaml;
    let message = enc.protobuf.then(|| message.unwrap_or_default());
    let kind = media.convert.as_ref().and_then(|c| c.meta_kind()).map(str::to_owned);
    // A Table in the version asked for (`meta_kind` accepts only v1 and v1beta1).
    let version = media.convert.as_ref().and_then(|c| MetaVersion::parse(&c.version)).unwrap_or_default();
    let table = printer
        .filter(|_| kind.as_deref() == Some("Table"))
        .map(|p| (p, IncludeObject::from_query(&query).unwrap_or(IncludeObject::Metadata)));
    // Metadata-only: `PartialObjectMetadata` for an object or a watch, `…List` for a list.
    let partial = kind.filter(|k| k != "Table");
    let verb = |v: &'static str| state.count(rt.qualified(), v);
    match (method, t.name.as_deref(), t.sub.as_deref()) {
        (Method::GET, None, None) => {
            let mut opts = if t.watch_path { ListOptions::decode_watch(&query)? } else { ListOptions::decode(&query)? };
            opts.validate()?;
            if opts.watch {
                verb("watch");
                if enc.yaml {
                    // YAML has no stream form: the apiserver's 406, written in the YAML asked for.
                    let e = ApiError::not_acceptable_gated(state.config.cbor);
                    return Ok(enc.respond(StatusCode::NOT_ACCEPTABLE, vec![Bytes::from(e.body())]));
                }
                if state.initializing() {
                    return Err(ApiError::initializing());
                }
                let (content_type, encoding) = match (message, enc.cbor) {
                    (Some(m), _) => ("application/vnd.kubernetes.protobuf;stream=watch", watch::Frames::Protobuf(m)),
                    (None, true) => (cbor::SEQ_MEDIA_TYPE, watch::Frames::Cbor),
                    (None, false) => ("application/json", watch::Frames::Json),
                };
                let rx =
                    watch::watch(state.clone(), t.res, t.namespace.clone(), opts, watch::Wire { partial: partial.is_some(), encoding })
                        .await?;
                return Ok(Response::builder().header(CONTENT_TYPE, content_type).body(body::channel(rx)).expect("valid response"));
            }
            verb("list");
            if partial.as_deref() == Some(partial::KIND) {
                return Err(partial::wrong_form(partial::KIND, rt, true));
            }
            let page = list::list(state, t.res, t.namespace.as_deref(), &opts).await?;
            let pace = state.slowness().list_pace();
            if let Some(m) = &message {
                let parts = crate::proto::list(rt, m, &page.meta, page.items.iter().map(|o| &o.item[..]), partial.is_some())?;
                return Ok(enc.respond_list(parts, pace));
            }
            if enc.cbor {
                return Ok(enc.respond_list(crate::cbor::list(rt, &page.meta, page.items.iter().map(|o| &**o), partial.is_some())?, pace));
            }
            Ok(match (table, partial) {
                (Some((printer, include)), _) => {
                    let now = unix_now();
                    let mut items: Vec<_> = page.items.iter().collect();
                    printer.order_rows(&mut items, |o| &o.item);
                    let rows =
                        items.into_iter().map(|o| (printer.row(&o.item, now).unwrap_or_default(), row_object(rt, o, include, version)));
                    // A Table is not a three-field list: the apiserver encodes it whole.
                    enc.respond_written(
                        StatusCode::OK,
                        table::json_table(version, &page.meta.unsharded().json(), &printer, rows),
                        Writes::Whole,
                        pace,
                    )
                }
                (None, Some(_)) => enc.respond_list(list::encode_partial(rt, &page), pace),
                (None, None) => enc.respond_list(list::encode(rt, &page), pace),
            })
        }
        (Method::GET, Some(name), None | Some("status")) => {
            verb("get");
            let rv = form_urlencoded::parse(query.as_bytes())
                .find(|(k, _)| k == "resourceVersion")
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default();
            if rv.is_empty() {
                // The apiserver reads an object without a revision from etcd, a quorum read.
                state.consistent_read().await;
            }
            let rv = parse_resource_version(&rv)?;
            if rv > 0 {
                state.wait_for_revision(rv, Duration::from_secs(3)).await?;
            }
            let db = state.db.read();
            let o = db.get(t.res, &rt.key(&ns, name), db.rev()).cloned().ok_or_else(|| ApiError::not_found(rt, name))?;
            if let Some((printer, include)) = table {
                let meta = format!("{{\"resourceVersion\":\"{}\"}}", o.rv);
                let row = (printer.row(&o.item, unix_now()).unwrap_or_default(), row_object(rt, &o, include, version));
                return Ok(enc.respond(StatusCode::OK, table::json_table(version, &meta, &printer, [row])));
            }
            if enc.cbor && partial.as_deref() == Some(partial::KIND) {
                return Ok(enc.respond(StatusCode::OK, crate::cbor::document(rt, &o, partial.is_some())?));
            }
            match partial.as_deref() {
                Some(partial::KIND) => match &message {
                    Some(m) => Ok(enc.respond(StatusCode::OK, crate::proto::document(rt, m, &o.item, true)?)),
                    None => Ok(enc.respond(StatusCode::OK, partial::object([o.served_metadata(rt)]))),
                },
                Some(other) => Err(partial::wrong_form(other, rt, false)),
                None => Ok(object_response(enc, StatusCode::OK, rt, &o)),
            }
        }
        (Method::GET, Some(name), Some("log")) if rt.plural == "pods" && rt.group.is_empty() => {
            verb("get");
            let db = state.db.read();
            db.get(t.res, &rt.key(&ns, name), db.rev()).ok_or_else(|| ApiError::not_found(rt, name))?;
            Ok(Response::builder()
                .header(CONTENT_TYPE, "text/plain")
                .body(body::full(format!("simulated log of pod {ns}/{name}\n")))
                .expect("valid response"))
        }
        (Method::GET | Method::POST, Some(name), Some(sub))
            if rt.plural == "pods" && rt.group.is_empty() && Subresource::of(sub).is_some() =>
        {
            verb("connect");
            let pod = {
                let db = state.db.read();
                db.get(t.res, &rt.key(&ns, name), db.rev()).cloned().ok_or_else(|| ApiError::not_found(rt, name))?
            };
            connect::handle(req, &pod, Subresource::of(sub).expect("checked by the guard"))
        }
        (Method::POST, None, None) => {
            verb("create");
            let (headers, bytes) = read_body(req).await?;
            let v = parse_json(rt, &headers, &bytes)?;
            let o = state.db.write().create(t.res, &ns, v, &now())?;
            state.publish_revision();
            Ok(object_response(enc, StatusCode::CREATED, rt, &o))
        }
        (Method::PUT, Some(name), sub @ (None | Some("status"))) => {
            verb("update");
            let status_only = sub.is_some();
            let (headers, bytes) = read_body(req).await?;
            let v = parse_json(rt, &headers, &bytes)?;
            let o = state.db.write().update(t.res, &ns, name, v, status_only)?;
            state.publish_revision();
            Ok(object_response(enc, StatusCode::OK, rt, &o))
        }
        (Method::PATCH, Some(name), sub @ (None | Some("status"))) => {
            verb("patch");
            let status_only = sub.is_some();
            let (headers, bytes) = read_body(req).await?;
            let kind = PatchType::from_content_type(header(&headers, CONTENT_TYPE.as_str()).unwrap_or(""))?;
            if kind == PatchType::Strategic && !reg.is_builtin(t.res) {
                return Err(ApiError::unsupported_media_type("application/strategic-merge-patch+json"));
            }
            let o = {
                let mut db = state.db.write();
                let rev = db.rev();
                let existing = db.get(t.res, &rt.key(&ns, name), rev).cloned().ok_or_else(|| ApiError::not_found(rt, name))?;
                let mut doc: Value = serde_json::from_slice(&existing.with_type(rt)).expect("stored objects are JSON");
                patch::apply(kind, &mut doc, &bytes)?;
                if !doc.is_object() {
                    return Err(ApiError::bad_request(format!(
                        "the patch turned the object into {doc}, which is not a {} object",
                        rt.kind
                    )));
                }
                if doc.pointer("/metadata/resourceVersion").is_none_or(Value::is_null) {
                    doc["metadata"]["resourceVersion"] = Value::String(existing.rv.to_string());
                }
                db.update(t.res, &ns, name, doc, status_only)?
            };
            state.publish_revision();
            Ok(object_response(enc, StatusCode::OK, rt, &o))
        }
        (Method::DELETE, Some(name), None) => {
            verb("delete");
            let (_, bytes) = read_body(req).await?;
            let pre = preconditions(&bytes);
            let d = state.db.write().delete(t.res, &ns, name, &pre, &now())?;
            state.publish_revision();
            let (Deleted::Gone(o) | Deleted::Marked(o)) = &d;
            let status = if matches!(d, Deleted::Marked(_)) { StatusCode::ACCEPTED } else { StatusCode::OK };
            Ok(object_response(enc, status, rt, o))
        }
        (Method::DELETE, None, None) => {
            verb("deletecollection");
            let mut opts = ListOptions::decode(&query)?;
            opts.validate()?;
            check_fields(rt, &opts)?;
            let filter = list::Filter::new(rt, &opts, list::shard(&opts, state.config.sharded_list_and_watch)?);
            let mut db = state.db.write();
            let prefix = rt.prefix(t.namespace.as_deref());
            let rev = db.rev();
            let names: Vec<(String, String)> = db
                .range(t.res, &prefix, &prefix, rev)
                .filter(|(_, o)| filter.matches(o))
                .map(|(_, o)| (o.namespace.clone(), o.name.clone()))
                .collect();
            let mut gone = Vec::new();
            for (ns, name) in names {
                if let Ok(Deleted::Gone(o) | Deleted::Marked(o)) = db.delete(t.res, &ns, &name, &Preconditions::default(), &now()) {
                    gone.push(o);
                }
            }
            let page = list::Page { meta: ListMeta::for_page(db.rev(), "", None, 0, false), items: gone };
            drop(db);
            state.publish_revision();
            Ok(enc.respond_list(list::encode(rt, &page), None))
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

fn preconditions(body: &[u8]) -> Preconditions {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let get = |k: &str| v.pointer(&format!("/preconditions/{k}")).and_then(Value::as_str).map(str::to_string);
    Preconditions { uid: get("uid"), resource_version: get("resourceVersion") }
}

/// The resource `PLURAL[.GROUP]` names.
fn named_resource(state: &State, resource: &str) -> Result<crate::resources::ResourceId, ApiError> {
    let (plural, group) = resource.split_once('.').unwrap_or((resource, ""));
    state
        .registry()
        .iter()
        .find(|(_, rt)| rt.resource.plural == plural && rt.resource.group == group)
        .map(|(id, _)| id)
        .ok_or_else(|| ApiError::bad_request(format!("no resource {resource:?}")))
}

fn admin(state: &Arc<State>, op: &str, query: &str, enc: Encoding) -> Result<Response<Body>, ApiError> {
    let param = |name: &str| form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
    match op {
        "compact" => {
            let rev = crate::faults::compact_now(state);
            Ok(enc.value(StatusCode::OK, &json!({"compacted": rev})))
        }
        "expire" => {
            let (Some(resource), Some(namespace)) = (param("resource"), param("namespace")) else {
                return Err(ApiError::bad_request("expire needs ?resource=PLURAL[.GROUP]&namespace=NS"));
            };
            let res = named_resource(state, &resource)?;
            let (revision, deleted) = state.db.write().expire(res, &namespace);
            Ok(enc.value(StatusCode::OK, &json!({"revision": revision, "deleted": deleted})))
        }
        "unannounce" => {
            let resource =
                param("resource").ok_or_else(|| ApiError::bad_request("unannounce needs ?resource=PLURAL[.GROUP][&events=N]"))?;
            let events: u64 =
                param("events").map_or(Ok(1), |n| n.parse()).map_err(|_| ApiError::bad_request("events: not a whole number"))?;
            state.db.read().unannounce(named_resource(state, &resource)?, events);
            Ok(enc.value(StatusCode::OK, &json!({"unannounced": events})))
        }
        "drop-watches" => {
            state.drop_watches();
            Ok(enc.value(StatusCode::OK, &json!({"dropped": true})))
        }
        "stall" => {
            let secs: f64 = param("seconds").and_then(|s| s.parse().ok()).ok_or_else(|| ApiError::bad_request("stall needs ?seconds=N"))?;
            state.stall(Duration::from_secs_f64(secs.clamp(0.0, 3600.0)));
            Ok(enc.value(StatusCode::OK, &json!({"stalled_seconds": secs})))
        }
        "restart" => {
            let reset = param("reset").is_some_and(|v| v == "true" || v == "1");
            let reinit: f64 = param("reinit-seconds").and_then(|s| s.parse().ok()).unwrap_or(0.0);
            let rev = crate::faults::restart(state, reset, Duration::from_secs_f64(reinit.clamp(0.0, 600.0)));
            Ok(enc.value(StatusCode::OK, &json!({"restarted": true, "revision": rev})))
        }
        "churn" => {
            let rate: f64 = param("rate")
                .and_then(|s| s.parse().ok())
                .filter(|r: &f64| r.is_finite() && *r >= 0.0)
                .ok_or_else(|| ApiError::bad_request("churn needs ?rate=R (changes per second, >= 0)"))?;
            state.set_churn_rate(rate);
            Ok(enc.value(StatusCode::OK, &json!({"churn": rate})))
        }
        "slow" => {
            let mut slow = state.slowness();
            if let Some(rate) = param("list-mb-per-second") {
                slow.list_mb_per_second =
                    rate.parse().map_err(|_| ApiError::bad_request(format!("list-mb-per-second: not a number: {rate:?}")))?;
            }
            if let Some(ms) = param("consistent-read-latency-ms") {
                let ms: u64 =
                    ms.parse().map_err(|_| ApiError::bad_request(format!("consistent-read-latency-ms: not a whole number: {ms:?}")))?;
                slow.consistent_read_latency = Duration::from_millis(ms);
            }
            slow.validate().map_err(ApiError::bad_request)?;
            state.set_slowness(slow);
            let latency_ms = slow.consistent_read_latency.as_millis() as u64;
            Ok(enc.value(StatusCode::OK, &json!({"listMBPerSecond": slow.list_mb_per_second, "consistentReadLatencyMs": latency_ms})))
        }
        "stats" => Ok(enc.value(StatusCode::OK, &crate::faults::stats(state))),
        _ => Err(ApiError::no_such_path()),
    }
}
