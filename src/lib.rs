//! kache: a Kubernetes API watch cache and list proxy.
//!
//! [`upstream`] follows the apiserver (credentials, discovery, one reflector
//! per cached resource); see `DESIGN.md` for how the parts fit.

pub mod store;
pub mod upstream;
