//! TLS serving as a kube-apiserver does it: a certificate chain and key,
//! HTTP/2 and HTTP/1.1 offered by ALPN, and (when a client CA is configured)
//! client certificates requested but optional, because a bearer token may
//! authenticate the request instead, and verified against that CA by the
//! authenticator after the handshake ([`ClientCertificates`]).
//!
//! Invariants: a configuration is built only from a chain and key that
//! rustls accepts together, with the ring provider's safe defaults; a
//! refused certificate, key or CA is a [`TlsError`] naming which one.

use std::sync::Arc;

use rustls::RootCertStore;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::UnixTime;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

/// Why TLS cannot be served from the material given.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The serving certificate chain's PEM does not read.
    #[error("TLS certificate: {0}")]
    CertificatePem(#[source] rustls::pki_types::pem::Error),
    /// The serving certificate PEM holds no certificate.
    #[error("TLS certificate: no certificate in the PEM file")]
    NoCertificate,
    /// The serving key's PEM does not read.
    #[error("TLS key: {0}")]
    KeyPem(#[source] rustls::pki_types::pem::Error),
    /// The chain and key do not serve together (an unsupported key, or a
    /// key that is not the certificate's).
    #[error("TLS certificate and key: {0}")]
    CertifiedKey(#[source] rustls::Error),
    /// The client CA bundle's PEM does not read.
    #[error("client CA: {0}")]
    ClientCaPem(#[source] rustls::pki_types::pem::Error),
    /// A client CA certificate rustls refuses as a trust anchor.
    #[error("client CA: {0}")]
    ClientCa(#[source] rustls::Error),
    /// No client certificate verifier from the client CA (e.g. no CA in it).
    #[error("client CA: {0}")]
    ClientVerifier(#[source] rustls::server::VerifierBuilderError),
    /// The crypto provider offers no safe protocol version.
    #[error("{0}")]
    Protocol(#[source] rustls::Error),
}

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
/// certificates requested when a client CA is configured, to be verified
/// by the authenticator with the returned [`ClientCertificates`].
pub fn server_config(s: &TlsSettings) -> Result<(Arc<rustls::ServerConfig>, Option<Arc<ClientCertificates>>), TlsError> {
    let key = certified_key(&s.cert_pem, &s.key_pem)?;
    let clients = s.client_ca_pem.as_deref().map(ClientCertificates::from_pem).transpose()?;
    Ok((server_config_with(Arc::new(Fixed(key)), clients.clone())?, clients))
}

/// [`server_config`] with the serving certificate chosen by `certificate`
/// at each handshake (e.g. one that reloads its files as they change).
pub fn server_config_with(
    certificate: Arc<dyn ResolvesServerCert>,
    clients: Option<Arc<ClientCertificates>>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder =
        rustls::ServerConfig::builder_with_provider(provider).with_safe_default_protocol_versions().map_err(TlsError::Protocol)?;
    let builder = match clients {
        Some(clients) => builder.with_client_cert_verifier(clients),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_cert_resolver(certificate);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Client certificates as the apiserver takes them: requested at the
/// handshake, which proves the client holds the certificate's key, and
/// verified against the client CA afterwards by the authenticator
/// ([`ClientCertificates::verify`]) — so a certificate of another CA is a
/// 401 (or a token may still authenticate the request), never a failed
/// handshake.
#[derive(Debug)]
pub struct ClientCertificates {
    ca: Arc<dyn ClientCertVerifier>,
}

impl ClientCertificates {
    /// The client CA bundle (PEM).
    pub fn from_pem(pem: &[u8]) -> Result<Arc<ClientCertificates>, TlsError> {
        let mut roots = RootCertStore::empty();
        for c in CertificateDer::pem_slice_iter(pem) {
            roots.add(c.map_err(TlsError::ClientCaPem)?).map_err(TlsError::ClientCa)?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let ca = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider).build().map_err(TlsError::ClientVerifier)?;
        Ok(Arc::new(ClientCertificates { ca }))
    }

    /// Whether a presented chain (end entity first) chains to the client CA, for client authentication.
    pub fn verify(&self, chain: &[CertificateDer<'_>]) -> bool {
        let Some((end_entity, intermediates)) = chain.split_first() else { return false };
        self.ca.verify_client_cert(end_entity, intermediates, UnixTime::now()).is_ok()
    }
}

impl ClientCertVerifier for ClientCertificates {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.ca.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        // Verified by the authenticator, after the handshake.
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.ca.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.ca.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.ca.supported_verify_schemes()
    }
}

/// The certificates of a PEM bundle (a chain, or CAs); at least one.
pub fn certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(pem).collect::<Result<_, _>>().map_err(TlsError::CertificatePem)?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate);
    }
    Ok(certs)
}

/// The private key of a PEM file.
pub fn private_key(pem: &[u8]) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_slice(pem).map_err(TlsError::KeyPem)
}

/// A serving certificate chain and key (PEM), checked and ready to serve.
pub fn certified_key(cert_pem: &[u8], key_pem: &[u8]) -> Result<Arc<CertifiedKey>, TlsError> {
    let certs = certificates(cert_pem)?;
    let key = private_key(key_pem)?;
    let provider = rustls::crypto::ring::default_provider();
    let key = CertifiedKey::from_der(certs, key, &provider).map_err(TlsError::CertifiedKey)?;
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
