//! kache's HTTP front: HTTP/1.1 and HTTP/2 (h2c) on one listener, routing
//! of apiserver paths, lists ([`list`]), watches ([`watch`]) and single
//! objects of cached resources answered from memory, kache's own health
//! endpoints, and everything else passed through ([`crate::proxy`]).
//!
//! A request is answered from memory only when kache can answer exactly as
//! the apiserver would: a GET of a cached resource whose initial list is in,
//! asking for the objects, their metadata only (`PartialObjectMetadata[List]`)
//! or a Table where kache has the resource's printer ([`document`]): in
//! JSON, compact or indented, in YAML for lists and GETs ([`yaml`]), or in
//! protobuf where kache encodes the kind. Other tables, table watches with
//! bookmarks the printer cannot print, YAML and indented watches are passed
//! through. Every refusal is the apiserver's `Status`, in the format asked
//! for (invariant 7).

pub mod body;
mod cbor;
pub mod document;
pub mod filter;
pub mod form;
pub(crate) mod health;
pub mod list;
pub mod metrics;
pub mod probes;
mod proto;
pub mod starting;
pub mod watch;
mod yaml;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use apimachinery::auth::Attributes;
use apimachinery::negotiate::{self, Endpoint, Format};
use apimachinery::params::ListOptions;
use apimachinery::partial::{self, MetaVersion};
use apimachinery::status::ApiError;
use apimachinery::table::IncludeObject;
use apimachinery::tls::ClientCertificates;
use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::Watcher;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::auth::Certificate;
use crate::budget::room;
use crate::cache::{Binary, Cache, CachedResource};
use crate::upstream::client::Client;
use crate::upstream::costs::{Meter, Metered, Side};
use crate::upstream::freshness::{Decision, NotFresh};
use crate::upstream::reflector::Health;
use body::ApiBody;
use document::{Layout, Shape};
use form::{Encoding, Form};
use list::Answer;
use metrics::Source;
use watch::{Dispatcher, WatchConfig};

/// Serving settings.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// How long reads wait for the store before they are passed through.
    pub waits: Waits,
    /// Watches.
    pub watch: WatchConfig,
    /// How long after upstream's last answer kache still answers from memory.
    pub max_staleness: Duration,
    /// The memory budget (`crate::budget`).
    pub budget: crate::budget::BudgetConfig,
}

impl Default for ApiConfig {
    fn default() -> ApiConfig {
        ApiConfig {
            waits: Waits::default(),
            watch: WatchConfig::default(),
            max_staleness: Duration::from_secs(300),
            budget: crate::budget::BudgetConfig::default(),
        }
    }
}

/// How long a read may wait for the store before it is passed through.
#[derive(Debug, Clone, Copy)]
pub struct Waits {
    /// For a revision the client named that kache has not confirmed yet
    /// (the apiserver's cache waits 3 s for one). A consistent read (no
    /// `resourceVersion`) waits by its expected cost instead
    /// (`upstream::freshness`).
    pub revision: Duration,
}

impl Default for Waits {
    fn default() -> Self {
        Waits { revision: Duration::from_secs(3) }
    }
}

/// Requests answered and passed through.
#[derive(Debug, Default)]
pub struct Counters {
    /// Lists answered from memory.
    pub lists_served: AtomicU64,
    /// Single-object GETs answered from memory.
    pub gets_served: AtomicU64,
    /// Watches answered from memory.
    pub watches_served: AtomicU64,
    /// Watches of cached resources passed through (a consistent start, or a revision not reached).
    pub watches_passed_through: AtomicU64,
    /// Requests passed through to the apiserver.
    pub passed_through: AtomicU64,
}

/// What every request handler shares.
#[derive(Debug)]
pub struct Api {
    /// The cached resources.
    pub cache: Cache,
    /// One watch dispatcher per cached resource, in the cache's order.
    pub dispatchers: Vec<Dispatcher>,
    /// The apiserver connection.
    pub client: Client,
    /// Settings.
    pub config: ApiConfig,
    /// Counters.
    pub counters: Counters,
    /// Set when kache shuts down: watch streams end.
    stopping: tokio::sync::watch::Sender<bool>,
    /// Client authentication and authorization (`None`: none, loopback only).
    pub gate: Option<Arc<crate::auth::Gate>>,
    /// The memory lists from memory hold while they are written.
    pub room: Arc<room::Room>,
}

