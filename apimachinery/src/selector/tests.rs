//! Both parsers under random input: never a panic, and what parses prints back to itself.

use std::collections::BTreeMap;
use std::fmt;

use super::{FieldOp, FieldSelector, LabelSelector};

/// What `parse` makes of `s`, which must parse.
pub(super) fn parsed<T, E: fmt::Display>(s: &str, parse: impl Fn(&str) -> Result<T, E>) -> T {
    parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
}

/// Why `parse` refuses `s`, which must not parse: the error's message.
pub(super) fn refused<T: fmt::Display, E: fmt::Display>(s: &str, parse: impl Fn(&str) -> Result<T, E>) -> String {
    match parse(s) {
        Ok(v) => panic!("{s:?} should fail, got {v}"),
        Err(e) => e.to_string(),
    }
}

/// Labels (or field values) from pairs.
pub(super) fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[rustfmt::skip]
const PIECES: &[&str] = &[
    "a", "b", "x", "in", "notin", "=", "==", "!=", "!", "(", ")", ",", ">", "<", " ", "\t", "\n", "\r", "\0", "\\", "-", ".", "_", "/",
    "1", "-1", "9", "ü", "日", "\u{feff}", "\u{10ffff}", "\"", "app", "example.com/", "||", "%", "é",
];

fn garbage(rng: &mut Rng) -> String {
    let n = rng.below(12);
    (0..n).map(|_| PIECES[rng.below(PIECES.len())]).collect()
}

fn sorted_fields(f: &FieldSelector) -> Vec<(String, bool, String)> {
    let mut v: Vec<_> = f.requirements.iter().map(|r| (r.field.clone(), r.op == FieldOp::Equals, r.value.clone())).collect();
    v.sort();
    v
}

#[test]
fn garbage_never_panics_and_round_trips() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let pool = labels(&[("a", "1"), ("b", "x"), ("in", ""), ("x", "-1")]);
    let (mut label_ok, mut field_ok) = (0, 0);
    for _ in 0..50_000 {
        let s = garbage(&mut rng);
        if let Ok(l) = LabelSelector::parse(&s) {
            label_ok += 1;
            let _ = l.matches(&pool);
            let again = LabelSelector::parse(&l.to_string()).unwrap_or_else(|e| panic!("{s:?} -> {l} -> {e}"));
            assert_eq!(again, l, "{s:?}");
        }
        if let Ok(f) = FieldSelector::parse(&s) {
            field_ok += 1;
            let _ = f.matches(|k| pool.get(k).cloned().unwrap_or_default());
            let again = FieldSelector::parse(&f.to_string()).unwrap_or_else(|e| panic!("{s:?} -> {f} -> {e}"));
            assert_eq!(sorted_fields(&again), sorted_fields(&f), "{s:?}");
        }
    }
    assert!(label_ok > 1_000 && field_ok > 1_000, "{label_ok} {field_ok}");
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(42);
    for _ in 0..20_000 {
        let bytes: Vec<u8> = (0..rng.below(24)).map(|_| rng.below(128) as u8).collect();
        let s = String::from_utf8_lossy(&bytes);
        let _ = LabelSelector::parse(&s);
        let _ = FieldSelector::parse(&s);
    }
    let _ = LabelSelector::parse(&"(".repeat(10_000));
    let _ = LabelSelector::parse(&"a,".repeat(10_000));
    let _ = FieldSelector::parse(&"\\".repeat(10_001));
}
