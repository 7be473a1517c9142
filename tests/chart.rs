//! The Helm chart in `charts/kache` and the kustomize manifests in
//! `config/deploy/` do not drift: for each shape — the defaults and the
//! base, a second tier and `overlays/shared`'s, the sidecar and
//! `overlays/sidecar`, monitoring and the base with
//! `components/monitoring` — `helm template` renders the objects `kubectl
//! kustomize` builds, field for field. So every check `cargo test --test
//! manifests` makes of the kustomize builds holds for the chart too.
//!
//! What is allowed to differ, and only this: the labels Helm puts on every
//! object to track its release (`app.kubernetes.io/instance`, `/version`,
//! `/managed-by`, `helm.sh/chart`; never on a selector or a pod template),
//! and the kustomize builds' Namespace, which a chart leaves to `helm
//! install --namespace NS --create-namespace`.
//!
//! `helm lint --strict` passes for every shape, and the values schema
//! documents every value and refuses what it does not know.
//!
//! Needs `helm` (.ci/run installs it) and kubectl (for `kubectl kustomize`).
//! Where helm is missing the tests say so and pass — except under
//! `CI=true`, where its absence fails them.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The Kubernetes version charts are rendered for (the chart needs 1.31+;
/// helm's default without a cluster is older).
const KUBE_VERSION: &str = "1.36.2";

/// The labels Helm adds to track a release, which kustomize has no counterpart for.
const RELEASE_LABELS: [&str; 4] =
    ["app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by", "helm.sh/chart"];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn chart() -> PathBuf {
    repo().join("charts/kache")
}

/// Whether helm is here; if not, whether that fails the test (CI) or skips it.
fn helm_present() -> bool {
    common::tool_present("helm", "version", ".ci/run shows how to get it", "the chart is not tested")
}

/// `helm ARGS`: stdout, or stderr as the error.
fn helm(args: &[&str]) -> Result<String, String> {
    let out = Command::new("helm").args(args).output().expect("helm runs");
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).expect("UTF-8"))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// `helm template RELEASE charts/kache --namespace NAMESPACE -f VALUES…`.
fn template(release: &str, namespace: &str, values: &[&str]) -> Result<String, String> {
    let chart = chart();
    let mut args =
        vec!["template", release, chart.to_str().expect("a UTF-8 path"), "--namespace", namespace, "--kube-version", KUBE_VERSION];
    let files: Vec<String> = values.iter().map(|v| chart.join(v).to_string_lossy().into_owned()).collect();
    for file in &files {
        args.extend(["-f", file]);
    }
    helm(&args)
}

/// `kubectl kustomize DIR`.
fn kustomize(dir: &Path) -> String {
    let out = Command::new("kubectl").arg("kustomize").arg(dir).output().expect("kubectl is installed");
    assert!(out.status.success(), "kubectl kustomize {}: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The base with the monitoring component in namespace `kache`, as
/// `components/monitoring`'s kustomization says an operator includes it.
fn kustomize_base_with_monitoring() -> String {
    let dir = tempfile::tempdir().expect("a temp dir");
    let deploy = repo().join("config/deploy");
    // kustomize takes no absolute paths: from the temp dir up to `/`, then down.
    let up = Path::new(&"../".repeat(dir.path().components().count() - 1)).join(deploy.strip_prefix("/").expect("absolute"));
    let kustomization = format!(
        "resources: [{}]\ncomponents: [{}]\nnamespace: kache\n",
        up.join("base").display(),
        up.join("components/monitoring").display()
    );
    std::fs::write(dir.path().join("kustomization.yaml"), kustomization).expect("a kustomization");
    kustomize(dir.path())
}

/// `Kind namespace/name`.
fn key(object: &Value) -> String {
    let meta = &object["metadata"];
    format!(
        "{} {}/{}",
        object["kind"].as_str().unwrap_or("?"),
        meta["namespace"].as_str().unwrap_or(""),
        meta["name"].as_str().unwrap_or("?")
    )
}

/// The objects of a multi-document YAML stream, by [`key`], without what may differ.
fn objects(yaml: &str) -> BTreeMap<String, Value> {
    let documents: Vec<Value> = serde_saphyr::from_multiple(yaml).unwrap_or_else(|e| panic!("{e}:\n{yaml}"));
    documents
        .into_iter()
        .filter(|o| !o.is_null() && o["kind"] != "Namespace")
        .map(|mut o| {
            if let Some(labels) = o["metadata"]["labels"].as_object_mut() {
                labels.retain(|k, _| !RELEASE_LABELS.contains(&k.as_str()));
                if labels.is_empty() {
                    o["metadata"].as_object_mut().expect("metadata").remove("labels");
                }
            }
            (key(&o), o)
        })
        .collect()
}

/// Where `a` and `b` differ, by path.
fn differences(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) => differences(&format!("{path}.{k}"), v, w, out),
                    None => out.push(format!("{path}.{k}: only in the chart's")),
                }
            }
            out.extend(y.keys().filter(|k| !x.contains_key(*k)).map(|k| format!("{path}.{k}: only in kustomize's")));
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                differences(&format!("{path}[{i}]"), v, w, out);
            }
        }
        _ if a == b => {}
        _ => out.push(format!("{path}: the chart's {a} is kustomize's {b}")),
    }
}

