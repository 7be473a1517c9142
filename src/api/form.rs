//! What an answer holds — the objects, or their metadata only ([`Form`]) —
//! and, for a watch, in which encoding its frames are ([`Wire`]): the
//! vocabulary the JSON ([`super::document`]) and protobuf ([`super::proto`])
//! writers and the watch dispatcher share.

/// What an answer holds: the objects, or their metadata only (in the
/// form for one object — also a watch's events — or the form for a list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    Objects,
    Metadata,
    MetadataList,
}

/// What a watch stream's frames hold, and in which encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wire {
    pub form: Form,
    pub protobuf: bool,
}

impl Wire {
    /// An index for per-wire caches, below [`Wire::COUNT`].
    pub fn index(self) -> usize {
        2 * usize::from(self.form != Form::Objects) + usize::from(self.protobuf)
    }

    pub const COUNT: usize = 4;
}
