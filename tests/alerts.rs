//! The alert rules (`config/alerts/kache-rules.yaml`, and the same rules as
//! a PrometheusRule in `config/deploy/components/monitoring/`) are what they
//! say:
//!
//! - every metric an expression names is one a real kache exports, and every
//!   label its matchers and groupings name is one kache puts on it: kache
//!   runs in front of the simulator, serves and passes through a request,
//!   and its `/metrics` is the list (a misspelled metric or label would
//!   match nothing, and the alert would never fire);
//! - the PrometheusRule holds exactly the rules file's rules;
//! - `promtool check rules` accepts both (syntax, durations, templates),
//!   where promtool is installed: `.ci/run` installs it (from Debian's
//!   `prometheus` package), and under CI a missing promtool fails the test.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::Process;
use serde_json::Value;

fn path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn yaml(relative: &str) -> Value {
    let file = path(relative);
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

const RULES: &str = "config/alerts/kache-rules.yaml";
const PROMETHEUS_RULE: &str = "config/deploy/components/monitoring/prometheusrule.yaml";

/// `(alert, expression)` of every rule of a rules document (`groups: …`).
fn expressions(groups: &Value) -> Vec<(String, String)> {
    let rules = groups.as_array().expect("groups").iter().flat_map(|g| g["rules"].as_array().expect("a group's rules"));
    rules
        .map(|r| (r["alert"].as_str().or(r["record"].as_str()).unwrap_or("?").to_string(), r["expr"].as_str().expect("expr").to_string()))
        .collect()
}

// ---------------------------------------------------------------------------
// What kache exports.

/// Every series name a kache's `/metrics` shows, with the label names it carries.
fn exported(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let series = line.rsplit_once(' ').map_or(line, |(s, _)| s);
        let (name, labels) = series.split_once('{').unwrap_or((series, ""));
        let labels = labels.trim_end_matches('}').split(',').filter_map(|kv| kv.split_once('=')).map(|(k, _)| k.trim().to_string());
        out.entry(name.to_string()).or_default().extend(labels);
    }
    out
}

/// kache's `/metrics` after it served a list from memory and passed a request through, auditing.
fn kache_metrics() -> String {
    let sim = Process::sim(&["--pods", "20"]);
    let dir = tempfile::tempdir().unwrap();
    let (policy, log) = (dir.path().join("policy.yaml"), dir.path().join("audit.log"));
    std::fs::write(&policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n").unwrap();
    let audit = ["--audit-policy-file", policy.to_str().unwrap(), "--audit-log-path", log.to_str().unwrap()];
    let kache = Process::kache(&sim.url, &[&["--resources", "pods,configmaps", "--memory-budget", "64"][..], &audit].concat());
    common::eventually(Duration::from_secs(60), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
    assert_eq!(kache.get("/api/v1/pods?resourceVersion=0").status, 200);
    assert_eq!(kache.get("/api/v1/secrets").status, 200);
    kache.get("/metrics").text()
}

// ---------------------------------------------------------------------------
// What an expression names: a PromQL tokenizer, enough for the names.

#[derive(Debug, PartialEq)]
enum Token {
    Ident(String),
    Str,
    Number,
    Punct(char),
    Op(String),
}

fn tokens(expr: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            _ if c.is_whitespace() => i += 1,
            '#' => i = chars[i..].iter().position(|&c| c == '\n').map_or(chars.len(), |n| i + n),
            '"' | '\'' | '`' => {
                i += 1;
                while i < chars.len() && chars[i] != c {
                    i += if chars[i] == '\\' && c != '`' { 2 } else { 1 };
                }
                if i >= chars.len() {
                    return Err(format!("an unterminated string in {expr:?}"));
                }
                i += 1;
                out.push(Token::Str);
            }
            _ if c.is_ascii_alphabetic() || c == '_' || c == ':' => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':') {
                    i += 1;
                }
                out.push(Token::Ident(chars[start..i].iter().collect()));
            }
            // Numbers and durations (`0.05`, `5m`, `1h30m`, `1e3`).
            _ if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) => {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
                out.push(Token::Number);
            }
            '{' | '}' | '(' | ')' | '[' | ']' | ',' => {
                out.push(Token::Punct(c));
                i += 1;
            }
            _ => {
                let two: String = chars[i..chars.len().min(i + 2)].iter().collect();
                let op = ["=~", "!~", "!=", "==", ">=", "<="].into_iter().find(|o| two == *o).map_or_else(|| c.to_string(), str::to_string);
                if !"=~!<>+-*/%^@".contains(c) {
                    return Err(format!("unexpected {c:?} in {expr:?}"));
                }
                i += op.chars().count();
                out.push(Token::Op(op));
            }
        }
    }
    Ok(out)
}

