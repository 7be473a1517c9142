//! The simulator on the wire, as kube-apiserver 1.36 is: HTTP/2 with the
//! apiserver's settings over TLS (with a CA the simulator writes) and h2c,
//! list bodies cut as Go's HTTP/2 response writer cuts them, idle
//! connections closed, and — on request — its slowness: lists at a byte
//! rate, consistent reads after a latency. Real hyper HTTP/2 clients count
//! what arrives: `Incoming` yields one chunk per DATA frame received.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::Process;
use common::watching::{addr, h2c};
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

type Sender = http2::SendRequest<Empty<Bytes>>;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
const METADATA: &str = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";

/// A request to `url` + `path` with an `Accept` header.
fn get(url: &str, path: &str, accept: &str) -> hyper::Request<Empty<Bytes>> {
    hyper::Request::get(format!("{url}{path}")).header("accept", accept).body(Empty::new()).expect("a request")
}

/// The response to GET `path`: its status, and its body's chunks with when each arrived (since the request was sent).
async fn chunks(sender: &mut Sender, url: &str, path: &str, accept: &str) -> (u16, Vec<(Duration, Bytes)>) {
    sender.ready().await.expect("the connection takes a request");
    let sent = Instant::now();
    let resp = sender.send_request(get(url, path, accept)).await.unwrap_or_else(|e| panic!("GET {path}: {e}"));
    let status = resp.status().as_u16();
    let mut body = resp.into_body();
    let mut got = Vec::new();
    while let Some(frame) = tokio::time::timeout(Duration::from_secs(30), body.frame()).await.expect("the body flows") {
        let frame = frame.unwrap_or_else(|e| panic!("GET {path}: the body broke: {e}"));
        // An empty DATA frame only ends the stream.
        if let Some(data) = frame.into_data().ok().filter(|d| !d.is_empty()) {
            got.push((sent.elapsed(), data));
        }
    }
    (status, got)
}

fn sizes(chunks: &[(Duration, Bytes)]) -> Vec<usize> {
    chunks.iter().map(|(_, c)| c.len()).collect()
}

/// Asserts that every chunk but the last is exactly `size` bytes.
fn assert_cut_at(what: &str, sizes: &[usize], size: usize) {
    let (last, full) = sizes.split_last().unwrap_or_else(|| panic!("{what}: an empty body"));
    assert!(full.iter().all(|s| *s == size), "{what}: chunks of {size} bytes expected, got {sizes:?}");
    assert!((1..=size).contains(last), "{what}: the last chunk is {last} bytes");
}

/// Asserts that a list of items smaller than 8 KiB came as Go's 4 KiB
/// response buffer passes it on: every chunk but the last is the full
/// buffer, or — when a flush left the rest of an item larger than the
/// buffer — that rest, written through whole (so under 8 KiB).
fn assert_gathered(what: &str, sizes: &[usize]) {
    let (last, full) = sizes.split_last().unwrap_or_else(|| panic!("{what}: an empty body"));
    assert!(full.iter().all(|s| (4096..8192).contains(s)), "{what}: chunks of 4 KiB expected, got {sizes:?}");
    assert!(full.iter().filter(|s| **s == 4096).count() * 2 > full.len(), "{what}: mostly full 4 KiB chunks expected, got {sizes:?}");
    assert!((1..8192).contains(last), "{what}: the last chunk is {last} bytes");
}

/// The stream limit a hyper HTTP/2 client on `io` sees once a GET of `path`
/// has completed (the server's SETTINGS are in by then), and that GET's body.
async fn max_send_streams<I>(io: I, url: &str, path: &str) -> (usize, Bytes)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(io)).await.expect("an HTTP/2 handshake");
    let mut conn = Box::pin(conn);
    let work = async {
        let resp = sender.send_request(get(url, path, "application/json")).await.expect("a response");
        assert_eq!((resp.version(), resp.status().as_u16()), (http::Version::HTTP_2, 200), "GET {path}");
        resp.into_body().collect().await.expect("a body").to_bytes()
    };
    // The connection is polled here, not spawned, so that it can be asked afterwards.
    let body = tokio::select! {
        body = work => body,
        end = conn.as_mut() => panic!("the connection ended: {end:?}"),
    };
    (conn.current_max_send_streams(), body)
}