impl Api {
    /// The server's state over `cache`, with a watch dispatcher per cached resource.
    pub fn new(cache: Cache, client: Client, config: ApiConfig, auth: Option<crate::auth::AuthConfig>) -> Api {
        let dispatchers = cache.resources().iter().map(|r| Dispatcher::start(r.clone())).collect();
        let gate = auth.map(|a| Arc::new(crate::auth::Gate::new(client.clone(), a)));
        metrics::install();
        let (counters, stopping, room) = (Counters::default(), tokio::sync::watch::Sender::new(false), Arc::default());
        Api { cache, dispatchers, client, config, counters, stopping, gate, room }
    }
}

/// The `Cache-Control` of every answer, as the apiserver sets it.
const CACHE_CONTROL: &str = "no-cache, private";

/// How long a client has to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How a listener's connections are secured: the TLS acceptor and the CAs
/// of client certificates (`None`: plain HTTP/1.1 or h2c).
pub type Tls = Option<(TlsAcceptor, Option<Arc<ClientCertificates>>)>;

/// What answers a connection's requests, given its client certificate.
pub type Answerer = Arc<dyn Fn(Request<Incoming>, Arc<Certificate>) -> BoxFuture<Response<ApiBody>> + Send + Sync>;

/// A boxed, sendable future.
pub type BoxFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

/// Serves `api` on `listener` (over TLS when `tls` is set, HTTP/2 or
/// HTTP/1.1 by ALPN; otherwise HTTP/1.1 or h2c) until `shutdown` completes,
/// then stops accepting and waits for open connections to finish their
/// requests (watches and other long requests are ended after `drain`).
pub async fn serve(listener: TcpListener, tls: Tls, api: Arc<Api>, shutdown: impl std::future::Future<Output = ()>, drain: Duration) {
    // Watches end at once, as an apiserver's do when it shuts down; other requests get the drain period.
    accept(&listener, &tls, answerer(&api), shutdown, Some(drain), || {
        api.stopping.send_replace(true);
    })
    .await;
}

/// The API's answers: every request handled and observed (metrics).
pub fn answerer(api: &Arc<Api>) -> Answerer {
    let api = api.clone();
    Arc::new(move |req, certificate| {
        let api = api.clone();
        Box::pin(async move {
            let observed = metrics::Request::of(req.method().as_str(), req.uri().path(), req.uri().query().unwrap_or(""));
            metrics::observe(observed, handle(&api, req, &certificate).await)
        })
    })
}

/// Accepts connections on `listener` and answers their requests with
/// `answer` until `shutdown` completes; then calls `stopping`, stops
/// accepting and gives open connections `drain` to finish. With `drain`
/// `None` (a hand-over to the next server on the same listener, which must
/// not close a connection whose request is on its way) the open
/// connections are left open, and returned: dropping the handle closes
/// them gracefully.
pub async fn accept(
    listener: &TcpListener,
    tls: &Tls,
    answer: Answerer,
    shutdown: impl std::future::Future<Output = ()>,
    drain: Option<Duration>,
    stopping: impl FnOnce(),
) -> Option<hyper_util::server::graceful::GracefulShutdown> {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let (answer, watcher, tls) = (answer.clone(), graceful.watcher(), tls.clone());
        tokio::spawn(async move {
            let result = match tls {
                None => serve_connection(stream, answer, watcher, Arc::new(Certificate::None)).await,
                Some((acceptor, clients)) => match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                    Ok(Ok(stream)) => {
                        let certificate = Certificate::of(stream.get_ref().1.peer_certificates(), clients.as_deref());
                        serve_connection(stream, answer, watcher, Arc::new(certificate)).await
                    }
                    Ok(Err(e)) => Err(e.into()),
                    Err(_) => Err("TLS handshake timed out".into()),
                },
            };
            if let Err(e) = result {
                tracing::debug!(%peer, error = %e, "connection ended");
            }
        });
    }
    stopping();
    let Some(drain) = drain else { return Some(graceful) };
    if tokio::time::timeout(drain, graceful.shutdown()).await.is_err() {
        tracing::info!(?drain, "connections still open after the drain period; closing them");
    }
    None
}

