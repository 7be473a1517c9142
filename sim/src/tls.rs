//! TLS and authentication, as a kube-apiserver does them: a serving
//! certificate, and (when configured) every request must present either the
//! bearer token or a client certificate signed by the client CA.

use std::sync::Arc;

use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;

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

/// Who may call the API.
#[derive(Debug, Clone, Default)]
pub struct AuthSettings {
    /// A bearer token that authenticates a request.
    pub token: Option<String>,
    /// Whether a verified client certificate authenticates a request.
    pub client_certificates: bool,
}

impl AuthSettings {
    /// Whether requests must authenticate at all.
    pub fn required(&self) -> bool {
        self.token.is_some() || self.client_certificates
    }

    /// Whether a request with this `Authorization` header, on a connection
    /// that did (or did not) present a verified client certificate, is authenticated.
    pub fn allows(&self, authorization: Option<&str>, verified_client_cert: bool) -> bool {
        if !self.required() || (self.client_certificates && verified_client_cert) {
            return true;
        }
        match (&self.token, authorization.and_then(|a| a.strip_prefix("Bearer "))) {
            (Some(want), Some(got)) => constant_time_eq(want.as_bytes(), got.trim().as_bytes()),
            _ => false,
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The rustls server configuration: HTTP/2 and HTTP/1.1 by ALPN; client
/// certificates verified against the client CA but optional (a token may
/// authenticate instead).
pub fn server_config(s: &TlsSettings) -> Result<Arc<rustls::ServerConfig>, String> {
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(&s.cert_pem).collect::<Result<_, _>>().map_err(|e| format!("TLS certificate: {e}"))?;
    if certs.is_empty() {
        return Err("TLS certificate: no certificate in the PEM file".into());
    }
    let key = PrivateKeyDer::from_pem_slice(&s.key_pem).map_err(|e| format!("TLS key: {e}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder =
        rustls::ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions().map_err(|e| e.to_string())?;
    let builder = match &s.client_ca_pem {
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
    let mut config = builder.with_single_cert(certs, key).map_err(|e| format!("TLS certificate and key: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_or_a_verified_certificate_authenticates() {
        let open = AuthSettings::default();
        assert!(open.allows(None, false));
        let token = AuthSettings { token: Some("s3cret".into()), client_certificates: false };
        assert!(token.allows(Some("Bearer s3cret"), false));
        assert!(!token.allows(Some("Bearer wrong"), false));
        assert!(!token.allows(None, true), "a certificate counts only when client certificates are configured");
        let both = AuthSettings { token: Some("s3cret".into()), client_certificates: true };
        assert!(both.allows(None, true));
        assert!(!both.allows(Some("Basic abc"), false));
    }
}
