//! The deployment manifests in `config/deploy/` are what they say. They are
//! kustomize roots — the base, the overlays, and each overlay with the
//! optional monitoring component — and each is checked as `kubectl
//! kustomize` builds it:
//!
//! - kubectl builds and takes every one: `kubectl kustomize`, then `kubectl
//!   apply --dry-run=client` against the simulator, whose discovery maps each
//!   object's kind (an unknown kind or version fails); every manifest file is
//!   in its directory's kustomization;
//! - every object is a Kubernetes 1.36 object by the API's own types
//!   (k8s-openapi, generated from kube-apiserver 1.36's OpenAPI schema): each
//!   object goes through its kind's type and back, and a field the schema
//!   does not have (a misspelling, a field at the wrong level) is dropped on
//!   the way and reported, as is a value of the wrong type or a kind the
//!   check does not know;
//! - every kache container is deployed as kache needs: flags `kache serve`
//!   knows, a non-loopback address only with client authentication,
//!   `/livez` and `/readyz` probes that reach its address, requests and
//!   limits, a non-root read-only locked-down container, a grace period
//!   longer than its drain, files under mounted volumes, and RBAC for what
//!   it caches (and, with client authentication, for reviews,
//!   impersonation and priority and fairness's FlowSchemas and levels); a
//!   kache whose upstream is a Service names one that exists;
//! - every kache container runs as production wants it: a `--memory-budget`
//!   leaving a quarter of its memory limit to what the budget does not
//!   count, JSON logs, a health and metrics listener on the pod network that
//!   the pod's `prometheus.io` annotations (and the optional PodMonitor)
//!   name, a `--state-dir` on a writable volume, and a PodDisruptionBudget
//!   for a Deployment of more than one replica.
//!
//! Why kubectl runs with `--validate=false`: its validation needs the
//! server's OpenAPI schemas, and the simulator serves no `/openapi/v2` and an
//! OpenAPI v3 without schemas that declares server-side field validation,
//! which a client-side dry run never reaches. With kubectl's default
//! `--validate=strict` a misspelled field passes silently; the schema check
//! here is what fails it.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::Process;
use serde_json::Value;

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("config/deploy")
}

/// The kustomize roots that build on their own, relative to `config/deploy`
/// (components are built into the overlays by [`builds`]), sorted.
fn kustomizations() -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.file_name().is_some_and(|n| n == "kustomization.yaml") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&deploy_dir(), &mut files);
    let mut roots: Vec<String> = files
        .iter()
        .filter(|f| yaml_value(f)["kind"] == "Kustomization")
        .map(|f| f.parent().unwrap().strip_prefix(deploy_dir()).unwrap().to_string_lossy().into_owned())
        .collect();
    roots.sort();
    roots
}

/// The optional component every overlay can take, and the namespace each overlay's objects live in.
const MONITORING: &str = "components/monitoring";
const OVERLAY_NAMESPACES: [(&str, &str); 2] = [("overlays/shared", "kache"), ("overlays/sidecar", "kache-example")];

fn yaml_value(path: &Path) -> Value {
    serde_saphyr::from_str(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `kubectl kustomize DIR`.
fn kustomize(dir: &Path) -> String {
    let out = std::process::Command::new("kubectl").arg("kustomize").arg(dir).output().expect("kubectl is installed");
    assert!(out.status.success(), "kubectl kustomize {}: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 YAML")
}

/// What each kustomize root builds, by name: every root of
/// [`kustomizations`], and each overlay with the monitoring component (a
/// kustomization of the operator's own, as the component's documents it).
fn builds() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = kustomizations().into_iter().map(|k| (k.clone(), kustomize(&deploy_dir().join(&k)))).collect();
    for (overlay, namespace) in OVERLAY_NAMESPACES {
        let dir = tempfile::tempdir().expect("a temp dir");
        // kustomize takes no absolute paths: from the temp dir up to `/`, then down.
        let deploy = Path::new(&"../".repeat(dir.path().components().count() - 1)).join(deploy_dir().strip_prefix("/").expect("absolute"));
        let (overlay_dir, component_dir) = (deploy.join(overlay), deploy.join(MONITORING));
        let kustomization =
            format!("resources: [{}]\ncomponents: [{}]\nnamespace: {namespace}\n", overlay_dir.display(), component_dir.display());
        std::fs::write(dir.path().join("kustomization.yaml"), kustomization).expect("a kustomization");
        out.push((format!("{overlay} + {MONITORING}"), kustomize(dir.path())));
    }
    out
}

/// The simulator as kubectl's server: it serves every built-in kind;
/// prometheus-operator's kinds are served as custom resources with their
/// real group, version, kind and scope, so that discovery maps them as an
/// apiserver's does.
fn server() -> Process {
    Process::sim(&[
        "--crd",
        "podmonitors.monitoring.coreos.com/v1=PodMonitor",
        "--crd",
        "prometheusrules.monitoring.coreos.com/v1=PrometheusRule",
    ])
}

/// `kubectl apply --dry-run=client` of `yaml`: its output, or its error.
fn dry_run(server: &Process, yaml: &str) -> Result<String, String> {
    let out = server.kubectl_stdin(&["apply", "--dry-run=client", "--validate=false", "-f", "-"], Some(yaml));
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The objects of `yaml` as kubectl reads them (as JSON, nothing added).
fn objects(server: &Process, yaml: &str) -> Vec<Value> {
    let out = server.kubectl_stdin(&["create", "--dry-run=client", "--validate=false", "-o", "json", "-f", "-"], Some(yaml));
    assert!(out.status.success(), "kubectl create --dry-run=client: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::Deserializer::from_slice(&out.stdout).into_iter::<Value>().map(|o| o.expect("kubectl prints JSON")).collect()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `Kind namespace/name`, for messages.
fn describe(object: &Value) -> String {
    let meta = &object["metadata"];
    let name = meta["name"].as_str().unwrap_or("?");
    match meta["namespace"].as_str() {
        Some(ns) => format!("{} {ns}/{name}", object["kind"].as_str().unwrap_or("?")),
        None => format!("{} {name}", object["kind"].as_str().unwrap_or("?")),
    }
}

// ---------------------------------------------------------------------------
// The schema check.

/// `object` through the API type `T` and back to JSON.
fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(object: &Value) -> Result<Value, String> {
    let typed: T = serde_json::from_value(object.clone()).map_err(|e| e.to_string())?;
    serde_json::to_value(typed).map_err(|e| e.to_string())
}

/// Where `original` and its round trip differ: fields the schema dropped, values it changed.
fn differences(path: &str, original: &Value, typed: &Value, out: &mut Vec<String>) {
    match (original, typed) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                match b.get(k) {
                    Some(w) => differences(&format!("{path}.{k}"), v, w, out),
                    None => out.push(format!("{path}.{k}: no such field")),
                }
            }
            out.extend(b.keys().filter(|k| !a.contains_key(*k)).map(|k| format!("{path}.{k}: added by the type")));
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                differences(&format!("{path}[{i}]"), v, w, out);
            }
        }
        _ if original == typed => {}
        _ => out.push(format!("{path}: {original} reads as {typed}")),
    }
}

