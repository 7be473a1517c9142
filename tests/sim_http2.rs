//! The simulator speaks HTTP/2 without TLS (h2c, prior knowledge), as
//! clients that multiplex many watches over one connection expect.

mod common;

use common::Process;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

#[tokio::test]
async fn lists_and_watches_share_one_http2_connection() {
    let sim = Process::sim(&["--pods", "30"]);
    let client: Client<_, Empty<bytes::Bytes>> = Client::builder(TokioExecutor::new()).http2_only(true).build_http();
    let list = client.get(format!("{}/api/v1/pods?limit=10", sim.url).parse().expect("a URI")).await.expect("an HTTP/2 response");
    assert_eq!((list.version(), list.status().as_u16()), (http::Version::HTTP_2, 200));
    let body = list.into_body().collect().await.expect("a body").to_bytes();
    let v: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(v["items"].as_array().map(Vec::len), Some(10));
    let watch = client.get(format!("{}/api/v1/pods?watch=1&timeoutSeconds=1", sim.url).parse().expect("a URI")).await.expect("a watch");
    assert_eq!(watch.version(), http::Version::HTTP_2);
    let events = watch.into_body().collect().await.expect("the stream ends at its timeout").to_bytes();
    // 30 initial ADDED events, one per line.
    assert_eq!(events.split(|b| *b == b'\n').filter(|l| !l.is_empty()).count(), 30);
}