#[tokio::test]
async fn https_with_a_written_ca_serves_http2_with_the_apiservers_stream_limit() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let ca_path = dir.path().join("ca.crt");
    let ca_flag = ca_path.to_str().expect("a UTF-8 path");
    let sim = Process::sim(&["--pods", "3", "--https-ca-out", ca_flag]);
    assert!(sim.url.starts_with("https://127.0.0.1:"), "{}", sim.url);
    // Written before the address line, which `Process::sim` waited for.
    let pem = std::fs::read(&ca_path).expect("the CA file is written");

    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        roots.add(cert.expect("a PEM certificate")).expect("a usable trust anchor");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = TcpStream::connect(addr(&sim.url)).await.expect("the simulator accepts");
    let server = ServerName::try_from("127.0.0.1").expect("an IP address");
    let stream =
        tokio_rustls::TlsConnector::from(Arc::new(tls)).connect(server, tcp).await.expect("the certificate verifies with the written CA");
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]), "HTTP/2 by ALPN");

    let (streams, body) = max_send_streams(stream, &sim.url, "/api/v1/pods").await;
    let list: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(3));
    assert_eq!(streams, 100, "the apiserver's SETTINGS_MAX_CONCURRENT_STREAMS");

    // kubectl trusts the same file (a token keeps it from prompting for a password).
    let ca = format!("--certificate-authority={ca_flag}");
    assert_eq!(sim.kubectl_ok(&[&ca, "--token=any", "get", "pods", "-A", "-o", "name"]).lines().count(), 3);
}