/// `certificate`: the connection's client certificate.
async fn serve_connection<I>(io: I, answer: Answerer, watcher: Watcher, certificate: Arc<Certificate>) -> Result<(), body::BoxError>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req| {
        let answer = answer.clone();
        let certificate = certificate.clone();
        async move {
            let mut resp = answer(req, certificate).await;
            // As the apiserver's `WithCacheControl` filter: every answer is
            // private to its client, so no shared HTTP cache between a client
            // and kache may store one user's answer (a list of Secrets) for
            // another. A passed-through answer keeps upstream's.
            resp.headers_mut().entry(http::header::CACHE_CONTROL).or_insert(http::HeaderValue::from_static(CACHE_CONTROL));
            Ok::<_, std::convert::Infallible>(resp)
        }
    });
    let conn = auto::Builder::new(TokioExecutor::new()).serve_connection_with_upgrades(TokioIo::new(io), service).into_owned();
    watcher.watch(conn).await
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// What the apiserver would write for this request for `res` and how it
/// would lay it out, if kache can write that from what it holds (JSON,
/// protobuf for the built-in kinds whose objects it can encode, CBOR where
/// the apiserver serves it).
fn answer(client: &Client, res: &CachedResource, headers: &HeaderMap, query: &str) -> Option<(Shape, Layout)> {
    // A built-in kind kache cannot encode in protobuf (RBAC, storage…) still
    // answers protobuf upstream: such a request is negotiated as the
    // apiserver would, then passed through.
    let endpoint = if res.is_custom() { Endpoint::CUSTOM } else { Endpoint::BUILTIN };
    let accept = header(headers, ACCEPT.as_str());
    // Whether the apiserver serves CBOR matters only where it changes the
    // answer; until kache knows, such a request passes through and a probe
    // learns it (`upstream::cbor`).
    let without = negotiate::negotiate(accept, &endpoint);
    let with = negotiate::negotiate(accept, &endpoint.with_cbor(true));
    let watch = res.status.watches.load(Ordering::Relaxed);
    let media = match res.cbor.known(watch) {
        _ if with == without => with?,
        Some(true) => with?,
        Some(false) => without?,
        None => {
            res.cbor.learn(client, &res.info.collection_path(), watch);
            return None;
        }
    };
    let protobuf = media.format == Format::Protobuf;
    let shape = match media.convert.as_ref().map(|c| (c.meta_kind(), c.version.as_str())) {
        None => Shape::Form(Form::Objects),
        Some((Some(partial::KIND), "v1")) => Shape::Form(Form::Metadata),
        Some((Some(partial::LIST_KIND), "v1")) => Shape::Form(Form::MetadataList),
        // Tables where kache has the resource's printer, in either version.
        Some((Some("Table"), version)) => Shape::Table(res.printer()?, IncludeObject::from_query(query)?, MetaVersion::parse(version)?),
        // Metadata-only forms in v1beta1 are left to the apiserver.
        Some(_) => return None,
    };
    let speaks = match shape {
        Shape::Form(Form::Objects) if media.format == Format::Cbor => res.cbor_shape().is_some(),
        _ if !protobuf => true,
        Shape::Form(Form::Metadata | Form::MetadataList) => res.speaks_metadata_protobuf(),
        _ => res.speaks_protobuf(),
    };
    speaks.then(|| (shape, Layout::of(headers, query, media.pretty, media.format)))
}

/// What a path under a cached resource names.
struct Target<'a> {
    /// The resource's index in the cache (and among the dispatchers).
    index: usize,
    res: &'a Arc<CachedResource>,
    namespace: Option<&'a str>,
    /// The object, for a path below the collection.
    name: Option<&'a str>,
}

/// The cached collection or object `path` names, if any (subresources and
/// other paths are not cached).
fn target<'a>(cache: &'a Cache, path: &'a str) -> Option<Target<'a>> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let (namespace, resource, name) = match *rest {
        [resource] => (None, resource, None),
        [resource, name] => (None, resource, Some(name)),
        ["namespaces", ns, resource] => (Some(ns), resource, None),
        ["namespaces", ns, resource, name] => (Some(ns), resource, Some(name)),
        _ => return None,
    };
    if namespace.is_some_and(str::is_empty) || name.is_some_and(str::is_empty) {
        return None;
    }
    let index = cache.resources().iter().position(|r| r.info.group == group && r.info.version == version && r.info.plural == resource)?;
    let res = &cache.resources()[index];
    let in_scope = match (res.info.namespaced, namespace, name) {
        // A cluster-scoped resource has no namespaced paths.
        (false, Some(_), _) => false,
        // A namespaced object is only named within its namespace.
        (true, None, Some(_)) => false,
        _ => true,
    };
    if !in_scope {
        return None;
    }
    Some(Target { index, res, namespace, name })
}

