//! `loadtest auth`: what client authentication and authorization cost.
//! One simulator enforcing a policy of `--identities` users, and two kaches
//! in front of it — one without client authentication, one with
//! `--token-review` — answer the same paged lists from memory, each request
//! with one of the users' tokens in turn: latency and throughput with auth
//! off, on with cold review caches, and on with warm ones; and the reviews
//! kache sent upstream per second while its caches filled.

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;

use crate::procs::{self, HttpClient, Proc, get, get_with};

/// Options of `loadtest auth`.
#[derive(Debug, Args)]
pub struct AuthArgs {
    /// The kache binary (build it with `cargo build --release`).
    #[arg(long, default_value = "target/release/kache")]
    kache_bin: String,
    /// Pods in the simulated cluster.
    #[arg(long, default_value_t = 10_000)]
    pods: usize,
    /// Distinct users sending requests.
    #[arg(long, default_value_t = 100)]
    identities: usize,
    /// Requests per run.
    #[arg(long, default_value_t = 2_000)]
    requests: usize,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
}

fn policy(identities: usize) -> String {
    let users: Vec<serde_json::Value> = (0..identities)
        .map(|i| serde_json::json!({"name": format!("user-{i:03}"), "groups": ["readers"], "tokens": [format!("token-{i:03}")]}))
        .collect();
    let mut all = users;
    all.push(serde_json::json!({"name": "kache", "tokens": ["kache-token"]}));
    serde_json::json!({
        "users": all,
        "rules": [
            {"subjects": ["group:readers"], "verbs": ["get", "list", "watch"], "groups": [""], "resources": ["pods"]},
            {"subjects": ["user:user-000"], "verbs": ["get"], "paths": ["/metrics"]},
            {"subjects": ["user:kache"], "verbs": ["get", "list", "watch"], "groups": ["*"], "resources": ["*"]},
            {"subjects": ["user:kache"], "verbs": ["create"], "groups": ["authentication.k8s.io"], "resources": ["tokenreviews"]},
            {"subjects": ["user:kache"], "verbs": ["create"], "groups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"]},
            {"subjects": ["user:kache"], "verbs": ["impersonate"], "groups": ["", "authentication.k8s.io"], "resources": ["users", "groups", "serviceaccounts", "uids", "userextras/*"]}
        ]
    })
    .to_string()
}

struct Outcome {
    rps: f64,
    p50: Duration,
    p99: Duration,
}

/// `n` GETs of `url`, each with the next user's token, `concurrency` at a time.
async fn run(client: &HttpClient, url: &str, identities: usize, n: usize, concurrency: usize) -> anyhow::Result<Outcome> {
    let token = move |i: usize| vec![("authorization", format!("Bearer token-{:03}", i % identities))];
    let s = procs::drive(client, url, n, concurrency, token).await?;
    Ok(Outcome { rps: s.rps(), p50: s.quantile(0.5), p99: s.quantile(0.99) })
}

/// The median and p99 time from sending a watch to its response head, once per identity.
async fn watch_starts(client: &HttpClient, url: &str, identities: usize) -> anyhow::Result<(Duration, Duration)> {
    let mut times = Vec::new();
    for i in 0..identities {
        let req = hyper::Request::get(url).header("authorization", format!("Bearer token-{i:03}")).body(http_body_util::Empty::new())?;
        let t = Instant::now();
        let resp = client.request(req).await?;
        times.push(t.elapsed());
        anyhow::ensure!(resp.status() == 200, "{url}: status {}", resp.status());
    }
    times.sort();
    Ok((times[times.len() / 2], times[(times.len() * 99 / 100).min(times.len() - 1)]))
}

async fn metric(client: &HttpClient, kache: &str, name: &str) -> anyhow::Result<u64> {
    let (_, body) = get_with(client, &format!("{kache}/metrics"), &[("authorization", "Bearer token-000")]).await?;
    let text = String::from_utf8_lossy(&body).into_owned();
    text.lines().find_map(|l| l.strip_prefix(name)?.trim().parse().ok()).with_context(|| format!("no {name} in /metrics"))
}

