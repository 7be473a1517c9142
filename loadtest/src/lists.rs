//! `loadtest lists`: list workloads against the direct target (the
//! simulator or a real apiserver), kache in front of it, and a plain server
//! that answers every request with the direct target's bytes from memory
//! (the ceiling: a server that does no work), in one run:
//!
//! - full lists: `resourceVersion=0`, gzip on and off, and consistent
//!   (no `resourceVersion`);
//! - paged lists: clients walking the whole collection in pages of
//!   `--page-size` (the first page at `--rv-mode`, then every `continue`),
//!   in JSON, protobuf and Table (and YAML on request);
//! - the indexed selectors: one node's pods (a kubelet) and one label.
//!
//! Each cell makes one unmeasured request (a paged one: one whole walk) first, then
//! `--requests` lists or `--pages` pages, `--concurrency` at a time; any
//! answer but 200 is counted by status, never retried.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::Context;
use bytes::Bytes;
use clap::{Args, ValueEnum};
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::procs::first_revision;
use crate::record::{Recorder, Row, Usage};
use crate::report::Report;
use crate::target::{Fleet, Http, Role, Target, TargetArgs};

/// Options of `loadtest lists`.
#[derive(Debug, Args)]
pub struct ListsArgs {
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Pods in the simulated cluster.
    #[arg(long, default_value_t = 50_000)]
    pub pods: usize,
    /// Nodes they run on (default: 100 pods a node).
    #[arg(long)]
    pub nodes: Option<usize>,
    /// The collection listed (a real cluster may prefer another).
    #[arg(long, default_value = "/api/v1/pods")]
    pub collection: String,
    /// Full lists per cell (selector lists: ten times as many).
    #[arg(long, default_value_t = 10)]
    pub requests: usize,
    /// Pages per paged cell.
    #[arg(long, default_value_t = 200)]
    pub pages: usize,
    /// Objects per page.
    #[arg(long, default_value_t = 500)]
    pub page_size: usize,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 2)]
    pub concurrency: usize,
    /// The first page's resourceVersion: consistent (none), exact (a revision taken at the start), any (0).
    #[arg(long, value_enum, default_value = "consistent")]
    pub rv_mode: RvMode,
    /// Encodings of the paged lists.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "json,protobuf,table")]
    pub encodings: Vec<Encoding>,
    /// Run only the cells of these names (repeatable), e.g. `--only 'full rv=0'`
    /// for clusterloader2's list storm.
    #[arg(long)]
    pub only: Vec<String>,
}

/// Where a paged walk starts.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum RvMode {
    /// No resourceVersion: the most recent revision (kubectl's first page).
    Consistent,
    /// `resourceVersionMatch=Exact` at the revision listed at the start.
    Exact,
    /// `resourceVersion=0`: any revision.
    Any,
}

/// A wire encoding.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Encoding {
    /// `application/json`.
    Json,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
    /// A `meta.k8s.io/v1` Table in JSON.
    Table,
    /// `application/yaml`.
    Yaml,
}

impl Encoding {
    fn accept(self) -> &'static str {
        match self {
            Encoding::Json => "application/json",
            Encoding::Protobuf => "application/vnd.kubernetes.protobuf",
            Encoding::Table => "application/json;as=Table;v=v1;g=meta.k8s.io",
            Encoding::Yaml => "application/yaml",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Encoding::Json => "json",
            Encoding::Protobuf => "protobuf",
            Encoding::Table => "table",
            Encoding::Yaml => "yaml",
        }
    }
}

/// One workload: the path of a request (the first page's, when paged), its headers, and whether it pages.
#[derive(Debug, Clone)]
struct Workload {
    name: String,
    path: String,
    headers: Vec<(&'static str, &'static str)>,
    paged: bool,
    encoding: Encoding,
    count: usize,
}

/// Serves `body` with `headers` to every request, like a server that did no work.
async fn plain_server(body: Bytes, headers: Vec<(String, String)>) -> anyhow::Result<(String, tokio::task::JoinHandle<()>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let headers = Arc::new(headers);
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (body, headers) = (body.clone(), headers.clone());
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |_req| {
                    let mut resp = hyper::Response::new(Full::new(body.clone()));
                    for (k, v) in headers.iter() {
                        if let (Ok(k), Ok(v)) =
                            (hyper::header::HeaderName::try_from(k.as_str()), hyper::header::HeaderValue::try_from(v.as_str()))
                        {
                            resp.headers_mut().insert(k, v);
                        }
                    }
                    async move { Ok::<_, std::convert::Infallible>(resp) }
                });
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
            });
        }
    });
    Ok((url, task))
}

