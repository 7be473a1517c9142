//! `fields.ParseSelector` against Go's own test cases and the apiserver's texts.

use super::*;
use crate::selector::tests::{labels, parsed, refused};

fn field(s: &str) -> FieldSelector {
    parsed(s, FieldSelector::parse)
}

fn field_err(s: &str) -> String {
    refused(s, FieldSelector::parse)
}

fn field_matches(s: &str, pairs: &[(&str, &str)]) -> bool {
    let m = labels(pairs);
    field(s).matches(|f| m.get(f).cloned().unwrap_or_default())
}

fn freq(field: &str, op: FieldOp, value: &str) -> FieldRequirement {
    FieldRequirement { field: field.into(), op, value: value.into() }
}

#[test]
fn field_operators() {
    assert_eq!(field("a=b").requirements, vec![freq("a", FieldOp::Equals, "b")]);
    assert_eq!(field("a==b").requirements, vec![freq("a", FieldOp::Equals, "b")]);
    assert_eq!(field("a!=b").requirements, vec![freq("a", FieldOp::NotEquals, "b")]);
    assert_eq!(field("a=").requirements, vec![freq("a", FieldOp::Equals, "")]);
    assert_eq!(field("a!=").requirements, vec![freq("a", FieldOp::NotEquals, "")]);
    assert_eq!(field("=x").requirements, vec![freq("", FieldOp::Equals, "x")]);
    assert_eq!(field(" a = b ").requirements, vec![freq(" a ", FieldOp::Equals, " b ")]);
    assert_eq!(field("a!b=c").requirements, vec![freq("a!b", FieldOp::Equals, "c")]);
}

#[test]
fn field_terms_sorted_and_empty_ones_skipped() {
    let f = field("spec.nodeName=node-1,metadata.namespace=cap-1795339857");
    assert_eq!(
        f.requirements,
        vec![freq("metadata.namespace", FieldOp::Equals, "cap-1795339857"), freq("spec.nodeName", FieldOp::Equals, "node-1")]
    );
    assert_eq!(field(",,a=b,,").requirements, vec![freq("a", FieldOp::Equals, "b")]);
    assert!(field("").is_empty());
    assert!(field(",").is_empty());
    assert!(field("=").is_empty());
    assert!(field("==,!=").is_empty());
    assert_eq!(field("z=1,a==2,m!=3").to_string(), "a=2,m!=3,z=1");
}

#[test]
fn field_escapes() {
    assert_eq!(field(r"a=x\,y").requirements, vec![freq("a", FieldOp::Equals, "x,y")]);
    assert_eq!(field(r"a=x\=y").requirements, vec![freq("a", FieldOp::Equals, "x=y")]);
    assert_eq!(field(r"a=x\\y").requirements, vec![freq("a", FieldOp::Equals, r"x\y")]);
    assert_eq!(field(r"a=x\\,b=c").requirements, vec![freq("a", FieldOp::Equals, r"x\"), freq("b", FieldOp::Equals, "c")]);
    assert_eq!(field(r"a=\,\=\\").to_string(), r"a=\,\=\\");
    // The field itself is not unescaped; its first operator splits the term.
    assert_eq!(field(r"a\=b").requirements, vec![freq(r"a\", FieldOp::Equals, "b")]);
    assert_eq!(field(r"a\,b=c").requirements, vec![freq(r"a\,b", FieldOp::Equals, "c")]);
}

#[test]
fn field_errors() {
    let cases: &[(&str, &str)] = &[
        ("abc", "invalid selector: 'abc'; can't understand 'abc'"),
        ("x=1,abc", "invalid selector: 'x=1,abc'; can't understand 'abc'"),
        ("zzz,aaa", "invalid selector: 'zzz,aaa'; can't understand 'aaa'"),
        ("a!b", "invalid selector: 'a!b'; can't understand 'a!b'"),
        (r"a\,b", r"invalid selector: 'a\,b'; can't understand 'a\,b'"),
        ("a=b=c", "invalid field selector: unescaped character in value: 61"),
        ("a===b", "invalid field selector: unescaped character in value: 61"),
        ("a!==b", "invalid field selector: unescaped character in value: 61"),
        (r"a=x\y", r"invalid field selector: invalid escape sequence: \y"),
        (r"a=x\ü", r"invalid field selector: invalid escape sequence: \ü"),
        ("a=x\\", r"invalid field selector: invalid escape sequence: \"),
        // Sorted terms: "a=\q" is checked before "b=c=d".
        (r"b=c=d,a=\q", r"invalid field selector: invalid escape sequence: \q"),
    ];
    for (s, want) in cases {
        assert_eq!(field_err(s), *want, "{s:?}");
    }
}

#[test]
fn field_matching() {
    assert!(field_matches("a=b", &[("a", "b")]));
    assert!(!field_matches("a=b", &[("a", "c")]));
    assert!(!field_matches("a=b", &[]));
    assert!(field_matches("a=", &[]));
    assert!(field_matches("a!=b", &[]));
    assert!(field_matches("a!=b", &[("a", "c")]));
    assert!(!field_matches("a!=b", &[("a", "b")]));
    assert!(field_matches(r"a=x\,y,b!=z", &[("a", "x,y"), ("b", "w")]));
    assert!(!field_matches(r"a=x\,y,b!=z", &[("a", "x,y"), ("b", "z")]));
    assert!(field_matches("", &[]));
}

#[test]
fn field_escape_value_round_trip() {
    for v in ["", "plain", r"a\b", "a,b", "a=b", r"\,=\\"] {
        let parsed = field(&format!("f={}", escape_value(v)));
        assert_eq!(parsed.requirements, vec![freq("f", FieldOp::Equals, v)], "{v:?}");
    }
}
