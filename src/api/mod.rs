//! kache's HTTP front: the listener ([`server`]), the request path as
//! stages in the apiserver's order ([`chain`]), and what answers at its
//! end — kache's memory ([`race`], [`memory`]: lists [`list`], watches
//! [`watch`], GETs [`get`]) or the apiserver ([`pass_through`]) — with
//! kache's own endpoints ([`health`], [`metrics`], [`starting`], [`probes`]).
//!
//! A request is answered from memory only when kache can answer exactly as
//! the apiserver would: a GET of a cached resource whose initial list is
//! in, negotiated ([`negotiate`]) to the objects, their metadata only
//! (`PartialObjectMetadata[List]`) or a Table where kache has the
//! resource's printer, in JSON (compact or indented), YAML (lists and
//! GETs), protobuf where kache encodes the kind, or CBOR where the
//! apiserver serves it ([`encode`]). Everything else passes through, with
//! its reason ([`source::PassThrough`]). Every refusal is the apiserver's
//! `Status`, in the encoding asked for (invariant 7).

pub mod body;
pub mod chain;
pub mod encode;
pub mod filter;
pub mod followed;
pub mod get;
pub mod health;
pub mod list;
pub mod memory;
pub mod metrics;
pub mod negotiate;
pub mod pass_through;
pub mod probes;
pub mod race;
pub mod request;
pub mod server;
pub mod shared;
pub mod source;
pub mod starting;
pub mod target;
pub mod watch;

pub use shared::{Api, ApiConfig};
