//! How kache answered, read from its own `/metrics`: `kache_requests_total`
//! by (verb, resource) and road — `memory`, `upstream: REASON` or `kache`
//! (its own answers: errors, 429s). Scenarios read it before and after a
//! run and report the difference ([`since`]).

use std::collections::BTreeMap;

use anyhow::{Context, bail};

use crate::target::Target;

/// kache's answers so far, by (verb, resource) and then road (`memory`, `upstream: REASON`, `kache`).
pub type Roads = BTreeMap<(String, String), BTreeMap<String, f64>>;

/// kache's `kache_requests_total`, read from its `/metrics`.
pub async fn roads(kache: &Target) -> anyhow::Result<Roads> {
    let (status, text) = kache.http.get("/metrics", &[]).await?;
    if status != 200 {
        bail!("kache's /metrics: status {status}");
    }
    let mut roads = Roads::new();
    for line in String::from_utf8_lossy(&text).lines().filter(|l| l.starts_with("kache_requests_total{")) {
        let (series, value) = line.rsplit_once(' ').context("a sample")?;
        let labels = labels(series);
        let label = |name: &str| labels.get(name).cloned().unwrap_or_default();
        let road = match (label("source").as_str(), label("reason")) {
            ("upstream", reason) => format!("upstream: {reason}"),
            (source, _) => source.to_string(),
        };
        *roads.entry((label("verb"), label("resource"))).or_default().entry(road).or_default() += value.parse::<f64>().unwrap_or(0.0);
    }
    Ok(roads)
}

/// The labels of a Prometheus series `name{a="x",b="y"}` (values without escapes, as kache's are).
fn labels(series: &str) -> BTreeMap<String, String> {
    let inner = series.split_once('{').and_then(|(_, rest)| rest.strip_suffix('}')).unwrap_or_default();
    let mut out = BTreeMap::new();
    let mut rest = inner;
    while let Some((name, after)) = rest.split_once("=\"") {
        let Some((value, tail)) = after.split_once('"') else { break };
        out.insert(name.trim_start_matches(',').to_string(), value.to_string());
        rest = tail;
    }
    out
}

/// `key`'s answers by road between `before` and `after`, as `road n` (roads with none left out).
pub fn since(before: &Roads, after: &Roads, key: &(String, String)) -> Vec<String> {
    after
        .get(key)
        .into_iter()
        .flatten()
        .map(|(road, n)| (road, n - before.get(key).and_then(|r| r.get(road)).copied().unwrap_or(0.0)))
        .filter(|(_, n)| *n > 0.0)
        .map(|(road, n)| format!("{road} {n}"))
        .collect()
}