/// Whether `object` is a valid object of its kind by the 1.36 API's types.
fn schema_check(object: &Value) -> Result<(), String> {
    use k8s_openapi::api::{apps::v1 as apps, core::v1 as core, policy::v1 as policy, rbac::v1 as rbac};
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let typed = match (api_version, kind) {
        ("v1", "Namespace") => round_trip::<core::Namespace>(object),
        ("v1", "ServiceAccount") => round_trip::<core::ServiceAccount>(object),
        ("v1", "ConfigMap") => round_trip::<core::ConfigMap>(object),
        ("v1", "Secret") => round_trip::<core::Secret>(object),
        ("v1", "Service") => round_trip::<core::Service>(object),
        ("apps/v1", "Deployment") => round_trip::<apps::Deployment>(object),
        ("apps/v1", "DaemonSet") => round_trip::<apps::DaemonSet>(object),
        ("policy/v1", "PodDisruptionBudget") => round_trip::<policy::PodDisruptionBudget>(object),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => round_trip::<rbac::ClusterRole>(object),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => round_trip::<rbac::ClusterRoleBinding>(object),
        ("rbac.authorization.k8s.io/v1", "Role") => round_trip::<rbac::Role>(object),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => round_trip::<rbac::RoleBinding>(object),
        ("monitoring.coreos.com/v1", "PodMonitor" | "PrometheusRule") => return operator_fields(object),
        _ => Err(format!("{api_version} {kind} is not a kind this check knows")),
    };
    let typed = typed.map_err(|e| format!("{}: {e}", describe(object)))?;
    let mut out = Vec::new();
    differences("", object, &typed, &mut out);
    if out.is_empty() { Ok(()) } else { Err(format!("{}: {}", describe(object), out.join("; "))) }
}

