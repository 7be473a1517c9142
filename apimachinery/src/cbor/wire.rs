//! CBOR heads and scalars (RFC 8949) as fxamacker/cbor writes them in the
//! apiserver's encode mode: every head in its shortest form, strings as
//! byte strings (`StringToByteString`), floats in the shortest of half,
//! single and double precision that holds the value exactly
//! (`ShortestFloat16`).

/// Major type 0: an unsigned integer.
pub const UINT: u8 = 0;
/// Major type 1: a negative integer (`-1 - n`).
pub const NINT: u8 = 1;
/// Major type 2: a byte string.
pub const BYTES: u8 = 2;
/// Major type 4: an array.
pub const ARRAY: u8 = 4;
/// Major type 5: a map.
pub const MAP: u8 = 5;
/// Major type 6: a tag.
pub const TAG: u8 = 6;

/// `false`, `true`, `null`.
pub const FALSE: u8 = 0xf4;
/// `true`.
pub const TRUE: u8 = 0xf5;
/// `null`.
pub const NULL: u8 = 0xf6;

/// Tag 22: a byte string expected to be shown in base64 (Go `[]byte`
/// under `ByteSliceLaterFormatBase64`).
pub const TAG_BASE64: u64 = 22;

/// A head of major type `major` with argument `n`, in its shortest form.
pub fn head(out: &mut Vec<u8>, major: u8, n: u64) {
    let m = major << 5;
    match n {
        0..=23 => out.push(m | n as u8),
        24..=0xff => out.extend_from_slice(&[m | 24, n as u8]),
        0x100..=0xffff => {
            out.push(m | 25);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(m | 26);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
        _ => {
            out.push(m | 27);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
}

/// A string, as the byte string Go writes for it.
pub fn string(out: &mut Vec<u8>, s: &[u8]) {
    head(out, BYTES, s.len() as u64);
    out.extend_from_slice(s);
}

/// A signed integer.
pub fn int(out: &mut Vec<u8>, i: i64) {
    if i >= 0 {
        head(out, UINT, i as u64);
    } else {
        head(out, NINT, !(i as u64));
    }
}

/// A float in the shortest precision that holds it exactly.
pub fn float(out: &mut Vec<u8>, f: f64) {
    let single = f as f32;
    if f64::from(single) != f {
        out.push(0xfb);
        out.extend_from_slice(&f.to_bits().to_be_bytes());
    } else if let Some(half) = half_bits(single) {
        out.push(0xf9);
        out.extend_from_slice(&half.to_be_bytes());
    } else {
        out.push(0xfa);
        out.extend_from_slice(&single.to_bits().to_be_bytes());
    }
}

/// The IEEE half-precision bits of `f` when it holds `f` exactly
/// (subnormal halves included), else `None`. Never NaN or infinite here:
/// JSON has neither.
fn half_bits(f: f32) -> Option<u16> {
    let bits = f.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    if bits & 0x7fff_ffff == 0 {
        return Some(sign);
    }
    let exp = ((bits >> 23) & 0xff) as i32 - 127;
    let mant = bits & 0x7f_ffff;
    if !(-24..=15).contains(&exp) {
        return None;
    }
    if exp >= -14 {
        return (mant & 0x1fff == 0).then(|| sign | (((exp + 15) as u16) << 10) | (mant >> 13) as u16);
    }
    // A subnormal half: m × 2^-24 for m < 1024.
    let full = (1 << 23) | mant;
    let shift = -(exp + 1) as u32;
    (full & ((1 << shift) - 1) == 0).then(|| sign | (full >> shift) as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(x: f64) -> Vec<u8> {
        let mut out = Vec::new();
        float(&mut out, x);
        out
    }

    #[test]
    fn floats_take_the_shortest_exact_precision() {
        // RFC 8949 Appendix A.
        assert_eq!(f(0.0), [0xf9, 0x00, 0x00]);
        assert_eq!(f(-0.0), [0xf9, 0x80, 0x00]);
        assert_eq!(f(1.0), [0xf9, 0x3c, 0x00]);
        assert_eq!(f(1.5), [0xf9, 0x3e, 0x00]);
        assert_eq!(f(65504.0), [0xf9, 0x7b, 0xff]);
        assert_eq!(f(100000.0), [0xfa, 0x47, 0xc3, 0x50, 0x00]);
        assert_eq!(f(3.4028234663852886e38), [0xfa, 0x7f, 0x7f, 0xff, 0xff]);
        assert_eq!(f(1.0e300), [0xfb, 0x7e, 0x37, 0xe4, 0x3c, 0x88, 0x00, 0x75, 0x9c]);
        assert_eq!(f(5.960464477539063e-8), [0xf9, 0x00, 0x01]);
        assert_eq!(f(0.00006103515625), [0xf9, 0x04, 0x00]);
        assert_eq!(f(-4.0), [0xf9, 0xc4, 0x00]);
        assert_eq!(f(-4.1), [0xfb, 0xc0, 0x10, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66]);
        assert_eq!(f(1.1), [0xfb, 0x3f, 0xf1, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a]);
    }

    #[test]
    fn heads_and_integers_are_shortest() {
        let enc = |i: i64| {
            let mut out = Vec::new();
            int(&mut out, i);
            out
        };
        assert_eq!(enc(0), [0x00]);
        assert_eq!(enc(23), [0x17]);
        assert_eq!(enc(24), [0x18, 0x18]);
        assert_eq!(enc(1000), [0x19, 0x03, 0xe8]);
        assert_eq!(enc(1000000), [0x1a, 0x00, 0x0f, 0x42, 0x40]);
        assert_eq!(enc(-1), [0x20]);
        assert_eq!(enc(-1000), [0x39, 0x03, 0xe7]);
        assert_eq!(enc(i64::MIN), [0x3b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    }
}
