//! Requests on a resource: the path that names it ([`Target`]), the
//! answer's negotiation (format, Table, metadata-only), and one arm per verb
//! — list, watch, get, log, connect, create, update, patch, delete,
//! deletecollection. Invariant: every write publishes the new revision
//! before it answers, so a read that waits for it sees it.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{Method, Request, Response, StatusCode};
use serde_json::Value;

use super::encoding::{Writer, header};
use super::request::{preconditions, read_body, read_object};
use crate::body::{self, Body, Writes};
use crate::connect::{self, Subresource};
use crate::db::{Deleted, Preconditions};
use crate::list;
use crate::object::Obj;
use crate::patch::{self, PatchType};
use crate::request_body::Drained;
use crate::resources::{ResourceId, ResourceType};
use crate::state::State;
use crate::watch;
use apimachinery::cbor;
use apimachinery::list::ListMeta;
use apimachinery::negotiate::{self, Endpoint};
use apimachinery::params::{ListOptions, parse_resource_version};
use apimachinery::partial::{self, MetaVersion};
use apimachinery::status::ApiError;
use apimachinery::table::{self, IncludeObject, unix_now};

/// A parsed resource path.
#[derive(Debug)]
pub(super) struct Target {
    res: ResourceId,
    namespace: Option<String>,
    name: Option<String>,
    sub: Option<String>,
    watch_path: bool,
}

impl Target {
    /// The resource request `rest` names under `/api/v1` (`group` empty) or
    /// `/apis/GROUP/VERSION`; 404 for a path that names none.
    pub(super) fn parse(state: &State, group: &str, version: &str, rest: &[&str]) -> Result<Target, ApiError> {
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
}

/// Answers a request on a resource, as its method, name and subresource say.
pub(super) async fn resource(state: &Arc<State>, req: Request<Drained>, t: Target, mut enc: Writer) -> Result<Response<Body>, ApiError> {
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
    enc.negotiated.encoding = media.encoding;
    let message = enc.is(negotiate::Encoding::Protobuf).then(|| message.unwrap_or_default());
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
                if enc.is(negotiate::Encoding::Yaml) {
                    // YAML has no stream form: the apiserver's 406, written in the YAML asked for.
                    let e = ApiError::not_acceptable_gated(state.config.cbor);
                    return Ok(enc.respond(StatusCode::NOT_ACCEPTABLE, vec![Bytes::from(e.body())]));
                }
                if state.initializing() {
                    return Err(ApiError::initializing());
                }
                let (content_type, encoding) = match (message, enc.is(negotiate::Encoding::Cbor)) {
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
            if enc.is(negotiate::Encoding::Cbor) {
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
            if enc.is(negotiate::Encoding::Cbor) && partial.as_deref() == Some(partial::KIND) {
                return Ok(enc.respond(StatusCode::OK, crate::cbor::document(rt, &o, partial.is_some())?));
            }
            match partial.as_deref() {
                Some(partial::KIND) => match &message {
                    Some(m) => Ok(enc.respond(StatusCode::OK, crate::proto::document(rt, m, &o.item, true)?)),
                    None => Ok(enc.respond(StatusCode::OK, partial::object([o.served_metadata(rt)]))),
                },
                Some(other) => Err(partial::wrong_form(other, rt, false)),
                None => Ok(enc.object(StatusCode::OK, rt, &o)),
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
            let v = read_object(req, rt).await?;
            let o = state.db.write().create(t.res, &ns, v, &now())?;
            state.publish_revision();
            Ok(enc.object(StatusCode::CREATED, rt, &o))
        }
        (Method::PUT, Some(name), sub @ (None | Some("status"))) => {
            verb("update");
            let status_only = sub.is_some();
            let v = read_object(req, rt).await?;
            let o = state.db.write().update(t.res, &ns, name, v, status_only)?;
            state.publish_revision();
            Ok(enc.object(StatusCode::OK, rt, &o))
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
            Ok(enc.object(StatusCode::OK, rt, &o))
        }
        (Method::DELETE, Some(name), None) => {
            verb("delete");
            let (_, bytes) = read_body(req).await?;
            let pre = preconditions(&bytes);
            let d = state.db.write().delete(t.res, &ns, name, &pre, &now())?;
            state.publish_revision();
            let (Deleted::Gone(o) | Deleted::Marked(o)) = &d;
            let status = if matches!(d, Deleted::Marked(_)) { StatusCode::ACCEPTED } else { StatusCode::OK };
            Ok(enc.object(status, rt, o))
        }
        (Method::DELETE, None, None) => {
            verb("deletecollection");
            let mut opts = ListOptions::decode(&query)?;
            opts.validate()?;
            list::field_labels(rt, &opts)?;
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
            let page = list::Page { meta: ListMeta::for_page(db.rev(), "", None, 0, false, rt.watch_cached), items: gone };
            drop(db);
            state.publish_revision();
            Ok(enc.respond_list(list::encode(rt, &page), None))
        }
        _ => Err(ApiError::method_not_allowed()),
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

/// What a Table row carries of `o`.
fn row_object(rt: &ResourceType, o: &Obj, include: IncludeObject, version: MetaVersion) -> Option<Vec<Bytes>> {
    match include {
        IncludeObject::None => None,
        IncludeObject::Metadata => Some(partial::object_in(version, [o.served_metadata(rt)])),
        IncludeObject::Object => Some(vec![Bytes::from(o.with_type(rt))]),
    }
}

fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}
