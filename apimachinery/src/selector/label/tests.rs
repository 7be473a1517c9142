//! `labels.Parse` against Go's own test cases and the apiserver's texts.

use super::*;
use crate::selector::tests::{labels, parsed, refused};

const VALUE_REGEX_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', \
    and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', \
    regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const NAME_REGEX_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an \
    alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is \
    '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const PREFIX_REGEX_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or \
    '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is \
    '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

fn sel(s: &str) -> LabelSelector {
    parsed(s, LabelSelector::parse)
}

fn label_err(s: &str) -> String {
    refused(s, LabelSelector::parse)
}

fn matches(s: &str, pairs: &[(&str, &str)]) -> bool {
    sel(s).matches(&labels(pairs))
}

fn req(key: &str, op: LabelOp, values: &[&str]) -> LabelRequirement {
    LabelRequirement { key: key.into(), op, values: values.iter().map(|v| v.to_string()).collect() }
}

// --- label selectors: parsing ---------------------------------------------

#[test]
fn go_good_strings_round_trip() {
    // TestSelectorParse: String() equals the input without spaces.
    for s in ["x=a,y=b,z=c", "", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x>1", "x>1,z<5"] {
        assert_eq!(sel(s).to_string(), s.replace(' ', ""), "{s:?}");
    }
}

#[test]
fn every_operator_parses() {
    let cases: &[(&str, LabelRequirement)] = &[
        ("a=b", req("a", LabelOp::Equals, &["b"])),
        ("a==b", req("a", LabelOp::DoubleEquals, &["b"])),
        ("a!=b", req("a", LabelOp::NotEquals, &["b"])),
        ("a in (b,c)", req("a", LabelOp::In, &["b", "c"])),
        ("a notin (c,b)", req("a", LabelOp::NotIn, &["b", "c"])),
        ("a", req("a", LabelOp::Exists, &[])),
        ("!a", req("a", LabelOp::DoesNotExist, &[])),
        ("a>5", req("a", LabelOp::GreaterThan, &["5"])),
        ("a<5", req("a", LabelOp::LessThan, &["5"])),
    ];
    for (s, want) in cases {
        assert_eq!(sel(s).requirements, vec![want.clone()], "{s:?}");
    }
}

#[test]
fn set_values_empty_and_deduplicated() {
    assert_eq!(sel("x in ()").requirements, vec![req("x", LabelOp::In, &[""])]);
    assert_eq!(sel("x in (abc,)").requirements, vec![req("x", LabelOp::In, &["", "abc"])]);
    assert_eq!(sel("x in (,abc)").requirements, vec![req("x", LabelOp::In, &["", "abc"])]);
    assert_eq!(sel("x in (a,,b)").requirements, vec![req("x", LabelOp::In, &["", "a", "b"])]);
    assert_eq!(sel("x in (,)").requirements, vec![req("x", LabelOp::In, &[""])]);
    assert_eq!(sel("x in (b,a,b)").requirements, vec![req("x", LabelOp::In, &["a", "b"])]);
    assert_eq!(sel("x notin (abc,def),bar,z in (),w").to_string(), "bar,w,x notin (abc,def),z in ()");
}

#[test]
fn empty_exact_values() {
    assert_eq!(sel("a=").requirements, vec![req("a", LabelOp::Equals, &[""])]);
    assert_eq!(sel("a==,b!=").requirements, vec![req("a", LabelOp::DoubleEquals, &[""]), req("b", LabelOp::NotEquals, &[""])]);
}

#[test]
fn whitespace_variants() {
    assert_eq!(sel("\rx").requirements, vec![req("x", LabelOp::Exists, &[])]);
    assert_eq!(sel("foo  in\t (abc)").requirements, vec![req("foo", LabelOp::In, &["abc"])]);
    assert_eq!(sel("x notin\n (abc)").requirements, vec![req("x", LabelOp::NotIn, &["abc"])]);
    assert_eq!(sel("x  notin\t\t\t(abc,def)").requirements, vec![req("x", LabelOp::NotIn, &["abc", "def"])]);
    assert_eq!(sel("  a = b ,\tc != d\n").to_string(), "a=b,c!=d");
    assert_eq!(sel(" x in ( a , b ) ").to_string(), "x in (a,b)");
    assert_eq!(sel(" ! x ").to_string(), "!x");
    assert!(sel(" \t\r\n ").is_empty());
}

#[test]
fn keywords_are_identifiers_in_value_position() {
    assert_eq!(sel("in in (in)").requirements, vec![req("in", LabelOp::In, &["in"])]);
    assert_eq!(sel("notin=in").requirements, vec![req("notin", LabelOp::Equals, &["in"])]);
    assert_eq!(sel("x in (notin,in)").requirements, vec![req("x", LabelOp::In, &["in", "notin"])]);
    assert!(matches("notin=in", &[("notin", "in")]));
}