/// Everything that differs between the chart's objects and kustomize's.
fn drift(chart: &BTreeMap<String, Value>, kustomize: &BTreeMap<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    for (key, object) in chart {
        match kustomize.get(key) {
            Some(other) => differences(key, object, other, &mut out),
            None => out.push(format!("{key}: only the chart renders it")),
        }
    }
    out.extend(kustomize.keys().filter(|k| !chart.contains_key(*k)).map(|k| format!("{k}: only kustomize builds it")));
    out
}

/// One shape of the chart: `helm template`'s release, namespace and values
/// files, and the objects kustomize builds for the same shape.
struct Shape {
    name: &'static str,
    release: &'static str,
    namespace: &'static str,
    values: Vec<&'static str>,
    kustomized: BTreeMap<String, Value>,
}

impl Shape {
    /// What `helm template` renders for it, without what may differ.
    fn rendered(&self) -> BTreeMap<String, Value> {
        objects(&template(self.release, self.namespace, &self.values).unwrap_or_else(|e| panic!("{}: helm template: {e}", self.name)))
    }
}

fn shapes() -> Vec<Shape> {
    let deploy = repo().join("config/deploy");
    let base = objects(&kustomize(&deploy.join("base")));
    let second_tier: BTreeMap<String, Value> =
        objects(&kustomize(&deploy.join("overlays/shared"))).into_iter().filter(|(k, _)| !base.contains_key(k)).collect();
    let shape = |name, release, namespace, values, kustomized| Shape { name, release, namespace, values, kustomized };
    vec![
        shape("the defaults, as the base", "kache", "kache", vec![], base),
        shape("a second tier, as overlays/shared's", "kache-tier2", "kache", vec!["ci/second-tier-values.yaml"], second_tier),
        shape(
            "the sidecar, as overlays/sidecar",
            "example-app",
            "kache-example",
            vec!["ci/sidecar-values.yaml"],
            objects(&kustomize(&deploy.join("overlays/sidecar"))),
        ),
        shape(
            "monitoring, as the base with components/monitoring",
            "kache",
            "kache",
            vec!["ci/monitoring-values.yaml"],
            objects(&kustomize_base_with_monitoring()),
        ),
    ]
}

#[test]
fn every_shape_of_the_chart_renders_the_objects_kustomize_builds() {
    if !helm_present() {
        return;
    }
    for shape in shapes() {
        assert!(!shape.kustomized.is_empty(), "{}: kustomize built nothing", shape.name);
        let drift = drift(&shape.rendered(), &shape.kustomized);
        assert!(drift.is_empty(), "{}: the chart and kustomize differ:\n{}", shape.name, drift.join("\n"));
    }
}

