//! The `Audit-ID` header (`audit.k8s.io/v1`'s `HeaderAuditID`): the ID of a
//! request's audit events, taken from the client's header when it sent
//! one (as is), else made fresh, and echoed on the response — as the
//! apiserver's `WithAuditInit` does.
//!
//! Guarantee: [`fresh`] is `uuid.New()`'s form: a version 4 (random) UUID
//! in lower-case hex with dashes, made on the stack (every request needs one).

/// The header's name (HTTP/2 lower-case).
pub const HEADER: &str = "audit-id";

/// A fresh audit ID from 16 random bytes.
pub fn fresh(mut b: [u8; 16]) -> Id {
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut id = [b'-'; 36];
    let mut at = 0;
    for (i, x) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            at += 1;
        }
        id[at] = HEX[usize::from(x >> 4)];
        id[at + 1] = HEX[usize::from(x & 0xf)];
        at += 2;
    }
    Id(id)
}

/// An audit ID made by [`fresh`]: 36 ASCII bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Id([u8; 36]);

impl Id {
    /// The ID as text.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("hex digits and dashes")
    }
}

impl std::fmt::Debug for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_ids_are_version_4_uuids() {
        assert_eq!(fresh([0xff; 16]).as_str(), "ffffffff-ffff-4fff-bfff-ffffffffffff");
        assert_eq!(fresh([0; 16]).as_str(), "00000000-0000-4000-8000-000000000000");
        assert_eq!(
            fresh(*b"\x01\x23\x45\x67\x89\xab\xcd\xef\x01\x23\x45\x67\x89\xab\xcd\xef").as_str(),
            "01234567-89ab-4def-8123-456789abcdef"
        );
    }
}
