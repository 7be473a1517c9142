//! Who may call the simulated API: a bearer token and/or a client
//! certificate verified against the client CA (checked by the TLS layer);
//! anything else gets 401, as an apiserver with those authenticators does.

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
