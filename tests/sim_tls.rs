//! The simulator served over TLS with a CA made in the test; a bearer token
//! and client certificates are both required and checked, by kubectl.

mod common;

use std::path::Path;

use common::SimProcess;
use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};

struct Pki {
    dir: tempfile::TempDir,
}

fn ca(name: &str) -> (Issuer<'static, KeyPair>, String) {
    let key = KeyPair::generate().expect("a key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let cert = params.self_signed(&key).expect("a CA certificate");
    (Issuer::new(params, key), cert.pem())
}

fn leaf(issuer: &Issuer<'static, KeyPair>, names: Vec<String>, client: bool) -> (String, String) {
    let key = KeyPair::generate().expect("a key");
    let mut params = CertificateParams::new(names).expect("params");
    params.distinguished_name.push(DnType::CommonName, if client { "admin" } else { "kube-apiserver" });
    if client {
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    }
    let cert = params.signed_by(&key, issuer).expect("a signed certificate");
    (cert.pem(), key.serialize_pem())
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().expect("a temp dir");
        let write = |name: &str, pem: &str| std::fs::write(dir.path().join(name), pem).expect("written");
        let (server_ca, server_ca_pem) = ca("kache test serving CA");
        let (client_ca, client_ca_pem) = ca("kache test client CA");
        let (rogue_ca, _) = ca("someone else");
        let (cert, key) = leaf(&server_ca, vec!["localhost".into(), "127.0.0.1".into()], false);
        write("server.crt", &cert);
        write("server.key", &key);
        write("ca.crt", &server_ca_pem);
        write("client-ca.crt", &client_ca_pem);
        let (cert, key) = leaf(&client_ca, vec![], true);
        write("client.crt", &cert);
        write("client.key", &key);
        let (cert, key) = leaf(&rogue_ca, vec![], true);
        write("rogue.crt", &cert);
        write("rogue.key", &key);
        Pki { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

fn flag(name: &str, path: &str) -> String {
    format!("--{name}={path}")
}

#[test]
fn tls_with_token_and_client_certificates_both_checked() {
    let pki = Pki::new();
    let sim = SimProcess::start(&[
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