/// prometheus-operator's kinds, which k8s-openapi does not have: at each
/// level the manifests use, only fields its CRDs have there (a selection).
fn operator_fields(object: &Value) -> Result<(), String> {
    const FIELDS: &[(&str, &[&str])] = &[
        ("", &["apiVersion", "kind", "metadata", "spec"]),
        (".metadata", &["name", "namespace", "labels", "annotations"]),
        (".spec", &["selector", "namespaceSelector", "podMetricsEndpoints", "jobLabel", "podTargetLabels", "sampleLimit", "groups"]),
        (
            ".spec.podMetricsEndpoints[]",
            &["port", "portNumber", "path", "scheme", "interval", "scrapeTimeout", "honorLabels", "relabelings", "metricRelabelings"],
        ),
        (".spec.groups[]", &["name", "interval", "limit", "rules"]),
        (".spec.groups[].rules[]", &["alert", "record", "expr", "for", "keep_firing_for", "labels", "annotations"]),
    ];
    fn walk(path: &str, v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                if let Some((_, known)) = FIELDS.iter().find(|(p, _)| *p == path) {
                    out.extend(map.keys().filter(|k| !known.contains(&k.as_str())).map(|k| format!("{path}.{k}: no such field")));
                }
                for (k, w) in map {
                    walk(&format!("{path}.{k}"), w, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|w| walk(&format!("{path}[]"), w, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk("", object, &mut out);
    if object["kind"] == "PodMonitor" && object["spec"]["groups"].is_object()
        || object["kind"] == "PrometheusRule" && !object["spec"]["selector"].is_null()
    {
        out.push("a field of the other kind".into());
    }
    if out.is_empty() { Ok(()) } else { Err(format!("{}: {}", describe(object), out.join("; "))) }
}

// ---------------------------------------------------------------------------
// What kache needs.

/// The image every kache container runs (a placeholder, see config/README.md).
const IMAGE: &str = "ghcr.io/kache-dev/kache:";

/// The extra keys kube-apiserver (1.30+) puts on service account users;
/// kache impersonates a client's extras key by key (`userextras/KEY`).
const SERVICE_ACCOUNT_EXTRAS: [&str; 5] = [
    "authentication.kubernetes.io/credential-id",
    "authentication.kubernetes.io/node-name",
    "authentication.kubernetes.io/node-uid",
    "authentication.kubernetes.io/pod-name",
    "authentication.kubernetes.io/pod-uid",
];

/// Where the kubelet mounts the service account token, unless turned off.
const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount/";

/// Seconds a container needs after its drain to exit.
const EXIT_MARGIN: u64 = 5;

/// `kache serve --help`: the flags it takes and their defaults.
struct Help(String);

impl Help {
    fn new() -> Help {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_kache")).args(["serve", "--help"]).output().expect("kache runs");
        assert!(out.status.success());
        Help(String::from_utf8(out.stdout).expect("UTF-8 help"))
    }

    fn flags(&self) -> BTreeSet<String> {
        self.0
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .filter(|w| w.starts_with("--") && w.len() > 2)
            .map(str::to_string)
            .collect()
    }

    /// A flag's `[default: …]`.
    fn default(&self, flag: &str) -> Option<String> {
        let at = self.0.lines().position(|l| l.trim_start().starts_with(&format!("{flag} ")))?;
        let text: String = self.0.lines().skip(at).take_while(|l| !l.trim_start().starts_with("--") || l.contains(flag)).collect();
        let rest = &text[text.find("[default: ")? + "[default: ".len()..];
        Some(rest[..rest.find(']')?].to_string())
    }
}

/// A container's arguments, as kache reads them.
struct Args(Vec<String>);

impl Args {
    /// `--name=value` or `--name value`.
    fn value(&self, name: &str) -> Option<&str> {
        self.0.iter().enumerate().find_map(|(i, a)| match a.strip_prefix(name)? {
            "" => self.0.get(i + 1).map(String::as_str),
            rest => rest.strip_prefix('='),
        })
    }

    fn has(&self, name: &str) -> bool {
        self.0.iter().any(|a| a == name || a.starts_with(&format!("{name}=")))
    }
}

/// `(group, resource)` of a `--resources` entry: `pods` (a bare name is
/// taken as the core group's), `deployments.apps`, `apps/v1/deployments`,
/// `v1/pods`, or `*`.
fn group_resource(entry: &str) -> (String, String) {
    let parts: Vec<&str> = entry.split('/').collect();
    match parts.as_slice() {
        [group, _, resource] => (group.to_string(), resource.to_string()),
        [_, resource] => (String::new(), resource.to_string()),
        _ if entry == "*" => ("*".into(), "*".into()),
        _ => match entry.split_once('.') {
            Some((resource, group)) => (group.to_string(), resource.to_string()),
            None => (String::new(), entry.to_string()),
        },
    }
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

/// Whether RBAC `rules` allow `verb` on every object of `group`/`resource`.
fn allows(rules: &[&Value], verb: &str, group: &str, resource: &str) -> bool {
    let holds = |list: Vec<&str>, v: &str| list.iter().any(|x| *x == "*" || *x == v);
    rules.iter().any(|r| {
        holds(strings(&r["verbs"]), verb)
            && holds(strings(&r["apiGroups"]), group)
            && holds(strings(&r["resources"]), resource)
            && strings(&r["resourceNames"]).is_empty()
    })
}

/// The rules bound cluster-wide to service account `namespace/name` by `objects`' ClusterRoleBindings.
fn cluster_rules<'a>(objects: &'a [Value], namespace: &str, name: &str) -> Vec<&'a Value> {
    let of_kind = |kind: &'static str| objects.iter().filter(move |o| o["kind"] == kind);
    of_kind("ClusterRoleBinding")
        .filter(|b| {
            b["subjects"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|s| s["kind"] == "ServiceAccount" && s["name"] == name && s["namespace"] == namespace)
        })
        .filter(|b| b["roleRef"]["kind"] == "ClusterRole")
        .filter_map(|b| of_kind("ClusterRole").find(|r| r["metadata"]["name"] == b["roleRef"]["name"]))
        .flat_map(|r| r["rules"].as_array().into_iter().flatten())
        .collect()
}

/// A container port number by number or name.
fn port_number(container: &Value, port: &Value) -> Option<u64> {
    port.as_u64().or_else(|| {
        let name = port.as_str()?;
        container["ports"].as_array()?.iter().find(|p| p["name"] == name)?["containerPort"].as_u64()
    })
}

/// Whether an address is a loopback one (the kubelet's probes, sent to the pod IP, cannot reach it).
fn is_loopback(address: &str) -> bool {
    address.starts_with("127.") || address.starts_with("[::1]") || address.starts_with("localhost:")
}

/// What's wrong with one of `probe`'s: it must GET `path` on an address of
/// kache's the kubelet reaches — its API listener (`listen`, `tls`) or its
/// probe listener (`health`, plain HTTP) — or fetch it from inside.
fn probe_problem(probe: &Value, path: &str, container: &Value, listen: &str, tls: bool, health: Option<&str>) -> Option<String> {
    let scheme = if tls { "https" } else { "http" };
    let port = |address: &str| address.rsplit_once(':').map_or("", |(_, p)| p).to_string();
    if probe.is_null() {
        return Some("missing".into());
    }
    if let Some(get) = probe.get("httpGet") {
        let reachable: Vec<(&str, String)> = [(Some(listen), if tls { "HTTPS" } else { "HTTP" }), (health, "HTTP")]
            .into_iter()
            .filter_map(|(address, scheme)| Some((scheme, port(address.filter(|a| !is_loopback(a))?))))
            .collect();
        let got_scheme = get["scheme"].as_str().unwrap_or("HTTP");
        let got_port = port_number(container, &get["port"]).map(|p| p.to_string()).unwrap_or_default();
        let ok = get["path"] == path && reachable.iter().any(|(s, p)| *s == got_scheme && *p == got_port);
        return (!ok).then(|| format!("GETs {got_scheme} {} on port {got_port}, not {path} on any of {reachable:?}", get["path"]));
    }
    // An exec probe fetches the URL it names (a loopback address the kubelet cannot reach).
    let url = format!("{scheme}://{listen}{path}");
    let command = strings(&probe["exec"]["command"]);
    (!command.contains(&url.as_str())).then(|| format!("{command:?} does not fetch {url}"))
}

/// Everything wrong with the kache containers among `objects` (every
/// manifest's objects: RBAC and Services are looked up across them).
fn kache_problems(objects: &[Value], help: &Help) -> Vec<String> {
    let flags = help.flags();
    let mut problems = Vec::new();
    for object in objects.iter().filter(|o| matches!(o["kind"].as_str(), Some("Deployment" | "DaemonSet"))) {
        let pod = &object["spec"]["template"]["spec"];
        let namespace = object["metadata"]["namespace"].as_str().unwrap_or("default");
        let containers = ["initContainers", "containers"].iter().flat_map(|k| pod[*k].as_array().into_iter().flatten());
        for c in containers.filter(|c| c["image"].as_str().is_some_and(|i| i.starts_with(IMAGE))) {
            let mut problem = |p: String| problems.push(format!("{} container {}: {p}", describe(object), c["name"]));
            let args = Args(strings(&c["args"]).into_iter().map(str::to_string).collect());
            if args.0.first().map(String::as_str) != Some("serve") || !c["command"].is_null() {
                problem("does not run `kache serve` (args must start with `serve`, the image's entrypoint is kache)".into());
            }
            for a in args.0.iter().filter(|a| a.starts_with("--")) {
                let name = a.split('=').next().unwrap_or_default();
                if !flags.contains(name) {
                    problem(format!("`kache serve` has no flag {name}"));
                }
            }

            // Where it listens, and who may connect.
            let listen = args.value("--listen").map(str::to_string).or_else(|| help.default("--listen")).unwrap_or_default();
            let authenticated = args.has("--token-review") || args.has("--client-ca-file");
            if !is_loopback(&listen) && !authenticated {
                problem(format!("--listen={listen} without --token-review or --client-ca-file: kache refuses to start"));
            }
            let tls = args.has("--tls-cert-file");
            if args.has("--client-ca-file") && !tls {
                problem("--client-ca-file needs --tls-cert-file".into());
            }
            for (kind, path) in [("livenessProbe", "/livez"), ("readinessProbe", "/readyz")] {
                if let Some(p) = probe_problem(&c[kind], path, c, &listen, tls, args.value("--health-listen")) {
                    problem(format!("{kind}: {p}"));
                }
            }

            // Resources and a locked-down container.
            for key in ["requests", "limits"] {
                for resource in ["cpu", "memory"] {
                    if c["resources"][key][resource].is_null() {
                        problem(format!("no {key}.{resource}"));
                    }
                }
            }
            let context = &c["securityContext"];
            if context["runAsNonRoot"] != true && pod["securityContext"]["runAsNonRoot"] != true {
                problem("may run as root (runAsNonRoot)".into());
            }
            if context["readOnlyRootFilesystem"] != true {
                problem("writable root filesystem".into());
            }
            if context["allowPrivilegeEscalation"] != false {
                problem("allows privilege escalation".into());
            }
            if !strings(&context["capabilities"]["drop"]).contains(&"ALL") {
                problem("capabilities not dropped (drop: [ALL])".into());
            }

            // What production wants: a memory budget within the limit, JSON
            // logs, metrics Prometheus reaches, state for warm restarts.
            let limit = c["resources"]["limits"]["memory"].as_str().and_then(mebibytes);
            match (args.value("--memory-budget").and_then(|b| b.parse::<u64>().ok()).filter(|b| *b > 0), limit) {
                (None, _) => {
                    problem("no --memory-budget: over its memory limit kache is OOM-killed instead of shedding history and lists".into())
                }
                (Some(budget), Some(limit)) if budget * 4 > limit * 3 => problem(format!(
                    "--memory-budget={budget} leaves less than a quarter of the {limit} MiB memory limit to what the budget does not count"
                )),
                _ => {}
            }
            if args.value("--log-format") != Some("json") {
                problem("logs as text: --log-format=json for the cluster's log pipeline".into());
            }
            match args.value("--health-listen") {
                None => problem("no --health-listen: Prometheus has no /metrics to scrape without credentials".into()),
                Some(address) if is_loopback(address) => {
                    problem(format!("--health-listen={address}: Prometheus cannot reach a loopback address"))
                }
                Some(address) => {
                    let port = address.rsplit_once(':').map_or("", |(_, p)| p);
                    if !c["ports"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|p| p["containerPort"].as_u64().map(|n| n.to_string()).as_deref() == Some(port))
                    {
                        problem(format!("--health-listen={address}: no container port {port}"));
                    }
                    let annotations = &object["spec"]["template"]["metadata"]["annotations"];
                    for (key, value) in [("prometheus.io/scrape", "true"), ("prometheus.io/port", port), ("prometheus.io/path", "/metrics")]
                    {
                        if annotations[key] != value {
                            problem(format!("pod annotation {key} is {}, not {value:?}", annotations[key]));
                        }
                    }
                }
            }
            match args.value("--state-dir") {
                None => problem("no --state-dir: every restart lists everything again".into()),
                Some(dir) => {
                    let mounts = c["volumeMounts"].as_array().into_iter().flatten();
                    let on = |m: &&Value| {
                        m["mountPath"]
                            .as_str()
                            .map(|p| p.trim_end_matches('/'))
                            .is_some_and(|p| dir == p || dir.starts_with(&format!("{p}/")))
                    };
                    match mounts.filter(on).max_by_key(|m| m["mountPath"].as_str().map_or(0, str::len)) {
                        None => problem(format!("--state-dir={dir} is on no volume, and the root filesystem is read-only")),
                        Some(m) if m["readOnly"] == true => problem(format!("--state-dir={dir}: its volume is mounted read-only")),
                        Some(m) => {
                            let volume = pod["volumes"].as_array().into_iter().flatten().find(|v| v["name"] == m["name"]);
                            let kept = ["emptyDir", "persistentVolumeClaim", "ephemeral"];
                            if !volume.is_some_and(|v| kept.iter().any(|k| !v[*k].is_null())) {
                                problem(format!("--state-dir={dir}: volume {} is not an emptyDir or a claim", m["name"]));
                            }
                        }
                    }
                }
            }

            // Time to drain on SIGTERM.
            let drain: u64 = args
                .value("--shutdown-drain")
                .map(str::to_string)
                .or_else(|| help.default("--shutdown-drain"))
                .and_then(|d| d.parse().ok())
                .unwrap_or(30);
            let pre_stop = c["lifecycle"]["preStop"]["sleep"]["seconds"].as_u64().unwrap_or(0);
            let grace = pod["terminationGracePeriodSeconds"].as_u64().unwrap_or(30);
            if grace < pre_stop + drain + EXIT_MARGIN {
                problem(format!("terminationGracePeriodSeconds {grace} < preStop {pre_stop} s + drain {drain} s + {EXIT_MARGIN} s"));
            }

            // Every file it reads is mounted.
            let mounts: Vec<&str> = c["volumeMounts"].as_array().into_iter().flatten().filter_map(|m| m["mountPath"].as_str()).collect();
            let automounted = pod["automountServiceAccountToken"] != false;
            for flag in
                ["--tls-cert-file", "--tls-private-key-file", "--client-ca-file", "--certificate-authority", "--token-file", "--kubeconfig"]
            {
                let Some(file) = args.value(flag) else { continue };
                let under = |dir: &str| file.starts_with(&format!("{}/", dir.trim_end_matches('/')));
                let mounted = mounts.iter().any(|m| under(m)) || (automounted && under(SERVICE_ACCOUNT_DIR));
                if !mounted {
                    problem(format!("{flag}={file} is under no volume mount"));
                }
            }

            // Its service account may do what kache does.
            let account = pod["serviceAccountName"].as_str().unwrap_or("default");
            let rules = cluster_rules(objects, namespace, account);
            let resources = args.value("--resources").map(str::to_string).or_else(|| help.default("--resources")).unwrap_or_default();
            let mut needs: Vec<(&str, String, String)> = Vec::new();
            for entry in resources.split(',') {
                let (group, resource) = group_resource(entry);
                needs.push(("list", group.clone(), resource.clone()));
                needs.push(("watch", group, resource));
            }
            // Priority and fairness, on by default with client authentication, follows the cluster's configuration.
            if authenticated && args.value("--enable-priority-and-fairness") != Some("false") {
                for resource in ["flowschemas", "prioritylevelconfigurations"] {
                    needs.push(("list", "flowcontrol.apiserver.k8s.io".into(), resource.into()));
                    needs.push(("watch", "flowcontrol.apiserver.k8s.io".into(), resource.into()));
                }
            }
            if authenticated {
                needs.push(("create", "authentication.k8s.io".into(), "tokenreviews".into()));
                needs.push(("create", "authorization.k8s.io".into(), "subjectaccessreviews".into()));
                for resource in ["users", "groups", "serviceaccounts"] {
                    needs.push(("impersonate", String::new(), resource.into()));
                }
                needs.push(("impersonate", "authentication.k8s.io".into(), "uids".into()));
                for key in SERVICE_ACCOUNT_EXTRAS {
                    needs.push(("impersonate", "authentication.k8s.io".into(), format!("userextras/{key}")));
                }
            }
            for (verb, group, resource) in needs {
                if !allows(&rules, verb, &group, &resource) {
                    problem(format!("service account {namespace}/{account} may not {verb} {resource} (group {group:?}) cluster-wide"));
                }
            }

            // An upstream Service exists, on that port.
            if let Some(server) = args.value("--server")
                && let Some((host, port)) = server.strip_prefix("https://").or_else(|| server.strip_prefix("http://")).map(|hp| {
                    let hp = hp.trim_end_matches('/');
                    hp.rsplit_once(':').map_or((hp, 443), |(h, p)| (h, p.parse().unwrap_or(0)))
                })
                && let Some(service) = host.strip_suffix(".svc").or_else(|| host.strip_suffix(".svc.cluster.local"))
            {
                let (name, ns) = service.split_once('.').unwrap_or((service, namespace));
                let found =
                    objects.iter().find(|o| o["kind"] == "Service" && o["metadata"]["name"] == name && o["metadata"]["namespace"] == ns);
                match found {
                    None => problem(format!("--server={server}: no Service {ns}/{name}")),
                    Some(s) if !s["spec"]["ports"].as_array().into_iter().flatten().any(|p| p["port"] == port) => {
                        problem(format!("--server={server}: Service {ns}/{name} has no port {port}"))
                    }
                    Some(_) => {}
                }
            }
        }
    }
    problems
}

/// A memory quantity (`1Gi`, `512Mi`, `2G`, `1073741824`) in whole MiB.
fn mebibytes(quantity: &str) -> Option<u64> {
    let (number, unit) = quantity.split_at(quantity.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(quantity.len()));
    let bytes = match unit {
        "" => 1.0,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    } * number.parse::<f64>().ok()?;
    Some((bytes / (1024.0 * 1024.0)) as u64)
}

/// Each workload running kache, with its kache containers.
fn kache_workloads(objects: &[Value]) -> impl Iterator<Item = (&Value, Vec<&Value>)> {
    objects.iter().filter(|o| matches!(o["kind"].as_str(), Some("Deployment" | "DaemonSet"))).filter_map(|o| {
        let pod = &o["spec"]["template"]["spec"];
        let containers: Vec<&Value> = ["initContainers", "containers"]
            .iter()
            .flat_map(|k| pod[*k].as_array().into_iter().flatten())
            .filter(|c| c["image"].as_str().is_some_and(|i| i.starts_with(IMAGE)))
            .collect();
        (!containers.is_empty()).then_some((o, containers))
    })
}

/// Every Deployment of more than one kache replica has a PodDisruptionBudget
/// in its namespace that selects its pods, so a drain takes one at a time.
fn disruption_problems(objects: &[Value]) -> Vec<String> {
    let covered = |d: &Value| {
        let labels = &d["spec"]["template"]["metadata"]["labels"];
        objects.iter().filter(|b| b["kind"] == "PodDisruptionBudget" && b["metadata"]["namespace"] == d["metadata"]["namespace"]).any(|b| {
            let selector = b["spec"]["selector"]["matchLabels"].as_object();
            selector.is_some_and(|m| !m.is_empty() && m.iter().all(|(k, v)| &labels[k] == v))
        })
    };
    kache_workloads(objects)
        .map(|(d, _)| d)
        .filter(|d| d["kind"] == "Deployment" && d["spec"]["replicas"].as_u64().unwrap_or(1) > 1 && !covered(d))
        .map(|d| {
            format!("{}: {} replicas and no PodDisruptionBudget: a drain may evict them all at once", describe(d), d["spec"]["replicas"])
        })
        .collect()
}

/// Every PodMonitor scrapes `/metrics` from a port that a kache container
/// of its namespace names, on which kache serves it (`--health-listen`).
fn monitoring_problems(objects: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    for monitor in objects.iter().filter(|o| o["kind"] == "PodMonitor") {
        let namespace = &monitor["metadata"]["namespace"];
        let health_ports: Vec<(&Value, String)> = kache_workloads(objects)
            .filter(|(w, _)| &w["metadata"]["namespace"] == namespace)
            .flat_map(|(_, containers)| containers)
            .filter_map(|c| {
                let args = Args(strings(&c["args"]).into_iter().map(str::to_string).collect());
                Some((c, args.value("--health-listen")?.rsplit_once(':')?.1.to_string()))
            })
            .collect();
        if health_ports.is_empty() {
            problems.push(format!("{}: no kache container in its namespace serves /metrics to scrape", describe(monitor)));
        }
        let endpoints = monitor["spec"]["podMetricsEndpoints"].as_array().cloned().unwrap_or_default();
        if endpoints.is_empty() {
            problems.push(format!("{}: no podMetricsEndpoints", describe(monitor)));
        }
        for e in &endpoints {
            if e["path"] != "/metrics" {
                problems.push(format!("{}: scrapes {}, not /metrics", describe(monitor), e["path"]));
            }
            for (c, port) in &health_ports {
                let named = c["ports"].as_array().into_iter().flatten().find(|p| p["name"] == e["port"]);
                if named.and_then(|p| p["containerPort"].as_u64()).map(|n| n.to_string()).as_ref() != Some(port) {
                    problems.push(format!(
                        "{}: kache container {} names no port {} for its --health-listen port {port}",
                        describe(monitor),
                        c["name"],
                        e["port"]
                    ));
                }
            }
        }
    }
    problems
}

/// Every Service routes to a named port of the pods of a Deployment in its namespace.
fn service_problems(objects: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    for service in objects.iter().filter(|o| o["kind"] == "Service") {
        let selector = service["spec"]["selector"].as_object().cloned().unwrap_or_default();
        let target = objects
            .iter()
            .filter(|o| o["kind"] == "Deployment" && o["metadata"]["namespace"] == service["metadata"]["namespace"])
            .find(|d| {
                let labels = &d["spec"]["template"]["metadata"]["labels"];
                !selector.is_empty() && selector.iter().all(|(k, v)| &labels[k] == v)
            });
        let Some(target) = target else {
            problems.push(format!("{}: selects no Deployment's pods", describe(service)));
            continue;
        };
        let containers: Vec<&Value> = target["spec"]["template"]["spec"]["containers"].as_array().into_iter().flatten().collect();
        for port in service["spec"]["ports"].as_array().into_iter().flatten() {
            let to = if port["targetPort"].is_null() { &port["port"] } else { &port["targetPort"] };
            if !containers.iter().any(|c| port_number(c, to).is_some()) {
                problems.push(format!("{}: targetPort {to} is no port of {}", describe(service), describe(target)));
            }
        }
    }
    problems
}

/// Each build's objects, after kubectl's dry run of it passed.
fn every_build(server: &Process) -> Vec<(String, Vec<Value>)> {
    builds()
        .into_iter()
        .map(|(name, yaml)| {
            let applied = dry_run(server, &yaml).unwrap_or_else(|e| panic!("{name}: kubectl apply --dry-run=client: {e}"));
            let objects = objects(server, &yaml);
            assert_eq!(
                applied.lines().filter(|l| l.ends_with(" created (dry run)")).count(),
                objects.len(),
                "{name}: kubectl applied every object\n{applied}"
            );
            (name, objects)
        })
        .collect()
}

/// The kache workloads each root builds.
const WORKLOADS: [(&str, usize); 3] = [("base", 1), ("overlays/shared", 2), ("overlays/sidecar", 1)];

#[test]
fn every_kustomization_builds_is_accepted_by_kubectl_and_valid_by_the_api_schema() {
    let roots = kustomizations();
    for (expected, _) in WORKLOADS {
        assert!(roots.iter().any(|r| r == expected), "config/deploy/{expected} is not a kustomization: {roots:?}");
    }
    // No manifest is left out of its directory's kustomization.
    for root in roots.iter().map(String::as_str).chain([MONITORING]) {
        let dir = deploy_dir().join(root);
        let listed: Vec<String> =
            strings(&yaml_value(&dir.join("kustomization.yaml"))["resources"]).into_iter().map(str::to_string).collect();
        for entry in std::fs::read_dir(&dir).expect("a directory") {
            let file = entry.expect("an entry").file_name().to_string_lossy().into_owned();
            if file.ends_with(".yaml") && file != "kustomization.yaml" {
                assert!(listed.contains(&file), "config/deploy/{root}/{file} is not in its kustomization's resources: {listed:?}");
            }
        }
    }
    let server = server();
    let builds = every_build(&server);
    assert_eq!(builds.len(), roots.len() + OVERLAY_NAMESPACES.len(), "each root, and each overlay with monitoring");
    for (name, objects) in builds {
        assert!(!objects.is_empty(), "{name}: no objects");
        let errors: Vec<String> = objects.iter().filter_map(|o| schema_check(o).err()).collect();
        assert!(errors.is_empty(), "{name}:\n{}", errors.join("\n"));
    }
}

#[test]
fn every_kache_container_is_deployed_as_kache_needs() {
    let server = server();
    let help = Help::new();
    for (name, objects) in every_build(&server) {
        let root = name.split(" + ").next().unwrap_or_default();
        let expected = WORKLOADS.iter().find(|(r, _)| *r == root).map_or(0, |(_, n)| *n);
        assert_eq!(kache_workloads(&objects).count(), expected, "{name}: kache workloads");
        if name.ends_with(MONITORING) {
            assert!(objects.iter().any(|o| o["kind"] == "PodMonitor") && objects.iter().any(|o| o["kind"] == "PrometheusRule"), "{name}");
            assert!(objects.iter().all(|o| o["metadata"]["namespace"].is_null() || o["metadata"]["namespace"] == objects_namespace(&name)));
        }
        let problems =
            [kache_problems(&objects, &help), service_problems(&objects), disruption_problems(&objects), monitoring_problems(&objects)]
                .concat();
        assert!(problems.is_empty(), "{name}:\n{}", problems.join("\n"));
    }
}

/// The namespace of an overlay built with monitoring.
fn objects_namespace(name: &str) -> &'static str {
    OVERLAY_NAMESPACES.iter().find(|(o, _)| name.starts_with(o)).map_or("", |(_, ns)| ns)
}

/// The sidecar manifest's kache container, in its Deployment.
fn kache(deployment: &mut Value) -> &mut serde_json::Map<String, Value> {
    deployment["spec"]["template"]["spec"]["initContainers"][0].as_object_mut().expect("the kache sidecar")
}

/// Removes kache's argument `arg`.
fn remove_arg(deployment: &mut Value, arg: &str) {
    let args = kache(deployment)["args"].as_array_mut().expect("args");
    let at = args.iter().position(|a| a == arg).unwrap_or_else(|| panic!("no argument {arg}"));
    args.remove(at);
}

/// Replaces kache's argument `from` with `to`.
fn set_arg(deployment: &mut Value, from: &str, to: &str) {
    let args = kache(deployment)["args"].as_array_mut().expect("args");
    let at = args.iter().position(|a| a == from).unwrap_or_else(|| panic!("no argument {from}"));
    args[at] = to.into();
}

/// The checks fail what they should: each change below to a valid manifest is caught.
#[test]
fn the_checks_fail_a_misspelled_field_a_wrong_type_an_unknown_kind_and_a_kache_misconfiguration() {
    let server = server();
    let yaml = kustomize(&deploy_dir().join("overlays/sidecar"));
    let valid = objects(&server, &yaml);
    let help = Help::new();
    assert!(valid.iter().all(|o| schema_check(o).is_ok()) && kache_problems(&valid, &help).is_empty(), "the sidecar manifest is valid");
    let deployment = valid.iter().position(|o| o["kind"] == "Deployment").expect("a Deployment");
    let changed = |change: &dyn Fn(&mut Value)| {
        let mut objects = valid.clone();
        change(&mut objects[deployment]);
        objects
    };

    // The schema: a misspelled field, a field at the wrong level, a wrong type, an unknown kind.
    let misspelled = changed(&|o| {
        let probe = kache(o).remove("readinessProbe").expect("a readiness probe");
        kache(o).insert("readinesProbe".into(), probe);
    });
    let err = schema_check(&misspelled[deployment]).expect_err("a misspelled field");
    assert!(err.contains("readinesProbe: no such field"), "{err}");
    let misplaced = changed(&|o| {
        o["spec"]["terminationGracePeriodSeconds"] = 45.into();
    });
    assert!(schema_check(&misplaced[deployment]).expect_err("a field at the wrong level").contains(".spec.terminationGracePeriodSeconds"));
    let wrong_type = changed(&|o| o["spec"]["replicas"] = "1".into());
    assert!(schema_check(&wrong_type[deployment]).expect_err("a string for an integer").contains("invalid type"));
    let unknown = changed(&|o| o["kind"] = "Deploymnet".into());
    assert!(schema_check(&unknown[deployment]).expect_err("an unknown kind").contains("not a kind this check knows"));
    // ... which kubectl refuses too.
    let err = dry_run(&server, &yaml.replace("kind: Deployment", "kind: Deploymnet")).expect_err("kubectl refuses an unknown kind");
    assert!(err.contains(r#"no matches for kind "Deploymnet" in version "apps/v1""#), "{err}");

    // What kache needs.
    let cases: [(&str, Vec<Value>, &str); 12] = [
        (
            "no liveness probe",
            changed(&|o| {
                kache(o).remove("livenessProbe");
            }),
            "livenessProbe: missing",
        ),
        ("a misspelled flag", changed(&|o| set_arg(o, "--max-events=20000", "--max-event=20000")), "no flag --max-event"),
        (
            "probes on a loopback health listener",
            changed(&|o| set_arg(o, "--health-listen=0.0.0.0:8081", "--health-listen=127.0.0.1:8081")),
            "readinessProbe: GETs HTTP \"/readyz\" on port 8081, not /readyz on any of []",
        ),
        ("a resource without RBAC", changed(&|o| set_arg(o, "--resources=pods", "--resources=pods,secrets")), "may not list secrets"),
        (
            "the pod network without client authentication",
            changed(&|o| set_arg(o, "--listen=127.0.0.1:8001", "--listen=0.0.0.0:8001")),
            "kache refuses to start",
        ),
        (
            "a short grace period",
            changed(&|o| o["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 30.into()),
            "terminationGracePeriodSeconds 30",
        ),
        ("a writable root", changed(&|o| kache(o)["securityContext"]["readOnlyRootFilesystem"] = false.into()), "writable root filesystem"),
        ("no memory budget", changed(&|o| remove_arg(o, "--memory-budget=768")), "no --memory-budget"),
        (
            "a memory budget that leaves too little",
            changed(&|o| set_arg(o, "--memory-budget=768", "--memory-budget=800")),
            "--memory-budget=800 leaves less than a quarter of the 1024 MiB memory limit",
        ),
        ("text logs", changed(&|o| remove_arg(o, "--log-format=json")), "logs as text"),
        (
            "state on the read-only root",
            changed(&|o| set_arg(o, "--state-dir=/var/lib/kache", "--state-dir=/var/lib/elsewhere")),
            "--state-dir=/var/lib/elsewhere is on no volume",
        ),
        (
            "no scrape annotation",
            changed(&|o| {
                o["spec"]["template"]["metadata"]["annotations"].as_object_mut().expect("annotations").remove("prometheus.io/port");
            }),
            "pod annotation prometheus.io/port is null",
        ),
    ];
    for (what, objects, expected) in cases {
        let problems = kache_problems(&objects, &help).join("\n");
        assert!(problems.contains(expected), "{what}: expected {expected:?} among the problems: {problems}");
    }
}

/// The checks of the shared tiers fail what they should: a Deployment of
/// two replicas without a PodDisruptionBudget, a PodMonitor on a port kache
/// does not name, a PodMonitor field that does not exist.
#[test]
fn the_checks_fail_a_missing_disruption_budget_and_a_pod_monitor_that_scrapes_nothing() {
    let server = server();
    let (name, valid) =
        every_build(&server).into_iter().find(|(n, _)| n == &format!("overlays/shared + {MONITORING}")).expect("the shared build");
    assert!(disruption_problems(&valid).is_empty() && monitoring_problems(&valid).is_empty(), "{name} is valid");

    let no_budgets: Vec<Value> = valid.iter().filter(|o| o["kind"] != "PodDisruptionBudget").cloned().collect();
    let problems = disruption_problems(&no_budgets).join("\n");
    assert!(problems.contains("Deployment kache/kache-tier2: 2 replicas and no PodDisruptionBudget"), "{problems}");

    let mut wrong_port = valid.clone();
    let monitor = wrong_port.iter_mut().find(|o| o["kind"] == "PodMonitor").expect("a PodMonitor");
    monitor["spec"]["podMetricsEndpoints"][0]["port"] = "health".into();
    let problems = monitoring_problems(&wrong_port).join("\n");
    assert!(problems.contains(r#"names no port "health" for its --health-listen port 8081"#), "{problems}");

    let mut misspelled = valid.clone();
    let monitor = misspelled.iter_mut().find(|o| o["kind"] == "PodMonitor").expect("a PodMonitor");
    let endpoints = monitor["spec"].as_object_mut().expect("spec").remove("podMetricsEndpoints").expect("endpoints");
    monitor["spec"]["podMetricEndpoints"] = endpoints;
    let monitor = misspelled.iter().find(|o| o["kind"] == "PodMonitor").expect("a PodMonitor");
    assert!(schema_check(monitor).expect_err("a misspelled field").contains(".spec.podMetricEndpoints: no such field"));
    assert!(monitoring_problems(&misspelled).join("\n").contains("no podMetricsEndpoints"));
}
