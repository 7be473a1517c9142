//! What an answer holds — the objects, or their metadata only ([`Form`]) —
//! and, for a watch, in which encoding its frames are ([`Wire`]): the
//! vocabulary the JSON ([`super::document`]), protobuf ([`super::proto`])
//! and CBOR ([`super::cbor`]) writers and the watch dispatcher share.

use apimachinery::negotiate::Format;

/// What an answer holds: the objects, or their metadata only (in the
/// form for one object — also a watch's events — or the form for a list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    Objects,
    Metadata,
    MetadataList,
}

/// How an answer is encoded: JSON (YAML is written from it), protobuf or CBOR.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Encoding {
    #[default]
    Json,
    Protobuf,
    Cbor,
}

impl Encoding {
    /// The encoding a negotiated format is written in.
    pub fn of(format: Format) -> Encoding {
        match format {
            Format::Json | Format::Yaml => Encoding::Json,
            Format::Protobuf => Encoding::Protobuf,
            Format::Cbor => Encoding::Cbor,
        }
    }
}

/// What a watch stream's frames hold, and in which encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wire {
    pub form: Form,
    pub encoding: Encoding,
}

impl Wire {
    /// An index for per-wire caches, below [`Wire::COUNT`].
    pub fn index(self) -> usize {
        3 * usize::from(self.form != Form::Objects) + self.encoding as usize
    }

    pub const COUNT: usize = 6;
}
