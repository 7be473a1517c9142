//! TLS serving as a kube-apiserver does it: a certificate chain and key,
//! HTTP/2 and HTTP/1.1 offered by ALPN, and (when a client CA is configured)
//! client certificates verified against that CA but optional, because a
//! bearer token may authenticate the request instead.

use std::sync::Arc;

use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;

/// PEM material for serving TLS.
#[derive(Debug, Clone)]
pub struct TlsSettings {
    /// The serving certificate chain (PEM).
    pub cert_pem: Vec<u8>,
    /// The serving key (PEM).
    pub key_pem: Vec<u8>,
    /// CA bundle (PEM) that client certificates must chain to; `None`: no client certificates.
    pub client_ca_pem: Option<Vec<u8>>,
}

/// The rustls server configuration: HTTP/2 and HTTP/1.1 by ALPN; client
/// certificates verified against the client CA but optional (a token may
/// authenticate instead).
pub fn server_config(s: &TlsSettings) -> Result<Arc<rustls::ServerConfig>, String> {
    let key = certified_key(&s.cert_pem, &s.key_pem)?;
    server_config_with(Arc::new(Fixed(key)), s.client_ca_pem.as_deref())
}

/// [`server_config`] with the serving certificate chosen by `certificate`
/// at each handshake (e.g. one that reloads its files as they change).
pub fn server_config_with(
    certificate: Arc<dyn ResolvesServerCert>,
    client_ca_pem: Option<&[u8]>,
) -> Result<Arc<rustls::ServerConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder =
        rustls::ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions().map_err(|e| e.to_string())?;
    let builder = match client_ca_pem {
        Some(pem) => {
            let mut roots = RootCertStore::empty();
            for c in CertificateDer::pem_slice_iter(pem) {
                roots.add(c.map_err(|e| format!("client CA: {e}"))?).map_err(|e| format!("client CA: {e}"))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .map_err(|e| format!("client CA: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_cert_resolver(certificate);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A serving certificate chain and key (PEM), checked and ready to serve.
pub fn certified_key(cert_pem: &[u8], key_pem: &[u8]) -> Result<Arc<CertifiedKey>, String> {
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(cert_pem).collect::<Result<_, _>>().map_err(|e| format!("TLS certificate: {e}"))?;
    if certs.is_empty() {
        return Err("TLS certificate: no certificate in the PEM file".into());
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| format!("TLS key: {e}"))?;
    let provider = rustls::crypto::ring::default_provider();
    let key = CertifiedKey::from_der(certs, key, &provider).map_err(|e| format!("TLS certificate and key: {e}"))?;
    Ok(Arc::new(key))
}

/// One certificate for every handshake.
#[derive(Debug)]
struct Fixed(Arc<CertifiedKey>);

impl ResolvesServerCert for Fixed {
    fn resolve(&self, _: rustls::server::ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}