/// The continue token of a list page in `encoding`, if it has one.
pub fn continue_token(body: &[u8], encoding: Encoding) -> Option<String> {
    match encoding {
        Encoding::Json | Encoding::Table => {
            // The list's metadata comes first; a token is base64 (no escapes).
            let head = &body[..body.len().min(8192)];
            let key = b"\"continue\":\"";
            let at = head.windows(key.len()).position(|w| w == key)? + key.len();
            let len = head[at..].iter().position(|b| *b == b'"')?;
            Some(String::from_utf8_lossy(&head[at..at + len]).into_owned()).filter(|t| !t.is_empty())
        }
        Encoding::Yaml => {
            // Keys in order: the list's metadata comes last, `continue` first in it.
            let tail = &body[body.len().saturating_sub(8192)..];
            let key = b"\nmetadata:\n  continue: ";
            let at = tail.windows(key.len()).rposition(|w| w == key)? + key.len();
            let len = tail[at..].iter().position(|b| *b == b'\n')?;
            let token = String::from_utf8_lossy(&tail[at..at + len]).trim_matches(['"', '\'']).to_string();
            Some(token).filter(|t| !t.is_empty())
        }
        Encoding::Protobuf => {
            // `k8s\0`, then runtime.Unknown{raw: 2} holding the list{metadata: 1} holding ListMeta{continue: 3}.
            let raw = protobuf_field(body.get(4..)?, 2)?;
            let meta = protobuf_field(raw, 1)?;
            Some(String::from_utf8_lossy(protobuf_field(meta, 3)?).into_owned()).filter(|t| !t.is_empty())
        }
    }
}

/// The first length-delimited field `number` of a protobuf message.
fn protobuf_field(mut msg: &[u8], number: u64) -> Option<&[u8]> {
    fn varint(buf: &mut &[u8]) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (b, rest) = buf.split_first()?;
            *buf = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    while !msg.is_empty() {
        let key = varint(&mut msg)?;
        match key & 7 {
            0 => {
                varint(&mut msg)?;
            }
            2 => {
                let len = usize::try_from(varint(&mut msg)?).ok()?;
                let (value, rest) = (msg.get(..len)?, msg.get(len..)?);
                if key >> 3 == number {
                    return Some(value);
                }
                msg = rest;
            }
            1 => msg = msg.get(8..)?,
            5 => msg = msg.get(4..)?,
            _ => return None,
        }
    }
    None
}

/// Runs `w` against `http`: `w.count` requests, `concurrency` clients, each walking pages when paged.
async fn drive(http: &Http, w: &Workload, concurrency: usize, epoch: Instant) -> Recorder {
    let next = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let (http, w, next) = (http.clone(), w.clone(), next.clone());
            tokio::spawn(async move {
                let mut rec = Recorder::new(epoch);
                let mut token: Option<String> = None;
                while next.fetch_add(1, Ordering::Relaxed) < w.count {
                    let path = token.as_ref().map_or_else(|| w.path.clone(), |t| next_page(&w.path, t));
                    let t = Instant::now();
                    let answer = if w.paged {
                        http.get(&path, &w.headers).await.map(|(status, body)| {
                            token = if status == 200 { continue_token(&body, w.encoding) } else { None };
                            (status, body.len())
                        })
                    } else {
                        http.get_length(&path, &w.headers).await
                    };
                    match answer {
                        Ok((status, length)) => rec.record(t.elapsed(), status, length),
                        Err(_) => {
                            rec.record(t.elapsed(), 0, 0);
                            token = None;
                        }
                    }
                }
                rec
            })
        })
        .collect();
    let mut all = Recorder::new(epoch);
    for t in tasks {
        if let Ok(rec) = t.await {
            all.merge(&rec);
        }
    }
    all
}

