//! Where the apiserver is and who kache is to it: an explicit `--server`
//! with a token or client certificate, a kubeconfig (path, current or named
//! context), or the in-cluster service account. Kubeconfig parsing and the
//! in-cluster environment are the `kube` crate's; kache turns the result into
//! [`Credentials`] it can connect with.

use std::path::PathBuf;

use base64::Engine;
use http::Uri;
use kube::config::{AuthInfo, Config, KubeConfigOptions, Kubeconfig};
use rustls::pki_types::CertificateDer;
use secrecy::ExposeSecret;

use super::UpstreamError;
use super::bearer::Bearer;
use super::tls::{Identity, TlsMaterial, certificates};

/// Command-line flags that choose the apiserver and the credentials.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConnectArgs {
    /// The apiserver URL; with it, the credentials come from the flags below
    /// only. Without it: --kubeconfig, then the in-cluster service account,
    /// then ~/.kube/config.
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// Kubeconfig file.
    #[arg(long, env = "KUBECONFIG", value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to use instead of the current one.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Bearer token (with --server).
    #[arg(long, value_name = "TOKEN", hide_env_values = true, env = "KACHE_UPSTREAM_TOKEN")]
    pub token: Option<String>,
    /// File holding a bearer token, re-read as it rotates (with --server).
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// Client certificate (PEM, with --server).
    #[arg(long, value_name = "PATH", requires = "client_key")]
    pub client_certificate: Option<PathBuf>,
    /// Client key (PEM, with --server).
    #[arg(long, value_name = "PATH", requires = "client_certificate")]
    pub client_key: Option<PathBuf>,
    /// CA bundle (PEM) the apiserver's certificate must chain to (default: the system roots).
    #[arg(long, value_name = "PATH")]
    pub certificate_authority: Option<PathBuf>,
    /// Do not verify the apiserver's certificate. Insecure.
    #[arg(long)]
    pub insecure_skip_tls_verify: bool,
}

/// Everything needed to open connections to the apiserver.
#[derive(Debug, Clone)]
pub struct Credentials {
    /// The apiserver's base URL (it may carry a path prefix).
    pub server: Uri,
    /// TLS roots, identity and verification switch.
    pub tls: TlsMaterial,
    /// The `Authorization` kache sends.
    pub bearer: Bearer,
}

impl ConnectArgs {
    /// Resolves the flags, environment and kubeconfig into credentials.
    pub async fn resolve(&self) -> Result<Credentials, UpstreamError> {
        if let Some(server) = &self.server {
            return self.explicit(server);
        }
        let options = KubeConfigOptions { context: self.context.clone(), ..Default::default() };
        let config = if let Some(path) = &self.kubeconfig {
            let kc = Kubeconfig::read_from(path).map_err(|e| UpstreamError::Config(format!("kubeconfig {}: {e}", path.display())))?;
            Config::from_custom_kubeconfig(kc, &options).await.map_err(|e| UpstreamError::Config(format!("kubeconfig: {e}")))?
        } else if let Ok(config) = Config::incluster() {
            config
        } else {
            Config::from_kubeconfig(&options).await.map_err(|e| UpstreamError::Config(format!("no apiserver given and {e}")))?
        };
        from_kube_config(config)
    }

    fn explicit(&self, server: &str) -> Result<Credentials, UpstreamError> {
        let server = server_url(server).map_err(|e| UpstreamError::Config(format!("--server {server:?}: {e}")))?;
        let read = |p: &PathBuf| std::fs::read(p).map_err(|e| UpstreamError::Config(format!("{}: {e}", p.display())));
        let identity = match (&self.client_certificate, &self.client_key) {
            (Some(c), Some(k)) => Some(Identity { cert_pem: read(c)?, key_pem: read(k)? }),
            _ => None,
        };
        let ca = self.certificate_authority.as_ref().map(|p| read(p).and_then(|pem| certificates(&pem))).transpose()?;
        let bearer = match (&self.token, &self.token_file) {
            (Some(t), _) => Bearer::token(t)?,
            (None, Some(path)) => Bearer::token_file(path.clone())?,
            (None, None) => Bearer::None,
        };
        Ok(Credentials { server, tls: TlsMaterial { ca, identity, insecure: self.insecure_skip_tls_verify }, bearer })
    }
}

fn from_kube_config(config: Config) -> Result<Credentials, UpstreamError> {
    let user = &config.auth_info;
    if user.exec.is_some() || user.auth_provider.is_some() {
        return Err(UpstreamError::Config(
            "the kubeconfig user authenticates with an exec plugin or auth provider, which kache does not run; use a token or client certificate".into(),
        ));
    }
    let ca = match (&config.root_cert_file, &config.root_cert) {
        (Some(path), _) => {
            Some(certificates(&std::fs::read(path).map_err(|e| UpstreamError::Config(format!("{}: {e}", path.display())))?)?)
        }
        (None, Some(ders)) => Some(ders.iter().map(|der| CertificateDer::from(der.clone())).collect()),
        (None, None) => None,
    };
    let bearer = match (&user.token, &user.token_file) {
        (Some(t), _) => Bearer::token(t.expose_secret())?,
        (None, Some(path)) => Bearer::token_file(path.into())?,
        (None, None) => Bearer::None,
    };
    let tls = TlsMaterial { ca, identity: identity(user)?, insecure: config.accept_invalid_certs };
    let server = server_url(&config.cluster_url.to_string())
        .map_err(|e| UpstreamError::Config(format!("the kubeconfig's server {}: {e}", config.cluster_url)))?;
    Ok(Credentials { server, tls, bearer })
}

/// Why a server URL is not one kache can connect to.
#[derive(Debug, thiserror::Error)]
enum BadUrl {
    #[error("not a URL: {0}")]
    Parse(#[from] http::uri::InvalidUri),
    #[error("scheme {0} is not http or https")]
    Scheme(String),
    #[error("not a URL (want https://HOST[:PORT])")]
    NoScheme,
    #[error("no host")]
    NoHost,
}

/// An apiserver URL kache can connect to: `http` or `https`, with a host.
fn server_url(url: &str) -> Result<Uri, BadUrl> {
    let uri: Uri = url.parse()?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(other) => return Err(BadUrl::Scheme(other.to_string())),
        None => return Err(BadUrl::NoScheme),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(BadUrl::NoHost);
    }
    Ok(uri)
}

/// The client certificate and key of a kubeconfig user, from inline data or files.
fn identity(user: &AuthInfo) -> Result<Option<Identity>, UpstreamError> {
    let load = |data: Option<&str>, file: Option<&String>, what: &str| -> Result<Option<Vec<u8>>, UpstreamError> {
        match (data, file) {
            (Some(b64), _) => base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .map(Some)
                .map_err(|e| UpstreamError::Config(format!("kubeconfig {what} data: {e}"))),
            (None, Some(path)) => std::fs::read(path).map(Some).map_err(|e| UpstreamError::Config(format!("{path}: {e}"))),
            (None, None) => Ok(None),
        }
    };
    let cert = load(user.client_certificate_data.as_deref(), user.client_certificate.as_ref(), "client-certificate")?;
    let key = load(user.client_key_data.as_ref().map(|k| k.expose_secret()), user.client_key.as_ref(), "client-key")?;
    match (cert, key) {
        (Some(cert_pem), Some(key_pem)) => Ok(Some(Identity { cert_pem, key_pem })),
        (None, None) => Ok(None),
        _ => {
            Err(UpstreamError::Config("the kubeconfig user has a client certificate without a key, or a key without a certificate".into()))
        }
    }
}