const AGGREGATIONS: &[&str] =
    &["sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk", "quantile"];
const GROUPINGS: &[&str] = &["by", "without", "on", "ignoring", "group_left", "group_right"];
const KEYWORDS: &[&str] = &["and", "or", "unless", "bool", "offset"];
const FUNCTIONS: &[&str] = &[
    "abs",
    "absent",
    "absent_over_time",
    "avg_over_time",
    "ceil",
    "changes",
    "clamp",
    "clamp_max",
    "clamp_min",
    "count_over_time",
    "day_of_month",
    "day_of_week",
    "days_in_month",
    "delta",
    "deriv",
    "exp",
    "floor",
    "histogram_quantile",
    "hour",
    "idelta",
    "increase",
    "irate",
    "label_join",
    "label_replace",
    "last_over_time",
    "ln",
    "log10",
    "log2",
    "max_over_time",
    "min_over_time",
    "minute",
    "month",
    "predict_linear",
    "present_over_time",
    "quantile_over_time",
    "rate",
    "resets",
    "round",
    "scalar",
    "sgn",
    "sort",
    "sort_desc",
    "sqrt",
    "stddev_over_time",
    "stdvar_over_time",
    "sum_over_time",
    "time",
    "timestamp",
    "vector",
    "year",
];

/// What `expr` names.
#[derive(Debug, Default)]
struct Names {
    /// Each metric selector: the metric and the label names of its matchers.
    selectors: Vec<(String, Vec<String>)>,
    /// Label names of `by`, `without`, `on`, `ignoring` and `group_*` clauses.
    grouping: Vec<String>,
}

fn names(expr: &str) -> Result<Names, String> {
    let t = tokens(expr)?;
    let mut out = Names::default();
    let ident = |i: usize| match t.get(i) {
        Some(Token::Ident(w)) => Some(w.as_str()),
        _ => None,
    };
    let mut i = 0;
    while i < t.len() {
        let next_is = |c: char| t.get(i + 1) == Some(&Token::Punct(c));
        match ident(i) {
            Some(w) if GROUPINGS.contains(&w) => {
                i += 1;
                if t.get(i) == Some(&Token::Punct('(')) {
                    i += 1;
                    while t.get(i).is_some_and(|x| *x != Token::Punct(')')) {
                        out.grouping.extend(ident(i).map(str::to_string));
                        i += 1;
                    }
                }
            }
            Some(w) if KEYWORDS.contains(&w) || AGGREGATIONS.contains(&w) => i += 1,
            Some(w) if next_is('(') => {
                if !FUNCTIONS.contains(&w) {
                    return Err(format!("{w}: not a PromQL function"));
                }
                i += 1;
            }
            Some(metric) => {
                let mut labels = Vec::new();
                i += 1;
                if t.get(i) == Some(&Token::Punct('{')) {
                    while t.get(i).is_some_and(|x| *x != Token::Punct('}')) {
                        if let (Some(label), Some(Token::Op(op))) = (ident(i), t.get(i + 1))
                            && ["=", "!=", "=~", "!~"].contains(&op.as_str())
                        {
                            labels.push(label.to_string());
                        }
                        i += 1;
                    }
                }
                out.selectors.push((metric.to_string(), labels));
            }
            None if t[i] == Token::Punct('{') => return Err(format!("a selector without a metric name in {expr:?}")),
            // Ranges and subqueries: `[5m]`, `[1h:1m]`.
            None if t[i] == Token::Punct('[') => {
                while t.get(i).is_some_and(|x| *x != Token::Punct(']')) {
                    i += 1;
                }
            }
            None => i += 1,
        }
    }
    Ok(out)
}