/// Runs the three cases.
pub async fn run_all(args: AuthArgs) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("kache-loadtest-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let policy_file = dir.join("policy.json");
    std::fs::write(&policy_file, policy(args.identities))?;
    let sim = Proc::sim(&args.kache_bin, args.pods, args.pods / 100, &["--policy", policy_file.to_str().context("a path")?])?;
    let off = Proc::kache(&args.kache_bin, &sim.url, &["--token", "kache-token"])?;
    let on = Proc::kache(&args.kache_bin, &sim.url, &["--token", "kache-token", "--token-review"])?;
    let client = procs::client();
    for k in [&off, &on] {
        procs::ready(&client, &format!("{}/readyz", k.url), Duration::from_secs(600)).await?;
    }
    let (_, head) = get_with(&client, &format!("{}/api/v1/namespaces/none/pods?resourceVersion=0", off.url), &[]).await?;
    let rv = serde_json::from_slice::<serde_json::Value>(&head)?["metadata"]["resourceVersion"].as_str().context("a revision")?.to_string();
    let path = format!("/api/v1/pods?resourceVersion={rv}&resourceVersionMatch=Exact&limit=500");
    println!(
        "{} pods, {} identities, {} paged lists (limit=500) per run, {} in flight\n",
        args.pods, args.identities, args.requests, args.concurrency
    );
    println!("{:<28} {:>9} {:>10} {:>10}", "case", "req/s", "p50", "p99");
    let base = run(&client, &format!("{}{path}", off.url), args.identities, args.requests, args.concurrency).await?;
    println!("{:<28} {:>9.1} {:>10.2?} {:>10.2?}", "auth off", base.rps, base.p50, base.p99);
    let (t0, a0) =
        (metric(&client, &on.url, "kache_token_reviews_total").await?, metric(&client, &on.url, "kache_access_reviews_total").await?);
    let started = Instant::now();
    let cold = run(&client, &format!("{}{path}", on.url), args.identities, args.requests, args.concurrency).await?;
    let cold_wall = started.elapsed();
    let (t1, a1) =
        (metric(&client, &on.url, "kache_token_reviews_total").await?, metric(&client, &on.url, "kache_access_reviews_total").await?);
    println!("{:<28} {:>9.1} {:>10.2?} {:>10.2?}", "auth on, caches cold", cold.rps, cold.p50, cold.p99);
    let warm = run(&client, &format!("{}{path}", on.url), args.identities, args.requests, args.concurrency).await?;
    let (t2, a2) =
        (metric(&client, &on.url, "kache_token_reviews_total").await?, metric(&client, &on.url, "kache_access_reviews_total").await?);
    println!("{:<28} {:>9.1} {:>10.2?} {:>10.2?}", "auth on, caches warm", warm.rps, warm.p50, warm.p99);
    println!(
        "\nreviews upstream: cold run {} TokenReviews + {} SubjectAccessReviews in {:.2?} ({:.0}/s); warm run {} + {}",
        t1 - t0,
        a1 - a0,
        cold_wall,
        (t1 - t0 + a1 - a0) as f64 / cold_wall.as_secs_f64(),
        t2 - t1,
        a2 - a1
    );
    println!("ratios: warm/off throughput {:.2}x, p50 {:.2}x", warm.rps / base.rps, warm.p50.as_secs_f64() / base.p50.as_secs_f64());
    // Watches: what auth adds is at the start (a review, then a re-check each allow TTL); events flow as before.
    let watch = format!("/api/v1/pods?watch=1&resourceVersion={rv}&timeoutSeconds=5");
    let off_start = watch_starts(&client, &format!("{}{watch}", off.url), args.identities).await?;
    watch_starts(&client, &format!("{}{watch}", on.url), args.identities).await?;
    let on_start = watch_starts(&client, &format!("{}{watch}", on.url), args.identities).await?;
    println!(
        "watch start (to the response head, {} watches): auth off p50 {:.2?} p99 {:.2?}; on, warm p50 {:.2?} p99 {:.2?}",
        args.identities, off_start.0, off_start.1, on_start.0, on_start.1
    );
    let _ = get(&client, &format!("{}/healthz", on.url), false).await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