async fn handle(api: &Api, req: Request<Incoming>, certificate: &Certificate) -> Response<ApiBody> {
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    if req.method() == Method::GET
        && let Some((status, body)) = health::answer(api, &path, &query)
    {
        return text(status, body);
    }
    // Who the client is, before anything else (`None`: kache authenticates no one, on loopback).
    let user = match &api.gate {
        None => None,
        Some(gate) => match gate.authenticate(req.headers(), certificate).await {
            Ok(user) => Some(user),
            Err(e) => return Layout::default().error(&e),
        },
    };
    if req.method() == Method::GET && path == "/metrics" {
        if let Err(e) = authorize(api, user.as_ref(), &Attributes::of("GET", &path, &query)).await {
            return Layout::default().error(&e);
        }
        return metrics::response(api);
    }
    let cached = target(&api.cache, &path);
    let why = match (req.method() == Method::GET, cached) {
        (false, _) => "not a read",
        (true, None) => "not cached",
        (true, Some(t)) => match t.res.status.health(api.config.max_staleness) {
            Health::Listing { .. } => "not synced",
            Health::Stale { .. } => "stale",
            Health::Inconsistent => "inconsistent",
            Health::Fresh => match answer(&api.client, t.res, req.headers(), &query) {
                None => "encoding",
                Some(negotiated) => return read(api, &t, negotiated, req, user.as_ref()).await,
            },
        },
    };
    api.counters.passed_through.fetch_add(1, Ordering::Relaxed);
    metrics::from(Source::Upstream(why), crate::proxy::forward(&api.client, req, user.as_ref()).await)
}

/// A read of a cached, fresh resource: from memory, or upstream when
/// memory will not answer it; a consistent read whose proof is late goes
/// both ways and the first answer wins (`freshness::Decision`). Lists and
/// GETs carry their plan to the metrics, which compare it with what the
/// answer took.
async fn read(
    api: &Api,
    t: &Target<'_>,
    negotiated: (Shape, Layout),
    req: Request<Incoming>,
    user: Option<&apimachinery::auth::UserInfo>,
) -> Response<ApiBody> {
    let (path, query) = (req.uri().path().to_string(), req.uri().query().unwrap_or("").to_string());
    let decision = Decision::default();
    let memory = from_memory(api, t, negotiated, (&path, &query), user, &decision);
    let upstream = async {
        decision.upstream_due().await;
        if decision.plan().is_some_and(|p| p.from_memory()) {
            t.res.fresh.stats.hedges.fetch_add(1, Ordering::Relaxed);
        }
        crate::proxy::forward(&api.client, req, user).await
    };
    tokio::pin!(memory, upstream);
    let (source, resp) = tokio::select! {
        biased;
        answered = &mut memory => match answered {
            Ok(resp) => {
                if t.name.is_none() {
                    t.res.collections_from_memory.fetch_add(1, Ordering::Relaxed);
                }
                (Source::Memory, resp)
            }
            Err(why) => {
                decision.go_upstream();
                (Source::Upstream(why), upstream.await)
            }
        },
        resp = &mut upstream => {
            t.res.fresh.stats.record(Err(NotFresh::Late));
            (Source::Upstream(NotFresh::Late.as_str()), resp)
        }
    };
    if matches!(source, Source::Upstream(_)) {
        api.counters.passed_through.fetch_add(1, Ordering::Relaxed);
    }
    let mut resp = metrics::from(source, resp);
    if let Some(plan) = decision.plan().filter(|_| !apimachinery::params::is_stream(&path, &query)) {
        resp.extensions_mut().insert(plan);
    }
    resp
}

/// The apiserver's authorizer's verdict on `user` doing `attrs` (anyone may, without client authentication).
async fn authorize(api: &Api, user: Option<&apimachinery::auth::UserInfo>, attrs: &Attributes) -> Result<(), ApiError> {
    match (&api.gate, user) {
        (Some(gate), Some(user)) => gate.authorize(user, attrs).await,
        _ => Ok(()),
    }
}

