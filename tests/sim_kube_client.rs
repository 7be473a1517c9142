//! The `kube` crate, a real Rust client, lists and watches the simulator.

mod common;

use common::Process;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, ListParams, PostParams, VersionMatch, WatchEvent, WatchParams};
use kube::{Client, Config};

fn client(sim: &Process) -> Client {
    Client::try_from(Config::new(sim.url.parse().expect("a URL"))).expect("a client")
}

#[tokio::test]
async fn kube_client_pages_through_every_pod_at_one_revision() {
    let sim = Process::sim(&["--pods", "1234", "--churn", "200"]);
    let pods: Api<Pod> = Api::all(client(&sim));
    let mut params = ListParams::default().limit(100);
    let first = pods.list(&params).await.expect("a first page");
    let rv = first.metadata.resource_version.clone().expect("a revision");
    let mut names: Vec<String> = first.items.iter().filter_map(|p| p.metadata.name.clone()).collect();
    let mut token = first.metadata.continue_;
    while let Some(t) = token.filter(|t| !t.is_empty()) {
        params = params.continue_token(&t);
        let page = pods.list(&params).await.expect("a page");
        assert_eq!(page.metadata.resource_version.as_deref(), Some(rv.as_str()), "pages must share one revision");
        names.extend(page.items.iter().filter_map(|p| p.metadata.name.clone()));
        token = page.metadata.continue_;
    }
    let exact = pods.list(&ListParams::default().at(&rv).matching(VersionMatch::Exact)).await.expect("an exact list");
    let exact_names: Vec<String> = exact.items.iter().filter_map(|p| p.metadata.name.clone()).collect();
    assert_eq!(names, exact_names);
    assert!(names.len() > 1000);
    let on_node = pods.list(&ListParams::default().fields("spec.nodeName=node-0007")).await.expect("a field-selected list");
    assert!(!on_node.items.is_empty());
    assert!(on_node.items.iter().all(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some("node-0007")));
}

#[tokio::test]
async fn kube_client_watches_changes_and_sees_expiry() {
    let sim = Process::sim(&["--compact-interval", "0"]);
    let cms: Api<ConfigMap> = Api::namespaced(client(&sim), "default");
    let start = cms.list(&ListParams::default()).await.expect("a list").metadata.resource_version.expect("a revision");
    let mut stream = cms.watch(&WatchParams::default().timeout(10), &start).await.expect("a watch").boxed();
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("from-kube".into());
    let created = cms.create(&PostParams::default(), &cm).await.expect("created");
    match stream.try_next().await.expect("a watch event") {
        Some(WatchEvent::Added(got)) => assert_eq!(got.metadata.resource_version, created.metadata.resource_version),
        other => panic!("expected ADDED, got {other:?}"),
    }

    assert_eq!(sim.request("POST", "/_sim/compact", &[], None).status, 200);
    let mut old = cms.watch(&WatchParams::default(), "1").await.expect("a watch").boxed();
    match old.next().await {
        Some(Ok(WatchEvent::Error(e))) => assert_eq!((e.code, e.reason.as_str()), (410, "Expired")),
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
}
