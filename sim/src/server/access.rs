//! The client certificate the TLS layer verified, and whom it names; who
//! the request is from it (or its token) is `crate::policy::identify`.

use apimachinery::auth::UserInfo;

/// A client certificate the TLS layer saw, and the user it names.
#[derive(Debug, Clone)]
pub struct ClientCert {
    /// It chains to the client CA.
    pub verified: bool,
    /// The user it names, when verified and it has a common name.
    pub user: Option<UserInfo>,
}
