//! `apimachinery`: the Kubernetes API's wire contract, as kube-apiserver 1.36
//! speaks it (the role `k8s.io/apimachinery` plays for Go), shared by kache
//! and by its test oracle, the simulator. No I/O, no runtime, no HTTP types:
//! functions from request parts to decisions, and from objects to bytes.
//!
//! Invariants: no I/O; every refusal is a typed error whose message is the
//! apiserver's where a client sees it; the modules depend on each other
//! without cycles, the leaves (`decode`, `resource`, `gostr`, `time`,
//! `json`) at the bottom and the encoders (`table`, `cbor`,
//! `protobuf`) at the top. Each module's doc states its own invariants first.
//!
//! - [`params`]: `ListOptions` from a query string, validated with the
//!   apiserver's 400 and 422 `Status` bodies.
//! - [`selector`]: label and field selectors, parsed and matched exactly as
//!   apimachinery does, refused with its error texts (label parser, its
//!   lexer, the `content` validation texts, field parser: one file each).
//! - [`shard`]: shard selectors (`shardSelector`, KEP-5866): parsed with the
//!   apiserver's errors, matched by the FNV-1a hash of a uid or namespace.
//! - [`continue_token`]: the apiserver's continue tokens, interchangeable
//!   with its own.
//! - [`list`]: which revision a list reads, page metadata, the list
//!   envelope of every encoding (JSON: written around shared item bytes,
//!   read without copies).
//! - [`watch`]: JSON watch frames, bookmarks, ERROR events, and a streaming
//!   frame decoder.
//! - [`decode`]: why an apiserver's list or watch frame could not be read,
//!   and a sent `resourceVersion` as a revision.
//! - [`meta`]: `ObjectMeta` and selectable fields read from raw object bytes.
//! - [`deprecation`]: the `Warning` headers of deprecated built-ins and
//!   custom resource versions.
//! - [`field_labels`]: what each kind's field selectors may name, where each
//!   label reads its value, and the apiserver's refusal of any other.
//! - [`resource`]: resource names, keys and prefixes, and the facts of
//!   built-in kinds (field labels, zero objects, discovery names).
//! - [`partial`]: metadata-only objects and lists (`PartialObjectMetadata`).
//! - [`table`]: Tables (`as=Table`) with the apiserver's printers and their
//!   column definitions (`table::columns`, one file per API group).
//! - [`cbor`]: CBOR objects, lists, watch events and errors encoded from JSON
//!   as their kind's [`cbor::Schema`] says, in the canonical order of the
//!   apiserver's deterministic encoder.
//! - [`protobuf`]: Kubernetes protobuf: objects, lists and watch frames
//!   encoded from JSON byte for byte as the apiserver writes them, and the
//!   request bodies kubectl sends.
//! - [`time`]: RFC 3339 timestamps read back to Unix time; ages as printers show them.
//! - [`json`]: JSON documents as the apiserver ends and indents them.
//! - [`negotiate`]: `Accept` negotiation, pretty-printing and gzip choices.
//! - [`auth`]: who a client is and what it asks (`RequestInfo`), reviews, 401 and 403.
//! - [`impersonation`]: the user `Impersonate-*` headers want, and the
//!   constrained and legacy modes that may allow it, check by check.
//! - [`flowcontrol`]: API Priority and Fairness's bootstrap FlowSchemas and
//!   priority levels, and the headers naming a request's classification.
//! - [`audit`]: the `Audit-ID` header and the form of a fresh ID.
//! - [`status`]: `metav1.Status` errors, field for field.
//! - [`gostr`]: strings quoted the way the apiserver's Go code quotes them.
//! - [`tls`]: the apiserver's TLS serving configuration.
//! - [`yaml`]: YAML as the apiserver writes it (`JSONToYAML`), byte for byte
//!   (go-yaml's emitter, its scalar styles, key order, YAML 1.1 typing).

pub mod audit;
pub mod auth;
pub mod cbor;
pub mod continue_token;
pub mod decode;
pub mod deprecation;
pub mod field_labels;
pub mod flowcontrol;
pub mod gostr;
pub mod impersonation;
pub mod json;
pub mod list;
pub mod meta;
pub mod negotiate;
pub mod params;
pub mod partial;
pub mod protobuf;
pub mod resource;
pub mod selector;
pub mod shard;
pub mod status;
pub mod table;
pub mod time;
pub mod tls;
pub mod watch;
pub mod yaml;