/// A GET of a cached, ready resource answered from memory (or refused), or why it passes through.
async fn from_memory(
    api: &Api,
    t: &Target<'_>,
    (shape, layout): (Shape, Layout),
    (path, query): (&str, &str),
    user: Option<&apimachinery::auth::UserInfo>,
    decision: &Decision,
) -> Result<Response<ApiBody>, &'static str> {
    {
        // Nothing is served from memory without the apiserver's authorizer's allow.
        if let Err(e) = authorize(api, user, &Attributes::of("GET", path, query)).await {
            return Ok(layout.error(&e));
        }
        match t.name {
            None => {
                let access = match (&api.gate, user) {
                    (Some(gate), Some(user)) => {
                        Some(crate::auth::Access::new(gate.clone(), user.clone(), Attributes::of("GET", path, query)))
                    }
                    _ => None,
                };
                serve_collection(api, t, query, (shape, layout), access, decision).await
            }
            // A GET asking for the list form gets the apiserver's 406.
            Some(_) if matches!(shape, Shape::Form(Form::MetadataList)) => Err("encoding"),
            Some(name) => serve_get(t.res, t.namespace, name, query, &api.config.waits, (shape, layout), decision).await.inspect(|_| {
                api.counters.gets_served.fetch_add(1, Ordering::Relaxed);
            }),
        }
    }
}

/// A protobuf or CBOR page of more objects than this passes through until
/// the resource's encodings are made ahead (`CachedResource::warm`):
/// client-go's pages (500) cost a few tens of ms to encode, as they cost
/// the apiserver; a whole list costs seconds.
const BINARY_PAGE: usize = 500;

/// Why a read of up to `limit` objects of `res` in `encoding` passes through
/// while its encodings are made: it would make more than [`BINARY_PAGE`] of
/// them in the read; asking starts making them.
fn cold(res: &Arc<CachedResource>, encoding: Encoding, limit: usize) -> Option<&'static str> {
    let (binary, why) = match encoding {
        Encoding::Json => return None,
        Encoding::Protobuf => (Binary::Protobuf, "protobuf being made"),
        Encoding::Cbor => (Binary::Cbor, "cbor being made"),
    };
    (limit > BINARY_PAGE && res.store.view().head().len() > BINARY_PAGE && !res.warm(binary)).then_some(why)
}

/// A list or watch from memory, an error `Status`, or why the request passes through.
/// `access`: the client's permission, re-checked while a watch lives.
async fn serve_collection(
    api: &Api,
    t: &Target<'_>,
    query: &str,
    (shape, layout): (Shape, Layout),
    access: Option<crate::auth::Access>,
    decision: &Decision,
) -> Result<Response<ApiBody>, &'static str> {
    let mut opts = match ListOptions::decode(query) {
        Ok(o) => o,
        Err(e) => return Ok(layout.error(&e)),
    };
    if let Err(e) = opts.validate() {
        return Ok(layout.error(&e));
    }
    if opts.watch {
        // Indented streams, YAML (which has no stream form: the apiserver's 406), table streams with bookmarks the printer cannot print, and watches asking for the list form are left to the apiserver.
        let served = !layout.pretty
            && !layout.yaml
            && match &shape {
                Shape::Form(Form::Objects | Form::Metadata) => true,
                // A bookmark is a row of the kind's empty object: served where the printer prints it.
                Shape::Table(printer, ..) => {
                    !opts.allow_watch_bookmarks || printer.row(&apimachinery::watch::bookmark_object(&t.res.info, 1, false), 0).is_some()
                }
                Shape::Form(Form::MetadataList) => false,
            };
        if !served {
            api.counters.watches_passed_through.fetch_add(1, Ordering::Relaxed);
            return Err("watch form");
        }
        if let Some(why) = opts.sends_initial_events().then(|| cold(t.res, layout.encoding, usize::MAX)).flatten() {
            api.counters.watches_passed_through.fetch_add(1, Ordering::Relaxed);
            return Err(why);
        }
        let ends = watch::Ends { stopping: api.stopping.subscribe(), access };
        let answer =
            watch::watch((t.res, &api.dispatchers[t.index]), t.namespace, (&opts, decision), (shape.clone(), layout), &api.config, ends);
        return match answer.await {
            Ok(watch::Answer::Stream(resp)) => {
                api.counters.watches_served.fetch_add(1, Ordering::Relaxed);
                Ok(resp)
            }
            Ok(watch::Answer::Upstream(why)) => {
                tracing::debug!(resource = %t.res.info.qualified(), why, "watch passed through");
                api.counters.watches_passed_through.fetch_add(1, Ordering::Relaxed);
                Err(why)
            }
            Err(e) => Ok(layout.error(&e)),
        };
    }
    if matches!(shape, Shape::Form(Form::Metadata)) {
        // A list asking for the single-object form gets the apiserver's 406.
        return Err("encoding");
    }
    // Decided before any wait for a proof: a large protobuf or CBOR list goes upstream at once while its encodings are made.
    let limit = match usize::try_from(opts.limit) {
        Ok(n) if n > 0 && opts.resource_version != "0" => n,
        _ => usize::MAX,
    };
    if let Some(why) = cold(t.res, layout.encoding, limit) {
        return Err(why);
    }
    match list::list(t.res, t.namespace, &opts, &api.config.waits, decision).await {
        Ok(Answer::Page(page)) => {
            let cost = room::cost(page.items.len(), layout.gzip);
            let Some(reservation) = api.room.reserve(cost, room::WAIT).await else {
                tracing::debug!(resource = %t.res.info.qualified(), "no room for a list in the memory budget: 429");
                return Ok(too_many_requests());
            };
            match document::page_parts(t.res, page, &shape, layout.encoding) {
                Some(parts) => {
                    api.counters.lists_served.fetch_add(1, Ordering::Relaxed);
                    // What lists from memory cost, for the choice of consistent reads' path.
                    let meter = Meter::new(api.client.costs().clone(), Side::Memory);
                    Ok(layout.respond(StatusCode::OK, room::Held::new(parts, reservation)).map(|b| Metered::new(b, Some(meter)).boxed()))
                }
                None => {
                    tracing::debug!(resource = %t.res.info.qualified(), "list passed through: an object its printer or protobuf cannot express");
                    Err("encoding")
                }
            }
        }
        Ok(Answer::Upstream(why)) => {
            tracing::debug!(resource = %t.res.info.qualified(), why, "list passed through");
            Err(why)
        }
        Err(e) => Ok(layout.error(&e)),
    }
}

