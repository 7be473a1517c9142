//! Reading what an apiserver sent: why a JSON list page, a watch frame or
//! an event's object could not be read ([`DecodeError`]), and a sent
//! `resourceVersion` read as the revision etcd made it ([`parse_revision`]).
//!
//! Invariants: a sent `resourceVersion` is a revision only when it is a
//! decimal `u64` (no empty or `0` default, unlike a request's, see
//! [`crate::params::parse_resource_version`]); reading never panics.

/// Why an apiserver's answer could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// A list body that is not a JSON list with `metadata.resourceVersion`.
    #[error("a bad list: {0}")]
    List(#[source] serde_json::Error),
    /// A watch frame that is not a JSON `{"type":…,"object":…}`.
    #[error("a bad watch frame: {0}")]
    Frame(#[source] serde_json::Error),
    /// A watch event whose type is none of the API's.
    #[error("a watch event of unknown type {0:?}")]
    EventType(String),
    /// A watch frame still without its newline after the decoder's bound, in bytes.
    #[error("a watch frame over {0} bytes")]
    FrameTooLarge(usize),
    /// A watch event's object without a `metadata.resourceVersion` string.
    #[error("a bad bookmark: {0}")]
    Bookmark(#[source] serde_json::Error),
    /// A `resourceVersion` that is not a revision.
    #[error("a resourceVersion that is not a revision: {0:?}")]
    Revision(String),
}

/// A `resourceVersion` a server sent, as the revision etcd made it.
pub fn parse_revision(rv: &str) -> Result<u64, DecodeError> {
    rv.parse().map_err(|_| DecodeError::Revision(rv.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sent_resource_version_is_a_revision_only_when_decimal() {
        assert_eq!(parse_revision("42").unwrap(), 42);
        for bad in ["", "-1", "x", "1.0"] {
            let e = parse_revision(bad).unwrap_err();
            assert_eq!(e.to_string(), format!("a resourceVersion that is not a revision: {bad:?}"));
        }
    }
}
