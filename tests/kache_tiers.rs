//! Two tiers of kache, as real processes: the simulator, kache (tier 1) in
//! front of it, and kache (tier 2) whose upstream is tier 1, as
//! `config/deploy/overlays/shared` deploys them. Through tier 2 a client
//! gets what the simulator would give it — full lists, paged lists, watch
//! streams — and tier 2 answers from its own memory: tier 1 sees tier 2's
//! one list and one watch per resource, not a request per client request.
//! With client authentication on both tiers, a client is authenticated,
//! authorized and impersonated as itself all the way to the simulator.

mod common;

use std::time::Duration;

use common::{Process, Resp, Watch, eventually, pki::Pki};
use serde_json::{Value, json};

/// The simulator, tier 1 in front of it and tier 2 in front of tier 1,
/// each caching `RESOURCES`, both tiers ready.
struct Tiers {
    sim: Process,
    tier1: Process,
    tier2: Process,
}

const RESOURCES: &str = "pods,configmaps";

impl Tiers {
    fn start(sim_args: &[&str]) -> Tiers {
        Tiers::start_with(sim_args, &[])
    }

    /// With `tier2_args` besides tier 2's resources.
    fn start_with(sim_args: &[&str], tier2_args: &[&str]) -> Tiers {
        let sim = Process::sim(sim_args);
        let tier1 = Process::kache(&sim.url, &["--resources", RESOURCES]);
        ready(&tier1);
        let tier2 = Process::kache(&tier1.url, &[&["--resources", RESOURCES], tier2_args].concat());
        ready(&tier2);
        Tiers { sim, tier1, tier2 }
    }
}

fn ready(kache: &Process) {
    eventually(Duration::from_secs(60), "kache ready", || (kache.get("/readyz").status == 200).then_some(()));
}

/// The value of the series `series` (a name, with its labels if it has any) in kache's `/metrics`.
fn metric(kache: &Process, series: &str) -> u64 {
    metric_as(kache, series, &[])
}

/// [`metric`], scraped with `headers` (a token that may `get` `/metrics`).
fn metric_as(kache: &Process, series: &str, headers: &[(&str, &str)]) -> u64 {
    let text = kache.request("GET", "/metrics", headers, None).text();
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {series} in /metrics: {text}"))
}

/// What a tier has answered, from its `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Served {
    lists: u64,
    watches: u64,
    watches_passed_through: u64,
    passed_through: u64,
}

impl Served {
    fn of(kache: &Process) -> Served {
        Served {
            lists: metric(kache, "kache_lists_served_total"),
            watches: metric(kache, "kache_watches_served_total"),
            watches_passed_through: metric(kache, "kache_watches_passed_through_total"),
            passed_through: metric(kache, "kache_passed_through_total"),
        }
    }
}

fn ok(resp: Resp, what: &str) -> Resp {
    assert!((200..300).contains(&resp.status), "{what}: {} {}", resp.status, resp.text());
    resp
}

