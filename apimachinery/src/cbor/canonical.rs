//! The canonical form of any CBOR sequence: every map's entries sorted by
//! their encoded keys, everything else (heads, tags, string and float
//! widths) kept byte for byte. What turns the apiserver's shuffled answers
//! into the one form the encoder writes, so tests compare bytes.

/// The canonical form of the CBOR sequence `input`.
pub fn canonical(input: &[u8]) -> Vec<u8> {
    let mut pos = 0;
    let mut out = Vec::with_capacity(input.len());
    while pos < input.len() {
        out.extend(item(input, &mut pos));
    }
    out
}

/// The head at `pos`: (major type, argument, head bytes).
fn head<'a>(input: &'a [u8], pos: &mut usize) -> (u8, u64, &'a [u8]) {
    let start = *pos;
    let major = input[start] >> 5;
    let (arg, len) = match input[start] & 0x1f {
        n @ 0..=23 => (u64::from(n), 1),
        24 => (u64::from(input[start + 1]), 2),
        25 => (u64::from(u16::from_be_bytes(input[start + 1..start + 3].try_into().unwrap())), 3),
        26 => (u64::from(u32::from_be_bytes(input[start + 1..start + 5].try_into().unwrap())), 5),
        27 => (u64::from_be_bytes(input[start + 1..start + 9].try_into().unwrap()), 9),
        n => panic!("indefinite or reserved head {n} at {start}"),
    };
    *pos += len;
    (major, arg, &input[start..start + len])
}

fn item(input: &[u8], pos: &mut usize) -> Vec<u8> {
    let start = *pos;
    let (major, arg, h) = head(input, pos);
    let mut out = h.to_vec();
    match major {
        2 | 3 => {
            out.extend_from_slice(&input[*pos..*pos + arg as usize]);
            *pos += arg as usize;
        }
        4 => (0..arg).for_each(|_| out.extend(item(input, pos))),
        5 => {
            let mut entries: Vec<Vec<u8>> = (0..arg)
                .map(|_| {
                    let mut e = item(input, pos);
                    e.extend(item(input, pos));
                    e
                })
                .collect();
            entries.sort();
            entries.into_iter().for_each(|e| out.extend(e));
        }
        6 => out.extend(item(input, pos)),
        // Floats and simple values: their head is the whole item (f16 etc. included).
        7 => out = input[start..*pos].to_vec(),
        _ => {}
    }
    out
}
