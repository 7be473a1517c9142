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
use common::promql::{exported, names};
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