#[test]
fn prefixed_keys() {
    let s = "this-is-another-dns.domain.com/key-with-dash in (so,what)";
    assert_eq!(sel(s).requirements, vec![req("this-is-another-dns.domain.com/key-with-dash", LabelOp::In, &["so", "what"])]);
    let s = "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)";
    assert_eq!(sel(s).requirements, vec![req("0.1.2.domain/99", LabelOp::NotIn, &["10.10.100.1", "tick.tack.clock"])]);
    assert!(LabelSelector::parse(&format!("{}/{}", "a".repeat(253), "b".repeat(63))).is_ok());
}

#[test]
fn requirements_sorted_by_key() {
    assert_eq!(sel("x=a,a=x").to_string(), "a=x,x=a");
    assert_eq!(sel("x=a,a=x"), sel("a=x,x=a"));
    assert_eq!(sel("z,y in (a),!b").to_string(), "!b,y in (a),z");
    // Same key: the input order is kept.
    assert_eq!(sel("z!=a,z").to_string(), "z!=a,z");
}

#[test]
fn display_of_every_operator() {
    assert_eq!(sel("x in (def,abc),y notin (jkl),z").to_string(), "x in (abc,def),y notin (jkl),z");
    assert_eq!(sel("x=abc,y==jkl,z!=a").to_string(), "x=abc,y==jkl,z!=a");
    assert_eq!(sel("x>2,y<8,!z").to_string(), "x>2,y<8,!z");
    assert_eq!(sel("z notin ()").to_string(), "z notin ()");
}

// --- label selectors: errors ----------------------------------------------

#[test]
fn reference_capture_error() {
    // tests/reference/apiserver-1.36/err-label.txt: labelSelector=a%3D%3D%3Db
    assert_eq!(label_err("a===b"), "unable to parse requirement: found '=', expected: identifier");
}

#[test]
fn go_bad_strings() {
    assert_eq!(label_err("x=a||y=b"), format!("unable to parse requirement: values[0][x]: Invalid value: \"a||y\": {VALUE_REGEX_MSG}"));
    assert_eq!(label_err("x==a==b"), "found '==', expected: ',' or 'end of string'");
    assert_eq!(label_err("!x=a"), "found '=', expected: ',' or 'end of string'");
    assert_eq!(
        label_err("x<a"),
        "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"
    );
}