fn rv_of(list: &Value) -> u64 {
    list["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).expect("a resourceVersion")
}

fn items(list: &Value) -> Vec<Value> {
    list["items"].as_array().expect("a list").clone()
}

#[test]
fn a_second_tier_lists_what_the_simulator_lists_from_its_own_memory() {
    // No churn: the simulator's state stays the one both tiers hold. Tier 2
    // answers the consistent list below from memory once proven, however
    // the plan would weigh a list this small on a busy machine (by default
    // it may go upstream when upstream is expected sooner).
    let sim_args = ["--pods", "600", "--nodes", "10", "--namespaces", "4", "--configmaps", "40"];
    let t = Tiers::start_with(&sim_args, &["--consistent-reads", "memory"]);
    let (tier1_before, tier2_before) = (Served::of(&t.tier1), Served::of(&t.tier2));
    let sim_lists_before = t.sim.served("pods", "list") + t.sim.served("configmaps", "list");

    // Full lists through tier 2, each at tier 2's revision.
    let collections = ["/api/v1/pods", "/api/v1/namespaces/ns-0002/pods", "/api/v1/configmaps"];
    let full: Vec<Value> = collections.iter().map(|c| ok(t.tier2.get(&format!("{c}?resourceVersion=0")), c).json()).collect();
    assert_eq!(items(&full[0]).len(), 600);
    assert_eq!(items(&full[1]).len(), 150);

    // The pods again, in pages of 41 at the full list's revision, following continue tokens.
    let r = rv_of(&full[0]);
    let (paged, _, pages) = walk_pages(&t.tier2, "/api/v1/pods", &format!("resourceVersion={r}&resourceVersionMatch=Exact"), 41);
    assert_eq!(pages, 600_usize.div_ceil(41));
    assert!(paged == items(&full[0]), "the pages, joined, are the full list");

    // Tier 2 answered every one of those from memory; tier 1 and the
    // simulator saw none of them.
    let requests = collections.len() as u64 + pages as u64;
    let (tier1_after, tier2_after) = (Served::of(&t.tier1), Served::of(&t.tier2));
    assert_eq!(tier2_after.lists - tier2_before.lists, requests, "tier 2 answered every list from memory");
    assert_eq!(tier2_after.passed_through, tier2_before.passed_through, "tier 2 passed nothing through");
    assert_eq!(tier1_after, tier1_before, "tier 1 saw no request");
    assert_eq!(t.sim.served("pods", "list") + t.sim.served("configmaps", "list"), sim_lists_before, "the simulator saw no list");

    // The simulator's own lists at the same revisions are the same items.
    for (collection, tier2_list) in collections.iter().zip(&full) {
        let at = rv_of(tier2_list);
        let sim_list = ok(t.sim.get(&format!("{collection}?resourceVersion={at}&resourceVersionMatch=Exact")), collection).json();
        assert_eq!(rv_of(&sim_list), at);
        assert!(items(&sim_list) == items(tier2_list), "{collection}: tier 2's items are the simulator's");
    }

    // A consistent list (no resourceVersion, as kubectl and client-go's
    // informers ask) is the simulator's current state too, answered from
    // tier 2's memory once a one-item probe through tier 1 proves it fresh:
    // tier 1 sees that probe and nothing else — but the list itself, if
    // the proof was later than tier 2 expected (its hedge, dropped once
    // memory answered first).
    let fresh = "kache_consistent_reads_fresh_total{resource=\"pods\"}";
    let hedges = "kache_consistent_hedges_total{resource=\"pods\"}";
    let (fresh_before, tier1_before, tier2_before) = (metric(&t.tier2, fresh), Served::of(&t.tier1), Served::of(&t.tier2));
    let hedges_before = metric(&t.tier2, hedges);
    let consistent = ok(t.tier2.get("/api/v1/pods"), "a consistent list").json();
    let (tier1_after, tier2_after) = (Served::of(&t.tier1), Served::of(&t.tier2));
    assert_eq!(metric(&t.tier2, fresh), fresh_before + 1, "tier 2 answered the consistent list from memory");
    assert_eq!(tier2_after.lists, tier2_before.lists + 1);
    assert_eq!(tier2_after.passed_through, tier2_before.passed_through);
    // A hedge dropped before tier 1 answered it is not counted there.
    let seen = (tier1_after.lists + tier1_after.passed_through) - (tier1_before.lists + tier1_before.passed_through);
    let hedged = metric(&t.tier2, hedges) - hedges_before;
    assert!((1..=1 + hedged).contains(&seen), "tier 1 saw {seen} requests: tier 2's probe and {hedged} hedges at most");
    let sim_now = ok(t.sim.get("/api/v1/pods"), "the simulator's list").json();
    assert_eq!(rv_of(&consistent), rv_of(&sim_now));
    assert!(items(&consistent) == items(&sim_now), "the consistent list is the simulator's");
}

/// A write's expected watch event: its type, the object's name and, for
/// creates and updates, its revision as the write's response gave it.
type Expected = (&'static str, String, Option<u64>);

fn summary(event: &Value) -> Expected {
    let kind = match event["type"].as_str() {
        Some("ADDED") => "ADDED",
        Some("MODIFIED") => "MODIFIED",
        Some("DELETED") => "DELETED",
        other => panic!("unexpected event type {other:?}: {event}"),
    };
    let name = event["object"]["metadata"]["name"].as_str().expect("a name").to_string();
    let rv = event["object"]["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok());
    (kind, name, if kind == "DELETED" { None } else { rv })
}

fn revision(event: &Value) -> u64 {
    event["object"]["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).expect("a revision")
}

/// The events of `watch` up to and including the ADDED event of `last`,
/// bookmarks left out; panics if it does not come within a minute.
fn events_until(watch: &Watch, last: &str) -> Vec<Value> {
    let mut events = Vec::new();
    eventually(Duration::from_secs(60), &format!("the ADDED event of {last}"), || {
        let event = watch.next(Duration::from_millis(100))?;
        if event["type"] == "ERROR" {
            panic!("the watch failed: {event}");
        }
        if event["type"] == "BOOKMARK" {
            return None;
        }
        let done = event["type"] == "ADDED" && event["object"]["metadata"]["name"] == last;
        events.push(event);
        done.then_some(())
    });
    events
}

#[test]
fn a_watch_through_the_second_tier_gets_every_write_in_order_once() {
    let t = Tiers::start(&["--pods", "100", "--nodes", "4", "--namespaces", "2", "--configmaps", "10"]);
    let list = ok(t.tier2.get("/api/v1/configmaps?resourceVersion=0"), "configmaps").json();
    let r = rv_of(&list);
    let (tier1_before, tier2_before) = (Served::of(&t.tier1), Served::of(&t.tier2));
    let sim_watches_before = t.sim.served("configmaps", "watch");

    // The same watch through tier 2 and on the simulator itself, from the list's revision.
    let path = format!("/api/v1/configmaps?watch=1&resourceVersion={r}&allowWatchBookmarks=true&timeoutSeconds=120");
    let through_tiers = t.tier2.watch(&path);
    let direct = t.sim.watch(&path);

    // Creates, updates and deletes of configmaps on the simulator, with pod
    // writes in between so that the configmaps' revisions have gaps.
    let pod = some_pod(&t.sim);
    let cms = "/api/v1/namespaces/default/configmaps";
    let merge = [("content-type", "application/merge-patch+json")];
    let rv_in = |resp: Resp| rv_of(&resp.json());
    let mut expected: Vec<Expected> = Vec::new();
    for i in 0..30 {
        let name = format!("tiered-{i:02}");
        let created = ok(t.sim.post(cms, &json!({"metadata": {"name": name}, "data": {"n": i.to_string()}})), "create");
        expected.push(("ADDED", name.clone(), Some(rv_in(created))));
        relabel(&t.sim, &pod, &i.to_string());
        if i % 3 == 0 {
            let body = br#"{"data":{"n":"updated"}}"#;
            let updated = ok(t.sim.request("PATCH", &format!("{cms}/{name}"), &merge, Some(body)), "update");
            expected.push(("MODIFIED", name.clone(), Some(rv_in(updated))));
        }
        if i % 4 == 1 {
            ok(t.sim.request("DELETE", &format!("{cms}/{name}"), &[], None), "delete");
            expected.push(("DELETED", name, None));
        }
    }
    // A last create marks the end: anything missed, repeated or reordered comes before it.
    let created = ok(t.sim.post(cms, &json!({"metadata": {"name": "tiered-end"}})), "create");
    expected.push(("ADDED", "tiered-end".into(), Some(rv_in(created))));

    let got = events_until(&through_tiers, "tiered-end");
    let want = events_until(&direct, "tiered-end");
    assert_eq!(want.iter().map(summary).collect::<Vec<_>>(), expected, "the simulator's own stream is the writes");
    assert_eq!(got.iter().map(summary).collect::<Vec<_>>(), expected, "tier 2's stream is the writes, in order, once each");
    assert!(got.windows(2).all(|w| revision(&w[0]) < revision(&w[1])), "revisions increase");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(g == w, "event {i}: tier 2 sent\n{g}\nthe simulator sent\n{w}");
    }

    // Tier 2 served the watch from memory; tier 1 and the simulator opened no watch for it.
    let (tier1_after, tier2_after) = (Served::of(&t.tier1), Served::of(&t.tier2));
    assert_eq!(tier2_after.watches, tier2_before.watches + 1, "tier 2 served the watch from memory");
    assert_eq!(tier2_after.watches_passed_through, tier2_before.watches_passed_through);
    assert_eq!(tier2_after.passed_through, tier2_before.passed_through);
    assert_eq!(tier1_after, tier1_before, "tier 1 saw nothing of the client's watch");
    assert_eq!(t.sim.served("configmaps", "watch"), sim_watches_before + 1, "the simulator saw only the direct watch");
}

/// Walks `collection` in pages of `limit`: the first page with the query
/// `first` (a revision, or none for a consistent read as kubectl's first
/// page), then its continue tokens. The items, the revision of every page,
/// and how many pages.
fn walk_pages(kache: &Process, collection: &str, first: &str, limit: usize) -> (Vec<Value>, u64, usize) {
    let mut query = format!("limit={limit}&{first}");
    let (mut all, mut rv, mut total, mut pages) = (Vec::new(), None, None, 0);
    loop {
        let page = ok(kache.get(&format!("{collection}?{query}")), &query).json();
        pages += 1;
        assert_eq!(*rv.get_or_insert(rv_of(&page)), rv_of(&page), "page {pages} is at the first page's revision");
        all.extend(items(&page));
        let Some(token) = page["metadata"]["continue"].as_str().filter(|c| !c.is_empty()) else { break };
        // Every page but the last is full, and says how many items remain.
        assert_eq!(all.len(), pages * limit, "page {pages} is full");
        let remaining = page["metadata"]["remainingItemCount"].as_u64().expect("remainingItemCount") as usize;
        assert_eq!(*total.get_or_insert(all.len() + remaining), all.len() + remaining, "page {pages}: remainingItemCount");
        query = format!("limit={limit}&continue={}", form_urlencoded::byte_serialize(token.as_bytes()).collect::<String>());
    }
    (all, rv.expect("a page"), pages)
}

/// The path of one of the simulator's pods.
fn some_pod(sim: &Process) -> String {
    let pod = items(&ok(sim.get("/api/v1/pods?limit=1"), "a pod").json())[0]["metadata"].clone();
    format!("/api/v1/namespaces/{}/pods/{}", pod["namespace"].as_str().unwrap(), pod["name"].as_str().unwrap())
}

/// A write to the pod at `path`: the global revision moves on, the configmaps' does not.
fn relabel(sim: &Process, path: &str, value: &str) {
    let patch = format!(r#"{{"metadata":{{"labels":{{"write":"{value}"}}}}}}"#);
    ok(sim.request("PATCH", path, &[("content-type", "application/merge-patch+json")], Some(patch.as_bytes())), "a pod write");
}

/// kubectl's paging of a resource with no recent event (a quiet one) gets
/// its first page from upstream and every continue page from memory, once
/// a catch-up watch proves the store holds the first page's revision
/// (README, "Consistent reads from memory"; through one tier:
/// `kache_consistent.rs`, `kubectl_paging_of_a_quiet_resource_is_served_from_memory_after_the_first_page`).
/// Through two tiers it should be the same.
#[test]
fn paging_a_quiet_resource_through_the_second_tier_answers_continue_pages_from_memory() {
    let t = Tiers::start(&["--pods", "50", "--nodes", "2", "--namespaces", "2", "--configmaps", "40"]);
    let pod = some_pod(&t.sim);
    for i in 0..5 {
        relabel(&t.sim, &pod, &i.to_string());
    }
    let (tier1_before, tier2_before) = (Served::of(&t.tier1), Served::of(&t.tier2));
    let started = std::time::Instant::now();
    let (pages_items, rv, pages) = walk_pages(&t.tier2, "/api/v1/configmaps", "", 10);
    let took = started.elapsed();
    let (tier1_after, tier2_after) = (Served::of(&t.tier1), Served::of(&t.tier2));
    let sim_list = ok(t.sim.get(&format!("/api/v1/configmaps?resourceVersion={rv}&resourceVersionMatch=Exact")), "configmaps").json();
    assert!(pages_items == items(&sim_list), "tier 2's pages are the simulator's list");
    assert_eq!(pages, 4);
    // Tier 1 catches up when it passes tier 2's probe of a quiet resource
    // through (as the apiserver's cache follows etcd's progress), and its
    // last bookmark before a watch's deadline waits for a newer revision:
    // so tier 2's catch-up watch proves the page's revision.
    assert_eq!(
        tier2_after.passed_through - tier2_before.passed_through,
        1,
        "tier 2 should pass only the first page through; paging took {took:?}, tier 1 answered {} lists and passed {} requests through",
        tier1_after.lists - tier1_before.lists,
        tier1_after.passed_through - tier1_before.passed_through,
    );
    assert_eq!(tier2_after.lists - tier2_before.lists, 3, "tier 2 answered the continue pages from memory");
}

/// Identities and permissions as `config/deploy/` grants them: the tiers'
/// service accounts may list and watch what they cache, review, and
/// impersonate users, groups, service accounts, uids and the extras of
/// service account tokens, key by key; the app's service account may read
/// pods and create configmaps in ns-0001.
const POLICY: &str = r#"{
  "users": [
    {"name": "system:serviceaccount:kache:kache", "uid": "u-tier1", "tokens": ["tier1-token"],
     "groups": ["system:serviceaccounts", "system:serviceaccounts:kache"],
     "extra": {"authentication.kubernetes.io/pod-name": ["kache-0"], "authentication.kubernetes.io/credential-id": ["JTI=t1"]}},
    {"name": "system:serviceaccount:kache:kache-tier2", "uid": "u-tier2", "tokens": ["tier2-token"],
     "groups": ["system:serviceaccounts", "system:serviceaccounts:kache"],
     "extra": {"authentication.kubernetes.io/pod-name": ["kache-tier2-0"], "authentication.kubernetes.io/credential-id": ["JTI=t2"]}},
    {"name": "system:serviceaccount:team:app", "uid": "u-app", "tokens": ["app-token"],
     "groups": ["system:serviceaccounts", "system:serviceaccounts:team"],
     "extra": {"authentication.kubernetes.io/pod-name": ["app-0"], "authentication.kubernetes.io/credential-id": ["JTI=app"]}},
    {"name": "mallory", "tokens": ["mallory-token"]},
    {"name": "root", "groups": ["system:masters"], "tokens": ["root-token"]}
  ],
  "rules": [
    {"subjects": ["user:system:serviceaccount:kache:kache", "user:system:serviceaccount:kache:kache-tier2"],
     "verbs": ["list", "watch"], "groups": [""], "resources": ["pods", "configmaps"]},
    {"subjects": ["user:system:serviceaccount:kache:kache", "user:system:serviceaccount:kache:kache-tier2"],
     "verbs": ["list", "watch"], "groups": ["flowcontrol.apiserver.k8s.io"], "resources": ["flowschemas", "prioritylevelconfigurations"]},
    {"subjects": ["user:system:serviceaccount:kache:kache", "user:system:serviceaccount:kache:kache-tier2"],
     "verbs": ["create"], "groups": ["authentication.k8s.io"], "resources": ["tokenreviews"]},
    {"subjects": ["user:system:serviceaccount:kache:kache", "user:system:serviceaccount:kache:kache-tier2"],
     "verbs": ["create"], "groups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"]},
    {"subjects": ["user:system:serviceaccount:kache:kache", "user:system:serviceaccount:kache:kache-tier2"],
     "verbs": ["impersonate"], "groups": [""], "resources": ["users", "groups", "serviceaccounts"]},
    {"subjects": ["user:system:serviceaccount:kache:kache", "user:system:serviceaccount:kache:kache-tier2"],
     "verbs": ["impersonate"], "groups": ["authentication.k8s.io"],
     "resources": ["uids", "userextras/authentication.kubernetes.io/credential-id", "userextras/authentication.kubernetes.io/node-name",
                   "userextras/authentication.kubernetes.io/node-uid", "userextras/authentication.kubernetes.io/pod-name",
                   "userextras/authentication.kubernetes.io/pod-uid"]},
    {"subjects": ["user:system:serviceaccount:team:app"], "verbs": ["get", "list", "watch"], "groups": [""], "resources": ["pods"], "namespaces": ["ns-0001"]},
    {"subjects": ["user:system:serviceaccount:team:app"], "verbs": ["create"], "groups": [""], "resources": ["configmaps"], "namespaces": ["ns-0001"]}
  ]
}"#;

/// The two tiers as `config/deploy/` runs them: each authenticates its
/// clients by TokenReview, tier 1 serves HTTPS, tier 2 trusts tier 1's CA
/// and lists, watches and reviews through it with its own token.
#[test]
fn with_client_authentication_on_both_tiers_a_client_is_itself_all_the_way_up() {
    let pki = Pki::new();
    let dir = tempfile::tempdir().expect("a temp dir");
    let policy = dir.path().join("policy.json");
    std::fs::write(&policy, POLICY).expect("the policy is written");
    let sim = Process::sim(&["--pods", "30", "--namespaces", "2", "--configmaps", "4", "--policy", policy.to_str().unwrap()]);
    let (cert, key) = (pki.path("server.crt"), pki.path("server.key"));
    let tier1 = Process::kache(
        &sim.url,
        &["--token", "tier1-token", "--token-review", "--tls-cert-file", &cert, "--tls-private-key-file", &key, "--resources", RESOURCES],
    );
    assert!(tier1.url.starts_with("https://"), "tier 1 serves HTTPS: {}", tier1.url);
    let ca = pki.path("ca.crt");
    let tier2 =
        Process::kache(&tier1.url, &["--token", "tier2-token", "--certificate-authority", &ca, "--token-review", "--resources", RESOURCES]);
    ready(&tier2);

    let as_app = [("authorization", "Bearer app-token")];
    let as_root = [("authorization", "Bearer root-token")];
    let served = |series: &str| metric_as(&tier2, series, &as_root);

    // A list the app may make: from tier 2's memory, the simulator's items.
    let lists = served("kache_lists_served_total");
    let pods = ok(tier2.request("GET", "/api/v1/namespaces/ns-0001/pods?resourceVersion=0", &as_app, None), "the app's list").json();
    assert_eq!(served("kache_lists_served_total"), lists + 1, "tier 2 answered the app's list from memory");
    let at = rv_of(&pods);
    let sim_pods =
        sim.request("GET", &format!("/api/v1/namespaces/ns-0001/pods?resourceVersion={at}&resourceVersionMatch=Exact"), &as_root, None);
    assert!(items(&pods) == items(&ok(sim_pods, "the simulator's list").json()) && !items(&pods).is_empty());

    // Lists it may not make, and strangers: the apiserver's 403 and 401.
    let denied = tier2.request("GET", "/api/v1/pods?resourceVersion=0", &as_app, None);
    assert_eq!(denied.status, 403, "{}", denied.text());
    assert!(
        denied
            .text()
            .contains(r#"User \"system:serviceaccount:team:app\" cannot list resource \"pods\" in API group \"\" at the cluster scope"#),
        "{}",
        denied.text()
    );
    assert_eq!(tier2.request("GET", "/api/v1/namespaces/ns-0001/pods", &[("authorization", "Bearer mallory-token")], None).status, 403);
    assert_eq!(tier2.get("/api/v1/namespaces/ns-0001/pods").status, 401);

    // Writes pass through both tiers and reach the simulator as the app
    // (uid and service account extras impersonated hop by hop): allowed
    // where the app may write, refused in its name where it may not.
    let body = br#"{"metadata":{"name":"from-the-app"}}"#.as_slice();
    let json_body = [("authorization", "Bearer app-token"), ("content-type", "application/json")];
    let created = tier2.request("POST", "/api/v1/namespaces/ns-0001/configmaps", &json_body, Some(body));
    assert_eq!(created.status, 201, "{}", created.text());
    let refused = tier2.request("POST", "/api/v1/namespaces/ns-0000/configmaps", &json_body, Some(body));
    assert_eq!(refused.status, 403, "{}", refused.text());
    assert!(
        refused.text().contains(r#"User \"system:serviceaccount:team:app\" cannot create resource \"configmaps\""#),
        "the simulator judged the app itself: {}",
        refused.text()
    );

    // RBAC has no wildcard for subresources: a grant of `userextras/*`
    // (the README's wording) lets kache impersonate no service account
    // extra, and every passed-through request of a service account is refused.
    let wildcard = POLICY.replace(r#""userextras/authentication.kubernetes.io/credential-id""#, r#""userextras/*""#);
    ok(
        sim.request(
            "POST",
            "/_sim/policy",
            &[("authorization", "Bearer root-token"), ("content-type", "application/json")],
            Some(wildcard.as_bytes()),
        ),
        "a new policy",
    );
    let refused = tier2.request("POST", "/api/v1/namespaces/ns-0001/configmaps", &json_body, Some(br#"{"metadata":{"name":"again"}}"#));
    assert_eq!(refused.status, 403, "{}", refused.text());
    assert!(refused.text().contains("userextras/authentication.kubernetes.io/credential-id"), "{}", refused.text());
}