/// What the server says first on an h2c connection: its SETTINGS (by
/// identifier) and the increment of its connection WINDOW_UPDATE.
async fn server_settings(url: &str) -> (HashMap<u16, u32>, u32) {
    let mut tcp = TcpStream::connect(addr(url)).await.expect("the simulator accepts");
    // The client preface, then an empty SETTINGS frame.
    tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0").await.expect("the preface is sent");
    let (mut settings, mut window) = (None, None);
    while settings.is_none() || window.is_none() {
        let mut head = [0u8; 9];
        tokio::time::timeout(Duration::from_secs(60), tcp.read_exact(&mut head)).await.expect("frames come").expect("a frame header");
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let (kind, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        let mut payload = vec![0; len];
        tcp.read_exact(&mut payload).await.expect("a frame payload");
        match kind {
            // SETTINGS, not its ACK: six bytes per setting.
            0x4 if flags & 0x1 == 0 => {
                let pairs = payload.chunks_exact(6);
                settings = Some(pairs.map(|p| (u16::from_be_bytes([p[0], p[1]]), u32::from_be_bytes([p[2], p[3], p[4], p[5]]))).collect());
            }
            0x8 if stream == 0 => window = Some(u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & 0x7fff_ffff),
            _ => {}
        }
    }
    (settings.unwrap_or_default(), window.unwrap_or_default())
}

#[tokio::test]
async fn h2c_advertises_the_apiservers_settings_and_the_stream_limit_follows_the_flag() {
    const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    const INITIAL_WINDOW_SIZE: u16 = 0x4;
    const MAX_FRAME_SIZE: u16 = 0x5;
    const MAX_HEADER_LIST_SIZE: u16 = 0x6;
    // RFC 9113's initial connection window, which the WINDOW_UPDATE raises.
    const SPEC_WINDOW: u32 = 65_535;
    for (args, streams) in [(&[][..], 100), (&["--http2-max-streams-per-connection", "7"][..], 7)] {
        let sim = Process::sim(args);
        let (settings, window) = server_settings(&sim.url).await;
        assert_eq!(settings.get(&MAX_CONCURRENT_STREAMS), Some(&streams), "{args:?}: {settings:?}");
        assert_eq!(settings.get(&INITIAL_WINDOW_SIZE), Some(&(256 * 1024)), "MaxUploadBufferPerStream");
        assert_eq!(settings.get(&MAX_FRAME_SIZE), Some(&(256 * 1024)), "MaxReadFrameSize");
        assert_eq!(settings.get(&MAX_HEADER_LIST_SIZE), Some(&((1 << 20) + 320)), "MaxHeaderBytes, as Go pads it");
        assert_eq!(window + SPEC_WINDOW, 256 * 1024 * streams, "MaxUploadBufferPerConnection");

        let tcp = TcpStream::connect(addr(&sim.url)).await.expect("the simulator accepts");
        let (seen, _) = max_send_streams(tcp, &sim.url, "/version").await;
        assert_eq!(seen, streams as usize, "{args:?}: what a hyper client sees");
    }
}

#[tokio::test]
async fn a_list_over_http2_arrives_in_the_four_kib_writes_of_gos_response_writer_about_one_per_item() {
    let sim = Process::sim(&["--pods", "200"]);
    let (mut sender, _conn) = h2c(&sim.url).await;
    for (what, accept) in [("JSON", "application/json"), ("protobuf", PROTOBUF), ("metadata-only", METADATA)] {
        let (status, got) = chunks(&mut sender, &sim.url, "/api/v1/pods", accept).await;
        assert_eq!(status, 200, "{what}");
        let sizes = sizes(&got);
        // Items are written one by one and gathered by the 4 KiB buffer.
        assert_gathered(what, &sizes);
        if what == "JSON" {
            // Realistic pods are about 4.6 KB: a DATA frame per item, give or take.
            let total: usize = sizes.iter().sum();
            assert!((4000..6000).contains(&(total / 200)), "{total} bytes for 200 pods");
            assert!((200..300).contains(&sizes.len()), "{} DATA frames for 200 pods", sizes.len());
        }
    }
    // A Table is encoded whole: one write, which hyper's h2 cuts at the client's MAX_FRAME_SIZE (16 KiB by default).
    let (status, got) = chunks(&mut sender, &sim.url, "/api/v1/pods?includeObject=Object", TABLE).await;
    assert_eq!(status, 200);
    assert_cut_at("Table", &sizes(&got), 16 * 1024);

    // Watch events stay one chunk each, as the apiserver flushes each.
    let (status, events) =
        chunks(&mut sender, &sim.url, "/api/v1/pods?watch=1&resourceVersion=0&timeoutSeconds=1", "application/json").await;
    assert_eq!(status, 200);
    assert_eq!(events.len(), 200, "one chunk per initial event");
    for (_, event) in &events {
        assert_eq!(event.iter().filter(|b| **b == b'\n').count(), 1, "one event per chunk");
        assert_eq!(event.last(), Some(&b'\n'));
    }
}

#[tokio::test]
async fn a_paced_list_takes_its_size_over_the_rate_and_its_bytes_flow_all_along() {
    const MB_PER_SECOND: f64 = 2.0;
    let sim = Process::sim(&["--pods", "400", "--list-mb-per-second", "2"]);
    let (mut sender, _conn) = h2c(&sim.url).await;
    let bytes_per_second = MB_PER_SECOND * 1e6;

    let (status, got) = chunks(&mut sender, &sim.url, "/api/v1/pods", "application/json").await;
    assert_eq!(status, 200);
    let total: usize = sizes(&got).iter().sum();
    let least = Duration::from_secs_f64(total as f64 / bytes_per_second);
    let took = got.last().map(|(at, _)| *at).unwrap_or_default();
    assert!(took >= least, "{total} bytes in {took:?}, under {least:?}");
    let mut arrived = 0;
    let mut by_half = 0;
    for (at, chunk) in &got {
        arrived += chunk.len();
        // Never ahead of the rate, counted from the request.
        assert!(arrived as f64 <= bytes_per_second * at.as_secs_f64() + 1.0, "{arrived} bytes by {at:?}");
        if *at <= took / 2 {
            by_half = arrived;
        }
    }
    // Flowing, not a wait and a burst.
    assert!(by_half * 4 >= total, "only {by_half} of {total} bytes by half time");
    assert_gathered("a paced JSON list", &sizes(&got));

    // A streaming list's initial events are paced the same way.
    let path = "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=3";
    sender.ready().await.expect("the connection takes a request");
    let sent = Instant::now();
    let resp = sender.send_request(get(&sim.url, path, "application/json")).await.expect("a watch");
    let mut body = resp.into_body();
    let mut initial = 0;
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(10), body.frame()).await.expect("events flow");
        let data = frame.expect("the stream is open").expect("a frame").into_data().expect("data");
        initial += data.len();
        if data.windows(b"initial-events-end".len()).any(|w| w == b"initial-events-end") {
            break;
        }
    }
    let least = Duration::from_secs_f64(initial as f64 / bytes_per_second);
    assert!(sent.elapsed() >= least, "{initial} bytes of initial events in {:?}, under {least:?}", sent.elapsed());
}