/// One unmeasured request, or for a paged workload one whole walk (at most
/// `count` pages): connections open, and what a server prepares once per
/// revision (kache's protobuf encoding of each object) is ready.
async fn warm_up(http: &Http, w: &Workload) {
    if !w.paged {
        let _ = http.get_length(&w.path, &w.headers).await;
        return;
    }
    let mut path = w.path.clone();
    for _ in 0..w.count {
        let Ok((200, body)) = http.get(&path, &w.headers).await else { return };
        match continue_token(&body, w.encoding).filter(|_| w.paged) {
            Some(t) => path = next_page(&w.path, &t),
            None => return,
        }
    }
}

/// The path of the page after `first`'s that `token` continues to.
fn next_page(first: &str, token: &str) -> String {
    let (collection, query) = first.split_once('?').unwrap_or((first, ""));
    let limit = query.split('&').find_map(|p| p.strip_prefix("limit=")).unwrap_or("500");
    format!("{collection}?limit={limit}&continue={token}")
}

/// The workloads, with selectors taken from the first object the direct target lists.
async fn workloads(args: &ListsArgs, direct: &Target) -> anyhow::Result<Vec<Workload>> {
    let c = &args.collection;
    let (status, first) = direct.http.get(&format!("{c}?limit=1"), &[]).await?;
    anyhow::ensure!(status == 200, "listing {c} on {}: status {status}", direct.name);
    let rv = first_revision(&first).context("a list revision")?;
    let first: Value = serde_json::from_slice(&first)?;
    let item = &first["items"][0];
    let json = vec![("accept", Encoding::Json.accept())];
    let gzip = vec![("accept", Encoding::Json.accept()), ("accept-encoding", "gzip")];
    let one = |name: &str, path: String, headers: Vec<(&'static str, &'static str)>, count: usize| Workload {
        name: name.into(),
        path,
        headers,
        paged: false,
        encoding: Encoding::Json,
        count,
    };
    let mut out = vec![
        one("full rv=0", format!("{c}?resourceVersion=0"), json.clone(), args.requests),
        one("full rv=0 gzip", format!("{c}?resourceVersion=0"), gzip, args.requests),
        one("full consistent", c.clone(), json.clone(), args.requests),
    ];
    let first_page = match args.rv_mode {
        RvMode::Consistent => format!("{c}?limit={}", args.page_size),
        RvMode::Exact => format!("{c}?limit={}&resourceVersion={rv}&resourceVersionMatch=Exact", args.page_size),
        RvMode::Any => format!("{c}?limit={}&resourceVersion=0", args.page_size),
    };
    for &e in &args.encodings {
        out.push(Workload {
            name: format!("pages of {} {}", args.page_size, e.name()),
            path: first_page.clone(),
            headers: vec![("accept", e.accept())],
            paged: true,
            encoding: e,
            count: args.pages,
        });
    }
    if let Some(node) = item["spec"]["nodeName"].as_str() {
        out.push(one(
            "one node's",
            format!("{c}?resourceVersion=0&fieldSelector=spec.nodeName%3D{node}"),
            json.clone(),
            args.requests * 10,
        ));
    }
    if let Some((k, v)) = item["metadata"]["labels"].as_object().and_then(|l| l.iter().next()) {
        let selector: String = form_urlencoded::byte_serialize(format!("{k}={}", v.as_str().unwrap_or("")).as_bytes()).collect();
        out.push(one("one label's", format!("{c}?resourceVersion=0&labelSelector={selector}"), json, args.requests * 10));
    }
    if !args.only.is_empty() {
        out.retain(|w| args.only.contains(&w.name));
        anyhow::ensure!(!out.is_empty(), "no cell is named like {:?}", args.only);
    }
    Ok(out)
}

/// The `--resources` entry of kache for `collection` (`/api/v1/pods`,
/// `/apis/GROUP/VERSION/[namespaces/NS/]RESOURCE`).
fn cached_resource(collection: &str) -> String {
    let path = collection.split('?').next().unwrap_or(collection);
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let resource = segments.last().copied().unwrap_or("pods");
    match segments.as_slice() {
        ["apis", group, version, ..] => format!("{group}/{version}/{resource}"),
        _ => resource.to_string(),
    }
}

