//! The simulator served over TLS with a CA made in the test; a bearer token
//! and client certificates are both required and checked, by kubectl.

mod common;

use std::path::Path;

use common::Process;
use common::pki::Pki;

fn flag(name: &str, path: &str) -> String {
    format!("--{name}={path}")
}

#[test]
fn tls_with_token_and_client_certificates_both_checked() {
    let pki = Pki::new();
    let sim = Process::sim(&[
        "--pods",
        "7",
        "--tls-cert",
        &pki.path("server.crt"),
        "--tls-key",
        &pki.path("server.key"),
        "--client-ca",
        &pki.path("client-ca.crt"),
        "--token",
        "s3cret-token",
    ]);
    assert!(sim.url.starts_with("https://127.0.0.1:"), "{}", sim.url);
    let ca = flag("certificate-authority", &pki.path("ca.crt"));
    let count = |out: &str| out.lines().count();

    let with_token = sim.kubectl_ok(&[&ca, "--token=s3cret-token", "get", "pods", "-A", "-o", "name"]);
    assert_eq!(count(&with_token), 7);
    let with_cert = sim.kubectl_ok(&[
        &ca,
        &flag("client-certificate", &pki.path("client.crt")),
        &flag("client-key", &pki.path("client.key")),
        "get",
        "pods",
        "-A",
        "-o",
        "name",
    ]);
    assert_eq!(count(&with_cert), 7);

    for (what, args) in [
        // With no credentials at all kubectl prompts for a password; basic auth is refused like none.
        ("basic credentials", vec![ca.clone(), "--username=admin".into(), "--password=admin".into()]),
        ("a wrong token", vec![ca.clone(), "--token=guess".into()]),
        (
            "a certificate from another CA",
            vec![ca.clone(), flag("client-certificate", &pki.path("rogue.crt")), flag("client-key", &pki.path("rogue.key"))],
        ),
        ("an unverified server", vec!["--token=s3cret-token".into(), flag("certificate-authority", &pki.path("client-ca.crt"))]),
    ] {
        let mut full: Vec<&str> = args.iter().map(String::as_str).collect();
        full.extend(["get", "pods", "-A"]);
        let out = sim.kubectl(&full);
        assert!(!out.status.success(), "{what} was let in");
        let err = String::from_utf8_lossy(&out.stderr);
        if what.contains("token") || what.contains("basic") {
            assert!(err.contains("Unauthorized"), "{what}: {err}");
        }
    }
    assert!(Path::new(&pki.path("ca.crt")).exists());
}
