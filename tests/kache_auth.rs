//! Client authentication and authorization through kache against the
//! simulator enforcing the same policy (`--policy`): kache's decisions are
//! the oracle's, reviews are cached and coalesced, writes go upstream as
//! the client.

mod common;

use std::time::Duration;

use common::{Process, pki::Pki};

/// Users, tokens and rules shared by the simulator and (through its reviews) kache.
const POLICY: &str = r#"{
  "users": [
    {"name": "alice", "uid": "u-alice", "groups": ["dev"], "tokens": ["alice-token"]},
    {"name": "bob", "groups": ["ops"], "tokens": ["bob-token"]},
    {"name": "system:serviceaccount:default:reader", "groups": ["system:serviceaccounts", "system:serviceaccounts:default"], "tokens": ["sa-token"]},
    {"name": "kache", "tokens": ["kache-token"]},
    {"name": "root", "groups": ["system:masters"], "tokens": ["root-token"]},
    {"name": "carol", "tokens": ["carol-token"]}
  ],
  "rules": [
    {"subjects": ["group:dev"], "verbs": ["get", "list", "watch"], "groups": [""], "resources": ["pods"], "namespaces": ["ns-0001"]},
    {"subjects": ["group:dev"], "verbs": ["create"], "groups": [""], "resources": ["configmaps", "pods/exec"], "namespaces": ["ns-0001"]},
    {"subjects": ["group:ops"], "verbs": ["get", "list", "watch"], "groups": [""], "resources": ["pods", "configmaps"]},
    {"subjects": ["user:system:serviceaccount:default:reader"], "verbs": ["get", "list", "watch"], "groups": [""], "resources": ["configmaps"], "namespaces": ["ns-0001"]},
    {"subjects": ["user:system:serviceaccount:default:reader"], "verbs": ["get", "list", "watch"], "groups": [""], "resources": ["secrets"], "names": ["public"]},
    {"subjects": ["user:admin"], "verbs": ["get", "list", "watch"], "groups": [""], "resources": ["pods"]},
    {"subjects": ["user:kache"], "verbs": ["get", "list", "watch"], "groups": ["*"], "resources": ["*"]},
    {"subjects": ["user:kache"], "verbs": ["create"], "groups": ["authentication.k8s.io"], "resources": ["tokenreviews"]},
    {"subjects": ["user:kache"], "verbs": ["create"], "groups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"]},
    {"subjects": ["user:kache"], "verbs": ["impersonate"], "groups": ["", "authentication.k8s.io"], "resources": ["users", "groups", "serviceaccounts", "uids", "userextras/*"]},
    {"subjects": ["user:alice"], "verbs": ["list"], "groups": [""], "resources": ["pods"], "namespaces": ["ns-0001"]},
    {"subjects": ["user:carol"], "verbs": ["impersonate:user-info"], "groups": ["authentication.k8s.io"], "resources": ["users"], "names": ["alice"]},
    {"subjects": ["user:carol"], "verbs": ["impersonate-on:user-info:list"], "groups": [""], "resources": ["pods"]}
  ]
}"#;

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// The simulator with the policy, some pods, and two secrets (written as root).
fn policed_sim(dir: &tempfile::TempDir, extra: &[&str]) -> Process {
    let policy = dir.path().join("policy.json");
    std::fs::write(&policy, POLICY).unwrap();
    let mut args = vec!["--pods", "20", "--namespaces", "2", "--configmaps", "4", "--policy", policy.to_str().unwrap()];
    args.extend_from_slice(extra);
    let sim = Process::sim(&args);
    let root = bearer("root-token");
    for name in ["public", "db"] {
        let body = format!(r#"{{"metadata":{{"name":"{name}"}},"stringData":{{"k":"v"}}}}"#);
        let r = sim.request(
            "POST",
            "/api/v1/namespaces/ns-0001/secrets",
            &[("authorization", &root), ("content-type", "application/json")],
            Some(body.as_bytes()),
        );
        assert_eq!(r.status, 201, "{}", r.text());
    }
    sim
}

fn kache_for(sim: &Process, extra: &[&str]) -> Process {
    let mut args = vec!["--token", "kache-token", "--token-review", "--resources", "pods,configmaps,secrets"];
    args.extend_from_slice(extra);
    Process::kache(&sim.url, &args)
}

fn ready(kache: &Process) {
    common::eventually(Duration::from_secs(30), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
}

fn metric(kache: &Process, name: &str) -> u64 {
    let text = kache.request("GET", "/metrics", &[("authorization", &bearer("root-token"))], None).text();
    text.lines().find_map(|l| l.strip_prefix(name)?.trim().parse().ok()).unwrap_or_else(|| panic!("no {name} in {text}"))
}

/// Item names of a list answer.
fn names(resp: &common::Resp) -> Vec<String> {
    resp.json()["items"]
        .as_array()
        .map(|items| items.iter().map(|i| i["metadata"]["name"].as_str().unwrap_or_default().to_string()).collect())
        .unwrap_or_default()
}

#[test]
fn every_identity_gets_exactly_the_apiservers_decisions_through_kache() {
    let dir = tempfile::tempdir().unwrap();
    let sim = policed_sim(&dir, &[]);
    let kache = kache_for(&sim, &[]);
    ready(&kache);
    let pod = sim.request("GET", "/api/v1/namespaces/ns-0001/pods", &[("authorization", &bearer("root-token"))], None).json()["items"][0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let paths = [
        "/api/v1/namespaces/ns-0001/pods".to_string(),
        "/api/v1/pods".to_string(),
        format!("/api/v1/namespaces/ns-0001/pods/{pod}"),
        "/api/v1/namespaces/ns-0001/configmaps".to_string(),
        "/api/v1/namespaces/ns-0002/configmaps".to_string(),
        "/api/v1/namespaces/ns-0001/secrets".to_string(),
        "/api/v1/namespaces/ns-0001/secrets/public".to_string(),
        "/api/v1/namespaces/ns-0001/secrets/db".to_string(),
        "/api/v1/namespaces/ns-0001/secrets?fieldSelector=metadata.name%3Dpublic".to_string(),
        "/api/v1/namespaces/ns-0001/pods?labelSelector=tier%3Dweb".to_string(),
        "/api/v1/namespaces/ns-0001/pods?watch=1&timeoutSeconds=1".to_string(),
    ];
    let identities: [(&str, Option<String>); 6] = [
        ("alice", Some(bearer("alice-token"))),
        ("bob", Some(bearer("bob-token"))),
        ("service account", Some(bearer("sa-token"))),
        ("expired token", Some(bearer("no-such-token"))),
        ("malformed header", Some("Bearer".to_string())),
        ("anonymous", None),
    ];
    let (mut allowed, mut denied) = (0, 0);
    for (who, auth) in &identities {
        for path in &paths {
            let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("authorization", a.as_str())).collect();
            let (k, s) = (kache.request("GET", path, &headers, None), sim.request("GET", path, &headers, None));
            assert_eq!(k.status, s.status, "{who} GET {path}: kache {} / apiserver {}", k.text(), s.text());
            match k.status {
                200 if path.contains("watch=1") => allowed += 1,
                200 => {
                    assert_eq!(names(&k), names(&s), "{who} GET {path}");
                    allowed += 1;
                }
                _ => {
                    assert_eq!(k.text(), s.text(), "{who} GET {path}: the same Status");
                    denied += 1;
                }
            }
        }
    }
    assert!(allowed >= 10 && denied >= 30, "allowed {allowed}, denied {denied}");
    assert!(metric(&kache, "kache_lists_served_total") > 0, "allowed lists came from memory");
    assert!(metric(&kache, "kache_forbidden_total") > 0 && metric(&kache, "kache_unauthenticated_total") > 0);
}

#[test]
fn writes_passed_through_are_the_clients_not_kaches() {
    let dir = tempfile::tempdir().unwrap();
    let sim = policed_sim(&dir, &[]);
    let kache = kache_for(&sim, &[]);
    ready(&kache);
    let json = ("content-type", "application/json");
    let alice = bearer("alice-token");
    let body = br#"{"metadata":{"name":"from-alice"}}"#;
    // kache itself may not create configmaps: this succeeds only as alice.
    let created = kache.request("POST", "/api/v1/namespaces/ns-0001/configmaps", &[("authorization", &alice), json], Some(body));
    assert_eq!(created.status, 201, "{}", created.text());
    // Where alice may not write, upstream refuses alice by name.
    let refused = kache.request("POST", "/api/v1/namespaces/ns-0002/configmaps", &[("authorization", &alice), json], Some(body));
    assert_eq!(refused.status, 403);
    assert!(refused.text().contains(r#"User \"alice\" cannot create resource \"configmaps\""#), "{}", refused.text());
    // A client cannot smuggle its own impersonation past kache.
    let smuggled = kache.request(
        "GET",
        "/api/v1/namespaces/ns-0002/configmaps",
        &[("authorization", &alice), ("impersonate-user", "root"), ("impersonate-group", "system:masters")],
        None,
    );
    assert_eq!(smuggled.status, 403, "{}", smuggled.text());
    // Refused first by the constrained mode for other users, as kube-apiserver 1.36 words it.
    let refusal =
        r#"User \"alice\" cannot impersonate-on:user-info:list resource \"configmaps\" in API group \"\" in the namespace \"ns-0002\""#;
    assert!(smuggled.text().contains(refusal), "{}", smuggled.text());
}

#[test]
fn a_client_allowed_only_constrained_impersonation_gets_the_apiservers_answer_and_its_audit_names_the_mode() {
    let dir = tempfile::tempdir().unwrap();
    let sim = policed_sim(&dir, &[]);
    let (audit_policy, log) = (dir.path().join("audit-policy.yaml"), dir.path().join("audit.log"));
    std::fs::write(&audit_policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n").unwrap();
    let kache = kache_for(&sim, &["--audit-policy-file", audit_policy.to_str().unwrap(), "--audit-log-path", log.to_str().unwrap()]);
    ready(&kache);
    let carol = bearer("carol-token");
    fn as_alice<'a>(carol: &'a str, id: &'a str) -> [(&'a str, &'a str); 3] {
        [("authorization", carol), ("impersonate-user", "alice"), ("audit-id", id)]
    }
    // carol may act as alice only to list pods: alice's list of ns-0001's pods, from memory.
    let served = metric(&kache, "kache_lists_served_total");
    let path = "/api/v1/namespaces/ns-0001/pods";
    let (k, s) =
        (kache.request("GET", path, &as_alice(&carol, "list-pods"), None), sim.request("GET", path, &as_alice(&carol, "list-pods"), None));
    assert_eq!((k.status, s.status), (200, 200), "kache: {}", k.text());
    assert_eq!(names(&k), names(&s));
    assert_eq!(metric(&kache, "kache_lists_served_total"), served + 1, "answered from memory");
    // Not to list configmaps: the constrained mode's refusal, then the legacy verb's, as the apiserver tries them.
    let path = "/api/v1/namespaces/ns-0001/configmaps";
    let (k, s) =
        (kache.request("GET", path, &as_alice(&carol, "list-cms"), None), sim.request("GET", path, &as_alice(&carol, "list-cms"), None));
    assert_eq!((k.status, k.text()), (s.status, s.text()));
    assert!(k.text().contains("cannot impersonate-on:user-info:list resource"), "{}", k.text());
    // The list's audit event names the mode that allowed it, after the user it impersonated.
    let line = common::eventually(Duration::from_secs(10), "the list's audit event", || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.lines().find(|l| l.contains(r#""auditID":"list-pods""#) && l.contains("ResponseComplete")).map(str::to_string)
    });
    let event: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(event["impersonatedUser"]["username"], "alice", "{line}");
    assert_eq!(event["authenticationMetadata"]["impersonationConstraint"], "impersonate:user-info", "{line}");
}

#[test]
fn a_burst_of_identical_requests_costs_one_review_of_each_kind() {
    let dir = tempfile::tempdir().unwrap();
    let sim = policed_sim(&dir, &[]);
    let kache = kache_for(&sim, &[]);
    ready(&kache);
    let (tokens, accesses) =
        (sim.served("tokenreviews.authentication.k8s.io", "create"), sim.served("subjectaccessreviews.authorization.k8s.io", "create"));
    let url = format!("{}/api/v1/namespaces/ns-0001/pods?resourceVersion=0", kache.url);
    let threads: Vec<_> = (0..10)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || {
                (0..100).filter(|_| common::request(&url, "GET", &[("authorization", "Bearer bob-token")], None).status == 200).count()
            })
        })
        .collect();
    let ok: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(ok, 1000);
    assert_eq!(sim.served("tokenreviews.authentication.k8s.io", "create") - tokens, 1, "one TokenReview for 1,000 requests");
    assert_eq!(sim.served("subjectaccessreviews.authorization.k8s.io", "create") - accesses, 1, "one SubjectAccessReview");
}

#[test]
fn kubectl_with_a_certificate_or_a_token_through_kache_over_tls() {
    let pki = Pki::new();
    let dir = tempfile::tempdir().unwrap();
    let sim = policed_sim(&dir, &[]);
    let kache = kache_for(
        &sim,
        &[
            "--tls-cert-file",
            &pki.path("server.crt"),
            "--tls-private-key-file",
            &pki.path("server.key"),
            "--client-ca-file",
            &pki.path("client-ca.crt"),
        ],
    );
    // The client certificate's CN is "admin", who may read pods anywhere and nothing else.
    let (ca, cert, key) = (pki.path("ca.crt"), pki.path("client.crt"), pki.path("client.key"));
    let kubectl = |args: &[&str]| {
        let mut all = vec!["--certificate-authority", &ca, "--client-certificate", &cert, "--client-key", &key];
        all.extend_from_slice(args);
        kache.kubectl(&all)
    };
    common::eventually(Duration::from_secs(30), "kache ready", || kubectl(&["get", "--raw", "/readyz"]).status.success().then_some(()));
    let out = kubectl(&["get", "pods", "-A", "-o", "name"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 20);
    let out = kubectl(&["get", "configmaps", "-n", "ns-0001"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(r#"User "admin" cannot list resource "configmaps""#),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A token (client-go sends tokens over TLS only).
    let with_token = |args: &[&str]| {
        let mut all = vec!["--certificate-authority", &ca, "--token", "alice-token"];
        all.extend_from_slice(args);
        kache.kubectl(&all)
    };
    let out = with_token(&["get", "pods", "-n", "ns-0001", "-o", "name"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).lines().count() > 0);
    let out = with_token(&["get", "pods", "-A"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(r#"User "alice" cannot list resource "pods" in API group "" at the cluster scope"#)
    );
    // exec goes upstream as the client too: alice may exec in ns-0001, bob may not.
    let pod =
        sim.request("GET", "/api/v1/namespaces/ns-0001/pods?limit=1", &[("authorization", &bearer("root-token"))], None).json()["items"][0]
            ["metadata"]["name"]
            .as_str()
            .unwrap()
            .to_string();
    let out = with_token(&["exec", "-n", "ns-0001", &pod, "--", "echo", "as", "alice"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "as alice");
    let out = kache.kubectl(&["--certificate-authority", &ca, "--token", "bob-token", "exec", "-n", "ns-0001", &pod, "--", "echo", "x"]);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains(r#"User "bob" cannot create resource "pods/exec" in API group "" in the namespace "ns-0001""#),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A certificate of another CA is no one (401, not a failed handshake) — unless a token authenticates the request.
    let (rogue, rogue_key) = (pki.path("rogue.crt"), pki.path("rogue.key"));
    let with_rogue = |token: &str, args: &[&str]| {
        let mut all = vec!["--certificate-authority", &ca, "--client-certificate", &rogue, "--client-key", &rogue_key, "--token", token];
        all.extend_from_slice(args);
        kache.kubectl(&all)
    };
    let out = with_rogue("nope", &["get", "pods", "-A"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("You must be logged in"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = with_rogue("alice-token", &["get", "pods", "-n", "ns-0001", "-o", "name"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // A token upstream does not know: 401.
    let stranger = kache.kubectl(&["--certificate-authority", &ca, "--token", "nope", "get", "pods", "-A"]);
    assert!(String::from_utf8_lossy(&stranger.stderr).contains("You must be logged in"), "{}", String::from_utf8_lossy(&stranger.stderr));
}

#[test]
fn without_client_authentication_kache_listens_only_on_loopback() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kache"))
        .args(["serve", "--listen", "0.0.0.0:0", "--server", "http://127.0.0.1:9"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("listen on loopback"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_policy_change_takes_effect_within_the_cache_times_and_ends_a_watch_that_lost_access() {
    let dir = tempfile::tempdir().unwrap();
    let sim = policed_sim(&dir, &[]);
    let kache = kache_for(&sim, &["--authz-allow-ttl", "1", "--authz-deny-ttl", "1", "--authn-cache-ttl", "1"]);
    ready(&kache);
    let bob = bearer("bob-token");
    let list = |k: &Process| k.request("GET", "/api/v1/namespaces/ns-0002/pods", &[("authorization", &bob)], None).status;
    assert_eq!(list(&kache), 200);
    // bob watches; then the policy no longer lets ops read pods.
    // An hour's watch: only the lost access ends it (the client gives up after a minute, failing the test).
    let url = format!("{}/api/v1/namespaces/ns-0002/pods?watch=1&timeoutSeconds=3600", kache.url);
    let watch = std::thread::spawn(move || common::request(&url, "GET", &[("authorization", "Bearer bob-token")], None).status);
    std::thread::sleep(Duration::from_millis(300));
    let revoked = POLICY.replace(
        r#"{"subjects": ["group:ops"], "verbs": ["get", "list", "watch"], "groups": [""], "resources": ["pods", "configmaps"]},"#,
        "",
    );
    assert_ne!(revoked, POLICY);
    assert_eq!(sim.request("POST", "/_sim/policy", &[("content-type", "application/json")], Some(revoked.as_bytes())).status, 200);
    assert_eq!(watch.join().unwrap(), 200, "the watch of a user who lost access ended");
    common::eventually(Duration::from_secs(60), "bob refused through kache", || (list(&kache) == 403).then_some(()));
    assert_eq!(list(&sim), 403);
    // Given back, within the deny cache time.
    assert_eq!(sim.request("POST", "/_sim/policy", &[("content-type", "application/json")], Some(POLICY.as_bytes())).status, 200);
    common::eventually(Duration::from_secs(60), "bob allowed again through kache", || (list(&kache) == 200).then_some(()));
}

#[test]
fn the_serving_certificate_is_reloaded_when_it_changes_on_disk() {
    let pki = Pki::new();
    let dir = tempfile::tempdir().unwrap();
    let sim = policed_sim(&dir, &[]);
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::copy(pki.path("server.crt"), &cert).unwrap();
    std::fs::copy(pki.path("server.key"), &key).unwrap();
    let kache = kache_for(&sim, &["--tls-cert-file", cert.to_str().unwrap(), "--tls-private-key-file", key.to_str().unwrap()]);
    let get = |ca: &str| kache.kubectl(&["--certificate-authority", ca, "--token", "bob-token", "get", "--raw", "/readyz"]);
    common::eventually(Duration::from_secs(30), "kache ready", || get(&pki.path("ca.crt")).status.success().then_some(()));
    assert!(!get(&pki.path("next-ca.crt")).status.success(), "not yet the next certificate");
    // Rotated on disk (key first, as a mounted secret's files change together).
    std::fs::copy(pki.path("next-server.key"), &key).unwrap();
    std::fs::copy(pki.path("next-server.crt"), &cert).unwrap();
    common::eventually(Duration::from_secs(60), "the next certificate served", || {
        get(&pki.path("next-ca.crt")).status.success().then_some(())
    });
    assert!(!get(&pki.path("ca.crt")).status.success(), "the old certificate is gone");
}
