//! The rustls client configuration for the apiserver connection: which
//! roots the serving certificate must chain to (the configured CA bundle,
//! else the system's), an optional client certificate, and the explicit
//! opt-out of verification (`insecure-skip-tls-verify`). No OpenSSL. PEM
//! is read as the serving side reads it (`apimachinery::tls`), in this
//! side's words.

use std::sync::Arc;

use apimachinery::tls::TlsError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::UpstreamError;

/// PEM material and switches for the TLS client.
#[derive(Debug, Default, Clone)]
pub struct TlsMaterial {
    /// CA certificates for the apiserver's certificate; `None`: the system roots.
    pub ca: Option<Vec<CertificateDer<'static>>>,
    /// The client certificate to present, if any.
    pub identity: Option<Identity>,
    /// Skip verification of the apiserver's certificate.
    pub insecure: bool,
}

/// A client certificate chain and its key, both PEM.
#[derive(Clone)]
pub struct Identity {
    /// The certificate chain.
    pub cert_pem: Vec<u8>,
    /// The private key.
    pub key_pem: Vec<u8>,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity").field("cert_pem", &String::from_utf8_lossy(&self.cert_pem)).finish_non_exhaustive()
    }
}

/// Builds the client configuration (the connector sets ALPN: HTTP/2, then HTTP/1.1).
pub(crate) fn client_config(m: &TlsMaterial) -> Result<ClientConfig, UpstreamError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions().map_err(tls_error)?;
    let builder = if m.insecure {
        builder.dangerous().with_custom_certificate_verifier(Arc::new(NoVerification(provider)))
    } else {
        builder.with_root_certificates(roots(m.ca.as_deref())?)
    };
    let config = match &m.identity {
        Some(id) => {
            let chain = certificates(&id.cert_pem)?;
            let key = apimachinery::tls::private_key(&id.key_pem).map_err(|e| match e {
                TlsError::KeyPem(e) => UpstreamError::Config(format!("client key: {e}")),
                e => UpstreamError::Config(e.to_string()),
            })?;
            builder.with_client_auth_cert(chain, key).map_err(tls_error)?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(config)
}

fn tls_error(e: rustls::Error) -> UpstreamError {
    UpstreamError::Config(format!("TLS: {e}"))
}

/// The certificates of a PEM bundle; at least one.
pub fn certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, UpstreamError> {
    apimachinery::tls::certificates(pem).map_err(|e| match e {
        TlsError::CertificatePem(e) => UpstreamError::Config(format!("certificate: {e}")),
        TlsError::NoCertificate => UpstreamError::Config("no certificate in the PEM data".into()),
        e => UpstreamError::Config(e.to_string()),
    })
}

fn roots(ca: Option<&[CertificateDer<'static>]>) -> Result<RootCertStore, UpstreamError> {
    let mut roots = RootCertStore::empty();
    match ca {
        Some(certs) => {
            for cert in certs {
                roots.add(cert.clone()).map_err(|e| UpstreamError::Config(format!("CA certificate: {e}")))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
        }
    }
    Ok(roots)
}

/// Accepts any server certificate (the signatures are still checked so the
/// handshake is well-formed). Only with `insecure-skip-tls-verify`.
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
