//! The deployment manifests in `config/deploy/` are what they say:
//!
//! - kubectl takes every one: `kubectl apply --dry-run=client` against the
//!   simulator, whose discovery maps each object's kind (an unknown kind or
//!   version fails);
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
//!   it caches (and, with client authentication, for reviews and
//!   impersonation); a kache whose upstream is a Service names one that
//!   exists.
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

/// The manifests, sorted.
fn manifests() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/deploy");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

/// The simulator as kubectl's server. It serves cluster roles and role
/// bindings; the other two RBAC kinds are served as custom resources with
/// their real group, version, kind and scope, so that discovery maps them
/// as an apiserver's does.
fn server() -> Process {
    Process::sim(&[
        "--crd",
        "clusterrolebindings.rbac.authorization.k8s.io/v1=ClusterRoleBinding,cluster",
        "--crd",
        "roles.rbac.authorization.k8s.io/v1=Role",
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
        _ => Err(format!("{api_version} {kind} is not a kind this check knows")),
    };
    let typed = typed.map_err(|e| format!("{}: {e}", describe(object)))?;
    let mut out = Vec::new();
    differences("", object, &typed, &mut out);
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

/// Each manifest's objects, after kubectl's dry run of it passed.
fn every_manifest(server: &Process) -> Vec<(PathBuf, Vec<Value>)> {
    manifests()
        .into_iter()
        .map(|path| {
            let yaml = read(&path);
            let applied = dry_run(server, &yaml).unwrap_or_else(|e| panic!("{}: kubectl apply --dry-run=client: {e}", path.display()));
            let objects = objects(server, &yaml);
            assert_eq!(
                applied.lines().filter(|l| l.ends_with(" created (dry run)")).count(),
                objects.len(),
                "{}: kubectl applied every object\n{applied}",
                path.display()
            );
            (path, objects)
        })
        .collect()
}

#[test]
fn every_manifest_is_accepted_by_kubectl_and_valid_by_the_api_schema() {
    let files: Vec<String> = manifests().iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    for expected in ["deployment.yaml", "second-tier.yaml", "sidecar.yaml"] {
        assert!(files.iter().any(|f| f == expected), "config/deploy/{expected} is missing: {files:?}");
    }
    let server = server();
    for (path, objects) in every_manifest(&server) {
        assert!(!objects.is_empty(), "{}: no objects", path.display());
        let errors: Vec<String> = objects.iter().filter_map(|o| schema_check(o).err()).collect();
        assert!(errors.is_empty(), "{}:\n{}", path.display(), errors.join("\n"));
    }
}

#[test]
fn every_kache_container_is_deployed_as_kache_needs() {
    let server = server();
    let all: Vec<Value> = every_manifest(&server).into_iter().flat_map(|(_, objects)| objects).collect();
    let kache = |o: &&Value| o["spec"]["template"]["spec"].to_string().contains(IMAGE);
    assert_eq!(all.iter().filter(kache).count(), 3, "one kache workload per manifest");
    let problems = [kache_problems(&all, &Help::new()), service_problems(&all)].concat();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The sidecar manifest's kache container, in its Deployment.
fn kache(deployment: &mut Value) -> &mut serde_json::Map<String, Value> {
    deployment["spec"]["template"]["spec"]["initContainers"][0].as_object_mut().expect("the kache sidecar")
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
    let yaml = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("config/deploy/sidecar.yaml"));
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
    let cases: [(&str, Vec<Value>, &str); 7] = [
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
    ];
    for (what, objects, expected) in cases {
        let problems = kache_problems(&objects, &help).join("\n");
        assert!(problems.contains(expected), "{what}: expected {expected:?} among the problems: {problems}");
    }
}
