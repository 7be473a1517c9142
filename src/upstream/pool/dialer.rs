//! How a connection to the apiserver is made: TCP to `host:port`, no
//! Nagle delay (small writes such as a watch's frames go out at once),
//! reads gathered while they stream ([`super::gather`]), then TLS for the
//! server's name, offering the protocols its user speaks (ALPN).

use std::sync::Arc;
use std::time::Duration;

use http::Uri;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::{DialError, Gathered};
use crate::upstream::UpstreamError;

/// Longest a TCP connect plus TLS handshake may take.
pub(crate) const DIAL_TIMEOUT: Duration = Duration::from_secs(10);

/// Makes TLS connections to one HTTPS server.
#[derive(Clone)]
pub(crate) struct Dialer {
    /// `host:port`.
    pub authority: String,
    /// The name the certificate must carry.
    server_name: ServerName<'static>,
    tls: TlsConnector,
}

impl std::fmt::Debug for Dialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dialer").field("authority", &self.authority).finish_non_exhaustive()
    }
}

impl Dialer {
    /// Connections to the HTTPS server at `uri` under `tls`, offering `alpn`.
    pub fn new(uri: &Uri, mut tls: rustls::ClientConfig, alpn: &[&[u8]]) -> Result<Dialer, UpstreamError> {
        let host = uri.host().ok_or_else(|| UpstreamError::Config("no host in the upstream URL".into()))?;
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let server_name =
            ServerName::try_from(bare.to_string()).map_err(|e| UpstreamError::Config(format!("upstream host {host:?}: {e}")))?;
        tls.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(Dialer { authority: format!("{host}:{}", uri.port_u16().unwrap_or(443)), server_name, tls: TlsConnector::from(Arc::new(tls)) })
    }

    /// A new connection, its TLS handshake done (no deadline here: see [`DIAL_TIMEOUT`]).
    pub async fn connect(&self) -> Result<TlsStream<Gathered<TcpStream>>, DialError> {
        let authority = || self.authority.clone();
        let tcp = TcpStream::connect(&self.authority).await.map_err(|source| DialError::Connect { authority: authority(), source })?;
        let _ = tcp.set_nodelay(true);
        self.tls
            .connect(self.server_name.clone(), Gathered::new(tcp))
            .await
            .map_err(|source| DialError::Tls { authority: authority(), source })
    }
}
