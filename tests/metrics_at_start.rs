//! Every metric the alert rules and the dashboard name is on the `/metrics`
//! of a kache just started: its first scrape, before it answered any
//! request or heard from the apiserver (a counter of what has not happened
//! yet is there at zero). A series that appears only later leaves an
//! alert's expression and a panel empty until then, and hides a typo.
//!
//! The names are read from the rules (`config/alerts/kache-rules.yaml`, the
//! chart's copy and the PrometheusRule) and the dashboard
//! (`config/grafana/kache-dashboard.json`: every panel's `expr` and the
//! `label_values` of its variables); `tests/alerts.rs` checks their labels
//! against a kache that has served.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use common::Process;
use common::promql::{exported, names};
use serde_json::Value;

fn read(relative: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// `(where, expression)` of every rule of the rule files.
fn rule_expressions() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (file, groups) in [
        ("config/alerts/kache-rules.yaml", &[][..]),
        ("charts/kache/files/kache-rules.yaml", &[][..]),
        ("config/deploy/components/monitoring/prometheusrule.yaml", &["spec"][..]),
    ] {
        let doc: Value = serde_saphyr::from_str(&read(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let groups = groups.iter().fold(&doc, |v, k| &v[*k])["groups"].as_array().unwrap_or_else(|| panic!("{file}: no groups"));
        for rule in groups.iter().flat_map(|g| g["rules"].as_array().expect("a group's rules")) {
            let name = rule["alert"].as_str().or(rule["record"].as_str()).unwrap_or("?");
            out.push((format!("{file}: {name}"), rule["expr"].as_str().expect("expr").to_string()));
        }
    }
    out
}

/// `(where, expression)` of every query of the dashboard: the panels'
/// `expr`s, Grafana's interval variables made a duration, and the metric
/// of each `label_values(METRIC, LABEL)` variable.
fn dashboard_expressions() -> Vec<(String, String)> {
    const FILE: &str = "config/grafana/kache-dashboard.json";
    fn walk(v: &Value, title: &str, out: &mut Vec<(String, String)>) {
        match v {
            Value::Object(o) => {
                let title = o.get("title").and_then(Value::as_str).unwrap_or(title);
                for (k, v) in o {
                    match (k.as_str(), v.as_str()) {
                        ("expr", Some(expr)) => {
                            let expr = ["$__rate_interval", "$__interval", "$__range"]
                                .iter()
                                .fold(expr.to_string(), |e, var| e.replace(var, "5m"));
                            out.push((format!("{FILE}: {title}"), expr));
                        }
                        ("query", Some(q)) if q.starts_with("label_values(") => {
                            let metric = q["label_values(".len()..].split(',').next().expect("a metric");
                            out.push((format!("{FILE}: variable"), metric.trim().to_string()));
                        }
                        _ => walk(v, title, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, title, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(&serde_json::from_str(&read(FILE)).expect("the dashboard is JSON"), "", &mut out);
    out
}

#[test]
fn every_metric_the_rules_and_the_dashboard_name_is_exported_from_the_start() {
    let (rules, dashboard) = (rule_expressions(), dashboard_expressions());
    assert!(rules.len() >= 18 && dashboard.len() >= 20, "the rules' and the dashboard's queries: {rules:?} {dashboard:?}");
    let named: BTreeSet<(String, String)> = rules
        .iter()
        .chain(&dashboard)
        .flat_map(|(at, expr)| {
            let names = names(expr).unwrap_or_else(|e| panic!("{at}: {e}"));
            names.selectors.into_iter().map(|(metric, _)| (metric, at.clone())).collect::<Vec<_>>()
        })
        .collect();

    // Audit events are counted per backend: a kache with one, as the alert is about them.
    let sim = Process::sim(&["--pods", "20"]);
    let dir = tempfile::tempdir().unwrap();
    let (policy, log) = (dir.path().join("policy.yaml"), dir.path().join("audit.log"));
    std::fs::write(&policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n").unwrap();
    let audit = ["--audit-policy-file", policy.to_str().unwrap(), "--audit-log-path", log.to_str().unwrap()];
    let kache = Process::kache(&sim.url, &[&["--resources", "pods,configmaps"][..], &audit].concat());
    // Its first /metrics once it serves its API (while it starts, a 503 counts nothing).
    let first = common::eventually(Duration::from_secs(30), "kache serving its API", || {
        let r = kache.get("/metrics");
        (r.status == 200).then_some(r)
    });
    let exported = exported(&first.text());

    let missing: Vec<String> =
        named.iter().filter(|(metric, _)| !exported.contains_key(metric)).map(|(metric, at)| format!("{metric} ({at})")).collect();
    assert!(missing.is_empty(), "not on the first /metrics of a kache just started:\n{}\n\nit had:\n{}", missing.join("\n"), first.text());
}