/// Runs every list workload against every target and the plain server.
pub async fn run_all(args: ListsArgs) -> anyhow::Result<()> {
    let nodes = args.nodes.unwrap_or(args.pods / 100).max(1);
    let sim_args = ["--pods", &args.pods.to_string(), "--nodes", &nodes.to_string()].map(String::from);
    let resource = cached_resource(&args.collection);
    let fleet = Fleet::start(&args.targets, &sim_args, &["--resources", &resource]).await?;
    let workloads = workloads(&args, fleet.direct()).await?;
    let bar = crate::progress::bar("lists", workloads.len() * (fleet.targets.len() + 1));
    let epoch = Instant::now();
    let mut rows = Vec::new();
    for w in &workloads {
        let resp = fleet.direct().http.send(http::Method::GET, &w.path, &w.headers, None).await?;
        let headers: Vec<(String, String)> = ["content-type", "content-encoding"]
            .iter()
            .filter_map(|h| Some((h.to_string(), resp.headers().get(*h)?.to_str().ok()?.to_string())))
            .collect();
        let body = http_body_util::BodyExt::collect(resp.into_body()).await?.to_bytes();
        let (plain_url, plain_task) = plain_server(body, headers).await?;
        let plain = Target { name: "plain".into(), role: Role::Plain, http: Http::local(&plain_url, None).await?, pid: None };
        for target in fleet.targets.iter().chain([&plain]) {
            bar.set_message(format!("{} on {}", w.name, target.name));
            warm_up(&target.http, w).await;
            let usage = Usage::start(target);
            let started = Instant::now();
            let rec = drive(&target.http, w, args.concurrency, epoch).await;
            rows.push(Row::new(&w.name, target, rec, started.elapsed(), usage.finish(target)));
            bar.inc(1);
        }
        plain_task.abort();
    }
    bar.finish_and_clear();
    let params = json!({
        "collection": args.collection, "objects": if args.targets.real() { Value::Null } else { json!(args.pods) },
        "requests": args.requests, "pages": args.pages, "page_size": args.page_size,
        "concurrency": args.concurrency, "rv_mode": format!("{:?}", args.rv_mode).to_lowercase(),
    });
    Report { scenario: "lists", params, rows, sides: Vec::new() }.emit(&args.targets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kache_caches_the_listed_collection() {
        assert_eq!(cached_resource("/api/v1/pods"), "pods");
        assert_eq!(cached_resource("/apis/rbac.authorization.k8s.io/v1/clusterroles"), "rbac.authorization.k8s.io/v1/clusterroles");
        assert_eq!(cached_resource("/apis/apps/v1/namespaces/ns-0001/deployments?limit=5"), "apps/v1/deployments");
    }

    #[test]
    fn continue_tokens_are_read_from_json_protobuf_and_yaml_pages() {
        let json = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ","remainingItemCount":3},"items":[]}"#;
        assert_eq!(continue_token(json, Encoding::Json).as_deref(), Some("eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ"));
        assert_eq!(continue_token(br#"{"metadata":{"resourceVersion":"9"},"items":[]}"#, Encoding::Json), None);
        // k8s\0 + Unknown{typeMeta: 1, raw: 2 = PodList{metadata: 1 = ListMeta{resourceVersion: 2 = "9", continue: 3 = "tok"}}}
        let meta = [0x12, 1, b'9', 0x1a, 3, b't', b'o', b'k'];
        let list = [&[0x0a, meta.len() as u8][..], &meta].concat();
        let unknown = [&[0x0a, 0][..], &[0x12, list.len() as u8], &list].concat();
        let body = [&b"k8s\0"[..], &unknown].concat();
        assert_eq!(continue_token(&body, Encoding::Protobuf).as_deref(), Some("tok"));
        assert_eq!(continue_token(&body[..body.len() - 2], Encoding::Protobuf), None);
        let yaml = b"apiVersion: v1\nitems:\n- metadata:\n    name: a\nkind: PodList\nmetadata:\n  continue: eyJ2Ijoi\n  remainingItemCount: 3\n  resourceVersion: \"9\"\n";
        assert_eq!(continue_token(yaml, Encoding::Yaml).as_deref(), Some("eyJ2Ijoi"));
        assert_eq!(
            continue_token(b"apiVersion: v1\nitems: []\nkind: PodList\nmetadata:\n  resourceVersion: \"9\"\n", Encoding::Yaml),
            None
        );
    }
}
