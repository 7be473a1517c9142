//! kache: a Kubernetes API watch cache and list proxy.
//!
//! [`upstream`] follows the apiserver (credentials, discovery, one reflector
//! per cached resource) into [`store`]s; [`cache`] holds them; [`api`]
//! answers reads from memory and passes everything else through, with
//! [`access`] deciding who a client is and what it may and [`audit`] recording
//! what kache answered;
//! [`state`] saves and restores the stores for warm restarts; [`budget`]
//! bounds the memory they hold; [`serve`] wires it together. See
//! `ARCHITECTURE.md` for how the parts fit.

pub mod access;
pub mod api;
pub mod audit;
pub mod budget;
pub mod cache;
pub mod config;
pub mod flowcontrol;
pub mod logs;
pub mod serve;
pub(crate) mod serving_cert;
pub mod state;
pub mod store;
pub mod upstream;