#[test]
fn the_comparison_fails_a_chart_that_drifted() {
    if !helm_present() {
        return;
    }
    let defaults = shapes().swap_remove(0);
    let (rendered, kustomized) = (defaults.rendered(), &defaults.kustomized);
    assert!(drift(&rendered, kustomized).is_empty());
    let mut drifted = rendered.clone();
    let deployment = drifted.get_mut("Deployment kache/kache").expect("the Deployment");
    deployment["spec"]["template"]["spec"]["containers"][0]["args"][1] = "--listen=0.0.0.0:9443".into();
    deployment["metadata"]["labels"]["app.kubernetes.io/part-of"] = "x".into();
    drifted.remove("PodDisruptionBudget kache/kache");
    let found = drift(&drifted, kustomized).join("\n");
    for expected in [
        r#"Deployment kache/kache.spec.template.spec.containers[0].args[1]: the chart's "--listen=0.0.0.0:9443" is kustomize's "--listen=0.0.0.0:8443""#,
        "Deployment kache/kache.metadata.labels.app.kubernetes.io/part-of: only in the chart's",
        "PodDisruptionBudget kache/kache: only kustomize builds it",
    ] {
        assert!(found.contains(expected), "expected {expected:?} in:\n{found}");
    }
}

#[test]
fn helm_lint_passes_for_every_shape() {
    if !helm_present() {
        return;
    }
    let chart = chart();
    for values in [None, Some("ci/second-tier-values.yaml"), Some("ci/sidecar-values.yaml"), Some("ci/monitoring-values.yaml")] {
        let mut args = vec!["lint", "--strict", chart.to_str().expect("a UTF-8 path")];
        let file = values.map(|v| chart.join(v).to_string_lossy().into_owned());
        if let Some(file) = &file {
            args.extend(["-f", file]);
        }
        let out = helm(&args).unwrap_or_else(|e| panic!("helm {args:?}: {e}"));
        assert!(out.contains("0 chart(s) failed"), "helm {args:?}:\n{out}");
    }
}

/// The values schema: every value in values.yaml has a type and a
/// description there, it names nothing values.yaml lacks, and helm refuses a
/// value it does not know or of the wrong type, naming it.
#[test]
fn the_values_schema_documents_every_value_and_refuses_unknown_or_mistyped_ones() {
    fn walk(path: &str, value: &Value, schema: &Value, out: &mut Vec<String>) {
        let (Some(values), Some(properties)) = (value.as_object(), schema["properties"].as_object()) else { return };
        for (key, v) in values {
            match properties.get(key) {
                None => out.push(format!("{path}.{key}: not in the schema")),
                Some(s) => {
                    if s["description"].as_str().is_none_or(str::is_empty) || s["type"].is_null() {
                        out.push(format!("{path}.{key}: no type or description"));
                    }
                    walk(&format!("{path}.{key}"), v, s, out);
                }
            }
        }
        out.extend(properties.keys().filter(|k| !values.contains_key(*k)).map(|k| format!("{path}.{k}: not in values.yaml")));
        if schema["additionalProperties"] != false {
            out.push(format!("{path}: takes keys the schema does not name"));
        }
    }
    let values: Value = serde_saphyr::from_str(&std::fs::read_to_string(chart().join("values.yaml")).expect("values.yaml")).expect("YAML");
    let schema: Value = serde_json::from_slice(&std::fs::read(chart().join("values.schema.json")).expect("the schema")).expect("JSON");
    let mut problems = Vec::new();
    walk("", &values, &schema, &mut problems);
    assert!(problems.is_empty(), "{}", problems.join("\n"));

    if !helm_present() {
        return;
    }
    let chart = chart();
    for (set, says) in [
        ("shared.replicaz=3", "Additional property replicaz is not allowed"),
        ("mode=sidecarr", "mode must be one of the following"),
        ("shared.replicas=two", "Invalid type. Expected: integer"),
    ] {
        let args = ["template", "kache", chart.to_str().expect("a UTF-8 path"), "--kube-version", KUBE_VERSION, "--set", set];
        let err = helm(&args).expect_err(set);
        assert!(err.contains(says), "--set {set}: {err}");
    }
}