/// A GET of one object from the head snapshot (as the apiserver's watch
/// cache answers it): at any revision (`resourceVersion=0`), once the store
/// has reached the one named, or once it is proven fresh (unset: a
/// consistent read); or why it passes through.
async fn serve_get(
    res: &CachedResource,
    namespace: Option<&str>,
    name: &str,
    query: &str,
    waits: &Waits,
    (shape, layout): (Shape, Layout),
    decision: &Decision,
) -> Result<Response<ApiBody>, &'static str> {
    if res.pressure().passes_through() {
        return Err(crate::budget::REASON);
    }
    let rv = form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == "resourceVersion").map(|(_, v)| v.into_owned());
    let key = match namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    };
    match rv.as_deref() {
        None | Some("") => {
            if let Err(why) = res.consistent_get(&key, decision).await {
                return Err(why.as_str());
            }
        }
        // A malformed revision gets upstream's own error.
        Some(rv) => match apimachinery::params::parse_resource_version(rv) {
            Ok(rv) if res.reached(rv, waits.revision).await => {}
            Ok(_) => return Err("revision not reached"),
            Err(_) => return Err("malformed revision"),
        },
    }
    let view = res.store.view();
    let Some(o) = view.head().get(&key) else {
        return Ok(layout.error(&ApiError::not_found(&res.info, name)));
    };
    let parts = document::get_parts(res, o, &shape, layout.encoding).ok_or("encoding")?;
    Ok(layout.respond(StatusCode::OK, parts))
}

/// The apiserver's answer to overload (its max-in-flight and APF filters):
/// plain text, `Retry-After: 1`.
fn too_many_requests() -> Response<ApiBody> {
    let mut resp = text(StatusCode::TOO_MANY_REQUESTS, "Too many requests, please try again later.\n");
    resp.headers_mut().insert(http::header::RETRY_AFTER, http::HeaderValue::from_static("1"));
    resp.headers_mut().insert(http::header::X_CONTENT_TYPE_OPTIONS, http::HeaderValue::from_static("nosniff"));
    resp
}

fn text(status: StatusCode, s: impl Into<Bytes>) -> Response<ApiBody> {
    let mut resp = Response::new(body::full(s));
    *resp.status_mut() = status;
    resp.headers_mut().insert(CONTENT_TYPE, http::HeaderValue::from_static("text/plain; charset=utf-8"));
    resp
}