#[test]
fn structural_errors() {
    let cases: &[(&str, &str)] = &[
        (",", "found ',', expected: !, identifier, or 'end of string'"),
        ("=a", "found '=', expected: !, identifier, or 'end of string'"),
        ("(a)", "found '(', expected: !, identifier, or 'end of string'"),
        ("a,", "found '', expected: identifier after ','"),
        ("a,,b", "found ',', expected: identifier after ','"),
        ("a,=b", "found '=', expected: identifier after ','"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a in (b) c", "found 'c', expected: ',' or 'end of string'"),
        ("!a b", "found 'b', expected: ',' or 'end of string'"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("!!a", "unable to parse requirement: found '!', expected: identifier"),
        ("!=a", "found '!=', expected: !, identifier, or 'end of string'"),
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a (b)", "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"),
        ("a !b", "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt"),
        ("a in b", "unable to parse requirement: found 'b' expected: '('"),
        ("a in", "unable to parse requirement: found '' expected: '('"),
        ("a in (", "unable to parse requirement: found '', expected: ',', ')' or identifier"),
        ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
        ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
        ("a in (b,", "unable to parse requirement: found '', expected: ',', or identifier"),
        ("a in (,=)", "unable to parse requirement: found '=', expected: ',', or identifier"),
        ("a=(b)", "unable to parse requirement: found '(', expected: identifier"),
        ("a!=!", "unable to parse requirement: found '!', expected: identifier"),
        ("a>=1", "unable to parse requirement: found '=', expected: identifier"),
        ("a===b", "unable to parse requirement: found '=', expected: identifier"),
    ];
    for (s, want) in cases {
        assert_eq!(label_err(s), *want, "{s:?}");
    }
}

#[test]
fn nul_byte_ends_a_token_or_the_input() {
    assert_eq!(label_err("a\0b"), "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt");
    // After a symbol the NUL is swallowed; after whitespace it ends the input.
    assert_eq!(label_err("a,\0,b"), "found ',', expected: identifier after ','");
    assert_eq!(label_err("a, \0,b"), "found '', expected: identifier after ','");
    assert_eq!(sel("a=b \0 garbage((").to_string(), "a=b");
    assert_eq!(sel("a=\0b").to_string(), "a=b");
}

#[test]
fn invalid_keys() {
    let nil = "unable to parse requirement: <nil>: Invalid value:";
    assert_eq!(label_err("-bad"), format!("{nil} \"-bad\": name part {NAME_REGEX_MSG}"));
    assert_eq!(label_err("bad-=x"), format!("{nil} \"bad-\": name part {NAME_REGEX_MSG}"));
    assert_eq!(label_err("!a%b"), format!("{nil} \"a%b\": name part {NAME_REGEX_MSG}"));
    let long = "k".repeat(64);
    assert_eq!(label_err(&long), format!("{nil} \"{long}\": name part must be no more than 63 bytes"));
    let long_bad = format!("{}-", "k".repeat(63));
    assert_eq!(label_err(&long_bad), format!("{nil} \"{long_bad}\": name part must be no more than 63 bytes; name part {NAME_REGEX_MSG}"));
    assert_eq!(label_err("/a"), format!("{nil} \"/a\": prefix part must be non-empty"));
    assert_eq!(label_err("a/"), format!("{nil} \"a/\": name part must be non-empty; name part {NAME_REGEX_MSG}"));
    assert_eq!(
        label_err("/"),
        format!("{nil} \"/\": prefix part must be non-empty; name part must be non-empty; name part {NAME_REGEX_MSG}")
    );
    assert_eq!(label_err("Example.com/a"), format!("{nil} \"Example.com/a\": prefix part {PREFIX_REGEX_MSG}"));
    let prefix = "a".repeat(254);
    assert_eq!(label_err(&format!("{prefix}/a")), format!("{nil} \"{prefix}/a\": prefix part must be no more than 253 bytes"));
    let three = format!(
        "{nil} \"a/b/c\": a valid label key {NAME_REGEX_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
    );
    assert_eq!(label_err("a/b/c"), three);
}

#[test]
fn invalid_values() {
    let long = "v".repeat(64);
    assert_eq!(
        label_err(&format!("app={long}")),
        format!("unable to parse requirement: values[0][app]: Invalid value: \"{long}\": must be no more than 63 bytes")
    );
    let long_bad = format!("{}.", "v".repeat(63));
    let prefix = "unable to parse requirement: values[0][app]: Invalid value:";
    assert_eq!(
        label_err(&format!("app!={long_bad}")),
        format!("{prefix} \"{long_bad}\": must be no more than 63 bytes; {VALUE_REGEX_MSG}")
    );
    assert_eq!(label_err("a=-x"), format!("unable to parse requirement: values[0][a]: Invalid value: \"-x\": {VALUE_REGEX_MSG}"));
    assert!(LabelSelector::parse(&format!("a={}", "v".repeat(63))).is_ok());
}

#[test]
fn several_invalid_values_aggregate_in_sorted_order() {
    let want = format!(
        "unable to parse requirement: [values[0][a]: Invalid value: \"-x\": {VALUE_REGEX_MSG}, \
         values[2][a]: Invalid value: \"z-\": {VALUE_REGEX_MSG}]"
    );
    assert_eq!(label_err("a in (z-,ok,-x)"), want);
}

#[test]
fn gt_lt_errors() {
    let not_int = "for 'Gt', 'Lt' operators, the value must be an integer";
    assert_eq!(label_err("a>"), format!("unable to parse requirement: values[0]: Invalid value: \"\": {not_int}"));
    assert_eq!(label_err("a<1.5"), format!("unable to parse requirement: values[0]: Invalid value: \"1.5\": {not_int}"));
    assert_eq!(
        label_err("a>x."),
        format!(
            "unable to parse requirement: [values[0]: Invalid value: \"x.\": {not_int}, \
             values[0][a]: Invalid value: \"x.\": {VALUE_REGEX_MSG}]"
        )
    );
    // An integer that is not a valid label value.
    assert_eq!(label_err("a>-1"), format!("unable to parse requirement: values[0][a]: Invalid value: \"-1\": {VALUE_REGEX_MSG}"));
    assert_eq!(
        label_err("a>99999999999999999999"),
        format!("unable to parse requirement: values[0]: Invalid value: \"99999999999999999999\": {not_int}")
    );
}

#[test]
fn error_values_use_go_quoting() {
    let prefix = "unable to parse requirement: values[0][a]: Invalid value:";
    assert_eq!(label_err("a=ü"), format!("{prefix} \"ü\": {VALUE_REGEX_MSG}"));
    assert_eq!(label_err("a=x\u{1}"), format!("{prefix} \"x\\x01\": {VALUE_REGEX_MSG}"));
    assert_eq!(label_err("a=x\u{a0}"), format!("{prefix} \"x\\u00a0\": {VALUE_REGEX_MSG}"));
    assert_eq!(label_err("a=x\"\\"), format!("{prefix} \"x\\\"\\\\\": {VALUE_REGEX_MSG}"));
    assert_eq!(label_err("a=x\u{7f}\u{b}"), format!("{prefix} \"x\\x7f\\v\": {VALUE_REGEX_MSG}"));
    assert_eq!(label_err("a=\u{10ffff}"), format!("{prefix} \"\\U0010ffff\": {VALUE_REGEX_MSG}"));
    assert_eq!(label_err("a=\u{feff}"), format!("{prefix} \"\\ufeff\": {VALUE_REGEX_MSG}"));
}

// --- label selectors: matching --------------------------------------------

#[test]
fn go_selector_matches() {
    assert!(matches("", &[("x", "y")]));
    assert!(matches("x=y", &[("x", "y")]));
    assert!(matches("x=y,z=w", &[("x", "y"), ("z", "w")]));
    assert!(matches("x!=y,z!=w", &[("x", "z"), ("z", "a")]));
    assert!(matches("x", &[("x", "z")]));
    assert!(matches("!x", &[("y", "z")]));
    assert!(matches("x>1", &[("x", "2")]));
    assert!(matches("x<1", &[("x", "0")]));
    assert!(!matches("x=z", &[]));
    assert!(!matches("x=y", &[("x", "z")]));
    assert!(!matches("x=y,z=w", &[("x", "w"), ("z", "w")]));
    assert!(!matches("x!=y,z!=w", &[("x", "z"), ("z", "w")]));
    assert!(!matches("x", &[("y", "z")]));
    assert!(!matches("!x", &[("x", "z")]));
    assert!(!matches("x>1", &[("x", "0")]));
    assert!(!matches("x<1", &[("x", "2")]));
    let set = [("foo", "bar"), ("baz", "blah")];
    assert!(matches("foo=bar,baz=blah", &set));
    assert!(!matches("foo=bar,foobar=bar,baz=blah", &set));
}

#[test]
fn absent_keys() {
    assert!(matches("x!=a", &[]));
    assert!(matches("x notin (a)", &[]));
    assert!(matches("x notin ()", &[("y", "")]));
    assert!(!matches("x in (a)", &[]));
    assert!(!matches("x=a", &[]));
    assert!(!matches("x==a", &[]));
    assert!(!matches("x", &[]));
    assert!(matches("!x", &[]));
    assert!(!matches("x>0", &[]));
    assert!(!matches("x<0", &[]));
    assert!(!matches("x=", &[]));
}

#[test]
fn set_and_empty_value_matching() {
    assert!(matches("x in (a,b)", &[("x", "b")]));
    assert!(!matches("x in (a,b)", &[("x", "c")]));
    assert!(matches("x notin (a,b)", &[("x", "c")]));
    assert!(!matches("x notin (a,b)", &[("x", "a")]));
    assert!(matches("x in ()", &[("x", "")]));
    assert!(!matches("x in ()", &[("x", "a")]));
    assert!(!matches("x notin ()", &[("x", "")]));
    assert!(matches("x=", &[("x", "")]));
    assert!(matches("x!=", &[("x", "a")]));
    assert!(!matches("x!=", &[("x", "")]));
}

#[test]
fn gt_lt_matching() {
    assert!(matches("x>5", &[("x", "6")]));
    assert!(!matches("x>5", &[("x", "5")]));
    assert!(matches("x<5", &[("x", "-7")]));
    assert!(!matches("x<5", &[("x", "5")]));
    assert!(matches("x>5", &[("x", "+6")]));
    assert!(matches("x>0", &[("x", "9223372036854775807")]));
    // Non-integer label values never match.
    assert!(!matches("x>1", &[("x", "v2")]));
    assert!(!matches("x<1", &[("x", "")]));
    assert!(!matches("x<1", &[("x", "0.5")]));
    assert!(!matches("x>1", &[("x", "99999999999999999999")]));
    assert!(matches("x>1,x<3", &[("x", "2")]));
    assert!(!matches("x>1,x<3", &[("x", "3")]));
}

#[test]
fn reference_capture_set_selector() {
    // tests/reference/apiserver-1.36/list-label-set.txt: tier in (0,2),app!=db
    let s = sel("tier in (0,2),app!=db");
    assert!(s.matches(&labels(&[("app", "web"), ("tier", "0")])));
    assert!(s.matches(&labels(&[("app", "web"), ("tier", "2")])));
    assert!(!s.matches(&labels(&[("app", "db"), ("tier", "2")])));
    assert!(!s.matches(&labels(&[("app", "web"), ("tier", "1")])));
}