/// Everything `expr` names that kache does not export.
fn problems(expr: &str, exported: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let names = match names(expr) {
        Ok(n) => n,
        Err(e) => return vec![e],
    };
    let mut out = Vec::new();
    let all_labels: BTreeSet<&String> = exported.values().flatten().collect();
    for (metric, labels) in &names.selectors {
        let Some(has) = exported.get(metric) else {
            out.push(format!("{metric}: kache exports no such metric"));
            continue;
        };
        out.extend(labels.iter().filter(|l| !has.contains(*l)).map(|l| format!("{metric}: has no label {l}")));
    }
    out.extend(names.grouping.iter().filter(|l| !all_labels.contains(l)).map(|l| format!("{l}: no metric of kache's has this label")));
    out
}

// ---------------------------------------------------------------------------

#[test]
fn every_rule_names_only_metrics_and_labels_that_kache_exports() {
    let exported = exported(&kache_metrics());
    let rules = expressions(&yaml(RULES)["groups"]);
    assert!(rules.len() >= 6, "the rules file's rules: {rules:?}");
    let mut found = Vec::new();
    for (alert, expr) in &rules {
        found.extend(problems(expr, &exported).into_iter().map(|p| format!("{alert}: {p}")));
        let named = names(expr).expect("names");
        println!("{alert}: {}", named.selectors.iter().map(|(m, _)| m.as_str()).collect::<Vec<_>>().join(", "));
    }
    assert!(found.is_empty(), "{}", found.join("\n"));

    // The check fails what it should.
    let (_, expr) = rules.iter().find(|(a, _)| a == "KacheUpstreamErrors").expect("an upstream error rule");
    for (change, expected) in [
        (
            expr.replace("kache_requests_total{source=\"upstream\", code", "kache_request_total{source=\"upstream\", code"),
            "kache_request_total: kache exports no such metric",
        ),
        (expr.replace("source=\"upstream\", code", "sorce=\"upstream\", code"), "kache_requests_total: has no label sorce"),
        (expr.replace("without (verb, resource", "without (verbs, resource"), "verbs: no metric of kache's has this label"),
        (expr.replacen("rate(", "rat(", 1), "rat: not a PromQL function"),
    ] {
        assert_ne!(&change, expr, "{expected}: the change applies");
        let found = problems(&change, &exported).join("\n");
        assert!(found.contains(expected), "{expected:?} among {found:?}");
    }
}

#[test]
fn the_prometheus_rule_holds_exactly_the_rules_file_s_rules() {
    let (plain, rule) = (yaml(RULES), yaml(PROMETHEUS_RULE));
    assert_eq!(rule["kind"], "PrometheusRule");
    assert_eq!(rule["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(rule["spec"]["groups"], plain["groups"], "{PROMETHEUS_RULE}'s spec.groups and {RULES}'s groups differ");
}

/// `promtool check rules` of a rules document.
fn promtool(groups: &Value) -> Option<std::process::Output> {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("rules.json");
    // JSON is YAML: promtool reads it as it reads the file.
    std::fs::write(&file, serde_json::json!({ "groups": groups }).to_string()).expect("a rules file");
    match Command::new("promtool").arg("check").arg("rules").arg(&file).output() {
        Ok(out) => Some(out),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => panic!("promtool: {e}"),
    }
}

#[test]
fn promtool_accepts_the_rules_file_and_the_prometheus_rule() {
    for (what, groups) in [(RULES, yaml(RULES)["groups"].clone()), (PROMETHEUS_RULE, yaml(PROMETHEUS_RULE)["spec"]["groups"].clone())] {
        let Some(out) = promtool(&groups) else {
            assert!(std::env::var_os("CI").is_none(), "promtool is not installed (.ci/run installs it)");
            println!("promtool is not installed: {what} not checked by it");
            return;
        };
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        println!("{what}: {said}");
        assert!(out.status.success(), "promtool check rules {what}:\n{said}");
    }
    // ... and refuses a broken one.
    let mut broken = yaml(RULES)["groups"].clone();
    broken[0]["rules"][0]["expr"] = "kache_resource_ready ==".into();
    let out = promtool(&broken).expect("promtool ran above");
    assert!(!out.status.success(), "promtool accepted {broken}");
}
