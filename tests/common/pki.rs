//! A throw-away PKI for TLS tests: a serving CA and certificate for
//! localhost/127.0.0.1, a client CA with a client certificate, and a
//! client certificate from an unrelated CA, as PEM files in a temp dir.

use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};

/// The PEM files: `ca.crt`, `server.crt`/`server.key`, `client-ca.crt`,
/// `client.crt`/`client.key`, `rogue.crt`/`rogue.key`, and a rotated serving
/// certificate `next-server.crt`/`next-server.key` of `next-ca.crt`.
pub struct Pki {
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
    pub fn new() -> Pki {
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
        // A rotated serving certificate from another CA.
        let (next_ca, next_ca_pem) = ca("kache test next serving CA");
        let (cert, key) = leaf(&next_ca, vec!["localhost".into(), "127.0.0.1".into()], false);
        write("next-ca.crt", &next_ca_pem);
        write("next-server.crt", &cert);
        write("next-server.key", &key);
        Pki { dir }
    }

    pub fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}