/// How long GET `path` takes to answer (its headers).
async fn answer_time(sender: &mut Sender, url: &str, path: &str) -> Duration {
    sender.ready().await.expect("the connection takes a request");
    let sent = Instant::now();
    let resp = sender.send_request(get(url, path, "application/json")).await.unwrap_or_else(|e| panic!("GET {path}: {e}"));
    assert_eq!(resp.status().as_u16(), 200, "GET {path}");
    sent.elapsed()
}

#[tokio::test]
async fn a_consistent_read_waits_the_latency_and_a_read_at_a_revision_does_not() {
    const LATENCY: Duration = Duration::from_millis(200);
    let sim = Process::sim(&["--pods", "5", "--consistent-read-latency-ms", "200"]);
    let (mut sender, _conn) = h2c(&sim.url).await;
    let rv = sim.revision();
    let consistent = [
        "/api/v1/namespaces/default".to_string(),
        "/api/v1/pods?limit=2".to_string(),
        "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
            .to_string(),
    ];
    let at_a_revision = [
        "/api/v1/namespaces/default?resourceVersion=0".to_string(),
        format!("/api/v1/namespaces/default?resourceVersion={rv}"),
        "/api/v1/pods?resourceVersion=0".to_string(),
        format!("/api/v1/pods?resourceVersion={rv}"),
        format!("/api/v1/pods?watch=1&resourceVersion={rv}&timeoutSeconds=1"),
    ];
    for path in &consistent {
        let took = answer_time(&mut sender, &sim.url, path).await;
        assert!(took >= LATENCY, "{path}: answered in {took:?}");
    }
    for path in &at_a_revision {
        let took = answer_time(&mut sender, &sim.url, path).await;
        assert!(took < LATENCY, "{path}: answered in {took:?}");
    }

    // The run-time switch changes it both ways.
    let slow = |query: &str| sim.request("POST", &format!("/_sim/slow?{query}"), &[], None);
    let off = slow("consistent-read-latency-ms=0");
    assert_eq!((off.status, off.json()["consistentReadLatencyMs"].as_u64()), (200, Some(0)));
    let took = answer_time(&mut sender, &sim.url, &consistent[0]).await;
    assert!(took < LATENCY, "with no latency: {took:?}");
    assert_eq!(slow("consistent-read-latency-ms=300").status, 200);
    let took = answer_time(&mut sender, &sim.url, &consistent[0]).await;
    assert!(took >= Duration::from_millis(300), "with 300 ms: {took:?}");
    assert_eq!(slow("list-mb-per-second=-1").status, 400);
    assert_eq!(slow("consistent-read-latency-ms=soon").status, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_http2_connection_is_closed_and_an_open_watch_keeps_it_open() {
    const IDLE: Duration = Duration::from_millis(500);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let config = sim::SimConfig { http2_idle_timeout: IDLE, ..sim::SimConfig::default() };
    let sim = sim::Sim::start(config, listener).expect("the simulator starts");
    let url = sim.url();

    let (mut sender, conn) = h2c(&url).await;
    let (status, _) = chunks(&mut sender, &url, "/api/v1/namespaces", "application/json").await;
    assert_eq!(status, 200);
    let answered = Instant::now();
    let end = tokio::time::timeout(Duration::from_secs(60), conn).await.expect("the idle connection is closed");
    assert!(end.expect("the driver ends").is_ok(), "closed cleanly, by GOAWAY");
    assert!(answered.elapsed() >= IDLE - Duration::from_millis(50), "closed after {:?}", answered.elapsed());

    // A watch is an open stream: the connection stays until it ends, then idles out.
    let (mut sender, conn) = h2c(&url).await;
    let (status, _) = chunks(&mut sender, &url, "/api/v1/namespaces?watch=1&resourceVersion=0&timeoutSeconds=2", "application/json").await;
    assert_eq!(status, 200);
    let ended = Instant::now();
    assert!(!conn.is_finished(), "closed while the watch was open");
    let end = tokio::time::timeout(Duration::from_secs(60), conn).await.expect("the idle connection is closed");
    assert!(end.expect("the driver ends").is_ok(), "closed cleanly, by GOAWAY");
    assert!(ended.elapsed() >= IDLE - Duration::from_millis(50), "closed {:?} after the watch ended", ended.elapsed());
}
