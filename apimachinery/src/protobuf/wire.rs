//! The protobuf wire format as Go's gogo-generated marshallers write it:
//! varints, keys, and length-delimited fields.
//!
//! Guarantees: integers are written as Go writes them (`uint64(v)`, so a
//! negative `int32` takes ten bytes); nothing here allocates beyond the
//! output buffer.

/// Wire type of varint fields.
pub const VARINT: u8 = 0;
/// Wire type of 64-bit fields (`double`).
pub const FIXED64: u8 = 1;
/// Wire type of length-delimited fields (strings, bytes, messages).
pub const LEN: u8 = 2;

/// Appends `v` as a varint.
pub fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends the key of field `tag` with wire type `wire`.
pub fn key(out: &mut Vec<u8>, tag: u32, wire: u8) {
    varint(out, (u64::from(tag) << 3) | u64::from(wire));
}

/// Appends field `tag` holding `bytes` (a string, bytes or an encoded message).
pub fn len_field(out: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    key(out, tag, LEN);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Appends varint field `tag`.
pub fn varint_field(out: &mut Vec<u8>, tag: u32, v: u64) {
    key(out, tag, VARINT);
    varint(out, v);
}

/// Reads a varint at `*at`, advancing it; `None` when truncated.
pub fn read_varint(buf: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

/// The first length-delimited field `tag` of a message, if the message
/// starts with it (as every top-level kind starts with `metadata = 1`).
pub fn leading_field(msg: &[u8], tag: u32) -> Option<&[u8]> {
    let mut at = 0;
    let k = read_varint(msg, &mut at)?;
    if k != (u64::from(tag) << 3) | u64::from(LEN) {
        return None;
    }
    let len = usize::try_from(read_varint(msg, &mut at)?).ok()?;
    msg.get(at..at.checked_add(len)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_are_written_as_go_writes_them() {
        let mut out = Vec::new();
        varint(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
        out.clear();
        varint(&mut out, -1i64 as u64);
        assert_eq!(out.len(), 10, "a negative int32 takes ten bytes");
        let mut at = 0;
        assert_eq!(read_varint(&out, &mut at), Some(u64::MAX));
    }

    #[test]
    fn the_leading_field_is_found_or_not() {
        let mut msg = Vec::new();
        len_field(&mut msg, 1, b"meta");
        len_field(&mut msg, 2, b"spec");
        assert_eq!(leading_field(&msg, 1), Some(&b"meta"[..]));
        assert_eq!(leading_field(&msg, 2), None);
        assert_eq!(leading_field(&[0x0a, 0x05, 1], 1), None, "truncated");
    }
}
