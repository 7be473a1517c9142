//! kache's upstream client against the simulator served over TLS with a CA
//! made in the test: a bearer token and a client certificate each
//! authenticate, wrong credentials and unverified servers are refused, a
//! kubeconfig works, and discovery resolves resource names.

mod common;

use std::path::PathBuf;

use apimachinery::resource::Resource;
use common::pki::Pki;
use kache::upstream::UpstreamError;
use kache::upstream::client::Client;
use kache::upstream::connect::ConnectArgs;
use kache::upstream::discovery;
use sim::{AuthSettings, Sim, SimConfig, TlsSettings};
use tokio::net::TcpListener;

async fn tls_sim(pki: &Pki) -> Sim {
    let read = |name: &str| std::fs::read(pki.path(name)).expect("PEM written");
    let config = SimConfig {
        tls: Some(TlsSettings { cert_pem: read("server.crt"), key_pem: read("server.key"), client_ca_pem: Some(read("client-ca.crt")) }),
        auth: AuthSettings { token: Some("s3cret".into()), client_certificates: true },
        ..SimConfig::default()
    };
    Sim::start(config, TcpListener::bind("127.0.0.1:0").await.expect("a port")).expect("the simulator starts")
}

async fn discover(args: &ConnectArgs, specs: &[&str]) -> Result<Vec<Resource>, UpstreamError> {
    let client = Client::new(&args.resolve().await?)?;
    discovery::resolve(&client, &specs.iter().map(|s| s.to_string()).collect::<Vec<_>>()).await
}

fn info(group: &str, version: &str, resource: &str, kind: &str, namespaced: bool) -> Resource {
    Resource::new(group, version, resource, kind, namespaced)
}

#[tokio::test]
async fn token_and_client_certificate_each_authenticate_and_nothing_else_does() {
    let pki = Pki::new();
    let sim = tls_sim(&pki).await;
    let base = ConnectArgs { server: Some(sim.url()), certificate_authority: Some(pki.path("ca.crt").into()), ..ConnectArgs::default() };
    let pods = vec![info("", "v1", "pods", "Pod", true)];

    let token = ConnectArgs { token: Some("s3cret".into()), ..base.clone() };
    assert_eq!(discover(&token, &["pods"]).await.expect("the token is accepted"), pods);
    let cert = ConnectArgs {
        client_certificate: Some(pki.path("client.crt").into()),
        client_key: Some(pki.path("client.key").into()),
        ..base.clone()
    };
    assert_eq!(discover(&cert, &["pods"]).await.expect("the certificate is accepted"), pods);
    let insecure = ConnectArgs { certificate_authority: None, insecure_skip_tls_verify: true, ..token.clone() };
    assert_eq!(discover(&insecure, &["pods"]).await.expect("verification skipped"), pods);

    for args in [base.clone(), ConnectArgs { token: Some("guess".into()), ..base.clone() }] {
        match discover(&args, &["pods"]).await {
            Err(UpstreamError::Status { code: 401, message }) => assert_eq!(message, "Unauthorized"),
            other => panic!("expected 401 with {:?}, got {other:?}", args.token),
        }
    }
    let rogue = ConnectArgs {
        client_certificate: Some(pki.path("rogue.crt").into()),
        client_key: Some(pki.path("rogue.key").into()),
        ..base.clone()
    };
    // As the apiserver: the handshake requests a certificate, the authenticator refuses one of another CA.
    assert!(
        matches!(discover(&rogue, &["pods"]).await, Err(UpstreamError::Status { code: 401, .. })),
        "a certificate from another CA is refused"
    );
    let wrong_ca = ConnectArgs { certificate_authority: Some(pki.path("client-ca.crt").into()), ..token.clone() };
    match discover(&wrong_ca, &["pods"]).await {
        Err(e @ UpstreamError::Transport(_)) => assert!(e.to_string().contains("certificate"), "{e}"),
        other => panic!("an unverified server was trusted: {other:?}"),
    }
}

#[tokio::test]
async fn a_kubeconfig_context_with_inline_client_certificate_data_connects() {
    use base64::Engine;
    let pki = Pki::new();
    let sim = tls_sim(&pki).await;
    let b64 = |name: &str| base64::engine::general_purpose::STANDARD.encode(std::fs::read(pki.path(name)).expect("PEM written"));
    let kubeconfig = format!(
        r#"apiVersion: v1
kind: Config
current-context: elsewhere
clusters:
- name: sim
  cluster:
    server: {server}
    certificate-authority: {ca}
- name: nowhere
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: sim
  context: {{cluster: sim, user: admin}}
- name: elsewhere
  context: {{cluster: nowhere, user: admin}}
users:
- name: admin
  user:
    client-certificate-data: {cert}
    client-key-data: {key}
"#,
        server = sim.url(),
        ca = pki.path("ca.crt"),
        cert = b64("client.crt"),
        key = b64("client.key"),
    );
    let path: PathBuf = pki.path("kubeconfig").into();
    std::fs::write(&path, kubeconfig).expect("kubeconfig written");
    let args = ConnectArgs { kubeconfig: Some(path.clone()), context: Some("sim".into()), ..ConnectArgs::default() };
    let got = discover(&args, &["deployments.apps"]).await.expect("connected through the kubeconfig");
    assert_eq!(got, vec![info("apps", "v1", "deployments", "Deployment", true)]);

    let current = ConnectArgs { kubeconfig: Some(path), ..ConnectArgs::default() };
    assert!(matches!(discover(&current, &["pods"]).await, Err(UpstreamError::Transport(_))), "the current context points nowhere");
}

#[tokio::test]
async fn discovery_resolves_every_spelling_and_refuses_unknown_resources() {
    let custom: sim::CustomResource = "widgets.example.com/v1=Widget,cluster".parse().expect("a custom resource");
    let config = SimConfig { custom: vec![custom], ..SimConfig::default() };
    let sim = Sim::start(config, TcpListener::bind("127.0.0.1:0").await.expect("a port")).expect("the simulator starts");
    let args = ConnectArgs { server: Some(sim.url()), ..ConnectArgs::default() };
    let got = discover(
        &args,
        &["pods", "v1/pods", "apps/v1/deployments", "leases.coordination.k8s.io", "example.com/v1/widgets", "widgets.example.com"],
    )
    .await
    .expect("all resolve");
    assert_eq!(
        got,
        vec![
            info("", "v1", "pods", "Pod", true),
            info("apps", "v1", "deployments", "Deployment", true),
            info("coordination.k8s.io", "v1", "leases", "Lease", true),
            info("example.com", "v1", "widgets", "Widget", false),
        ]
    );
    let all = discover(&args, &["*"]).await.expect("every resource");
    assert!(all.len() > 15 && all.iter().all(|r| !r.plural.contains('/')), "{all:?}");
    assert!(all.contains(&info("", "v1", "configmaps", "ConfigMap", true)));

    for bad in ["gizmos", "v1/gizmos", "apps/v9/deployments", "pods.nogroup"] {
        match discover(&args, &[bad]).await {
            Err(UpstreamError::Config(e)) => assert!(e.contains(&format!("{bad:?} not found")), "{e}"),
            other => panic!("{bad}: {other:?}"),
        }
    }
    // Not a resource at all: refused without asking the apiserver.
    match discover(&args, &["a/b/c/d"]).await {
        Err(UpstreamError::Config(e)) => assert!(e.contains("\"a/b/c/d\": not a resource"), "{e}"),
        other => panic!("a/b/c/d: {other:?}"),
    }
}
