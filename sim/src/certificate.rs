//! A serving certificate made at start, for HTTPS without certificate files
//! (`--https-ca-out`): self-signed, for the loopback names, so a client that
//! trusts it as its CA (`--certificate-authority`, `--cacert`) verifies the
//! simulator on `127.0.0.1`, `::1` or `localhost`. A new key each start.

use apimachinery::tls::TlsSettings;
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};

/// The names the certificate is valid for: what a local client dials.
const LOOPBACK_NAMES: [&str; 3] = ["127.0.0.1", "::1", "localhost"];

/// The loopback certificate could not be made.
#[derive(Debug, thiserror::Error)]
#[error("making a self-signed certificate: {0}")]
pub struct CertificateError(#[source] rcgen::Error);

/// TLS settings with a fresh self-signed certificate for the loopback names
/// and no client CA. Its `cert_pem` is what clients trust.
pub fn loopback_tls() -> Result<TlsSettings, CertificateError> {
    let fail = CertificateError;
    let mut params = CertificateParams::new(LOOPBACK_NAMES.map(String::from).to_vec()).map_err(fail)?;
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, "kache sim");
    params.distinguished_name = name;
    let key = KeyPair::generate().map_err(fail)?;
    let cert = params.self_signed(&key).map_err(fail)?;
    Ok(TlsSettings { cert_pem: cert.pem().into_bytes(), key_pem: key.serialize_pem().into_bytes(), client_ca_pem: None })
}
