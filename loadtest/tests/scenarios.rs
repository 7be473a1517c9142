//! Every scenario run at a small size as a user runs it, as a process: the
//! table, the JSON (parsed, every row checked) and the SVG (its series).
//! The tool starts the kache binary built beside it (`cargo test
//! --workspace` builds it); the real-cluster path runs against a simulator
//! and a kache this test starts, named through a kubeconfig and `--kache`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// The kache binary next to the loadtest binary.
fn kache_bin() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_loadtest")).with_file_name(format!("kache{}", std::env::consts::EXE_SUFFIX));
    assert!(bin.exists(), "{} is missing: build the workspace (`cargo test --workspace` builds it)", bin.display());
    bin
}

/// Runs `loadtest ARGS --json J --plot P`; returns the parsed JSON, the SVG and stdout.
fn run(args: &[&str]) -> (Value, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (json, svg) = (dir.path().join("out.json"), dir.path().join("out.svg"));
    let out = Command::new(env!("CARGO_BIN_EXE_loadtest")).args(args).arg("--json").arg(&json).arg("--plot").arg(&svg).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "loadtest {args:?} failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let json: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).expect("the JSON parses");
    (json, std::fs::read_to_string(&svg).expect("the SVG exists"), stdout)
}

/// The rows of a report.
fn rows(json: &Value) -> &Vec<Value> {
    json["rows"].as_array().expect("rows")
}

/// Every row answered without errors, with latencies and a timeline; every series is in the SVG.
fn check_rows(json: &Value, svg: &str, stdout: &str) {
    assert!(svg.starts_with("<svg"), "not an SVG");
    for row in rows(json) {
        let (workload, target) = (row["workload"].as_str().unwrap(), row["target"].as_str().unwrap());
        assert!(row["operations"].as_u64().unwrap() > 0, "{workload} on {target}: no operations");
        assert_eq!(row["errors"], 0, "{workload} on {target}: {}", row["statuses"]);
        assert!(row["latency_us"]["p50"].as_u64().unwrap() > 0, "{workload} on {target}: no latency");
        assert!(row["latency_us"]["p50"].as_u64() <= row["latency_us"]["max"].as_u64(), "{workload} on {target}: p50 > max");
        assert!(!row["latency_cdf_us"].as_array().unwrap().is_empty(), "{workload} on {target}: no CDF");
        assert!(!row["throughput_timeline"].as_array().unwrap().is_empty(), "{workload} on {target}: no timeline");
        // A caption per workload, a legend entry per target.
        assert!(svg.contains(&format!("{}: latency CDF", workload.replace('\'', "&apos;"))), "no CDF panel for {workload}");
        assert!(svg.contains(&format!("{}: throughput", workload.replace('\'', "&apos;"))), "no throughput panel for {workload}");
        assert!(svg.contains(&format!(">\n{target}\n</text>")), "no series for {target}");
        assert!(stdout.contains(workload), "the table lacks {workload}");
    }
}

/// The targets of the rows of `workload`.
fn targets_of(json: &Value, workload: &str) -> Vec<String> {
    rows(json).iter().filter(|r| r["workload"] == workload).map(|r| r["target"].as_str().unwrap().to_string()).collect()
}

/// A watch row delivered every event it had to, once, in order.
fn check_deliveries(row: &Value) {
    let name = format!("{} on {}", row["workload"], row["target"]);
    let extra = &row["extra"];
    assert!(extra["expected"].as_f64().unwrap() > 0.0, "{name}: nothing expected");
    for count in ["missed", "duplicated", "reordered"] {
        assert_eq!(extra[count].as_f64(), Some(0.0), "{name}: {count} {}", extra);
    }
    let covered = extra["covered by lists"].as_f64().unwrap_or(0.0);
    assert_eq!(row["operations"].as_f64().unwrap() + covered, extra["expected"].as_f64().unwrap(), "{name}: {extra}");
}

#[test]
fn lists_measure_the_simulator_kache_and_a_plain_server_in_every_encoding() {
    let bin = kache_bin();
    let (json, svg, stdout) = run(&[
        "lists",
        "--kache-bin",
        bin.to_str().unwrap(),
        "--pods",
        "300",
        "--nodes",
        "3",
        "--requests",
        "2",
        "--pages",
        "4",
        "--page-size",
        "50",
    ]);
    check_rows(&json, &svg, &stdout);
    let workloads = [
        "full rv=0",
        "full rv=0 gzip",
        "full consistent",
        "pages of 50 json",
        "pages of 50 protobuf",
        "pages of 50 table",
        "one node's",
        "one label's",
    ];
    for w in workloads {
        assert_eq!(targets_of(&json, w), ["sim", "kache", "plain"], "{w}");
    }
    assert_eq!(rows(&json).len(), workloads.len() * 3);
    let row = |w: &str, t: &str| rows(&json).iter().find(|r| r["workload"] == w && r["target"] == t).unwrap().clone();
    // The same bytes from every target; gzip shrinks them.
    let full = row("full rv=0", "kache")["bytes_received"].as_u64().unwrap();
    assert_eq!(row("full rv=0", "sim")["bytes_received"].as_u64().unwrap(), full);
    assert!(row("full rv=0 gzip", "kache")["bytes_received"].as_u64().unwrap() < full / 3);
    // Ratios against the direct target, and the local processes' usage.
    assert!(row("full rv=0", "kache")["vs_direct"]["throughput"].as_f64().unwrap() > 0.0);
    assert!(row("full rv=0", "sim")["vs_direct"].is_null());
    assert!(row("full rv=0", "kache")["peak_rss_bytes"].as_u64().unwrap() > 1_000_000);
    assert!(row("full rv=0", "plain")["cpu_seconds"].is_null());
    assert_eq!(row("pages of 50 protobuf", "kache")["operations"], 4);
}

#[test]
fn watch_counts_every_delivery_through_kache_and_directly() {
    let bin = kache_bin();
    let (json, svg, stdout) = run(&[
        "watch",
        "--kache-bin",
        bin.to_str().unwrap(),
        "--watchers",
        "20",
        "--cluster-watchers",
        "3",
        "--rate",
        "40",
        "--duration",
        "2",
    ]);
    check_rows(&json, &svg, &stdout);
    assert_eq!(targets_of(&json, "23 watchers"), ["sim", "kache"]);
    for row in rows(&json) {
        check_deliveries(row);
    }
    let kache = &rows(&json)[1];
    assert_eq!(kache["extra"]["upstream watches"], 0.0, "kache opened upstream watches per client: {}", kache["extra"]);
}

#[test]
fn mixed_clients_see_every_write_through_a_relist_storm() {
    let bin = kache_bin();
    let (json, svg, stdout) = run(&[
        "mixed",
        "--kache-bin",
        bin.to_str().unwrap(),
        "--kubelets",
        "10",
        "--pods-per-node",
        "10",
        "--controllers",
        "2",
        "--kubectl",
        "1",
        "--rate",
        "30",
        "--duration",
        "4",
    ]);
    check_rows(&json, &svg, &stdout);
    for kind in ["informer events", "informer syncs", "kubectl pages", "kubelet events", "kubelet lists"] {
        assert_eq!(targets_of(&json, kind), ["sim", "kache"], "{kind}");
    }
    for row in rows(&json).iter().filter(|r| r["workload"].as_str().unwrap().ends_with("events")) {
        check_deliveries(row);
    }
    // Each informer synced twice (at the start and in the storm); each kubelet listed twice.
    for row in rows(&json).iter().filter(|r| r["workload"] == "informer syncs") {
        assert_eq!(row["operations"], 4, "{}", row["target"]);
    }
    for row in rows(&json).iter().filter(|r| r["workload"] == "kubelet lists") {
        assert_eq!(row["operations"], 20, "{}", row["target"]);
    }
}

/// A child process killed on drop.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `kache ARGS` and reads the URL it prints.
fn spawn(args: &[&str]) -> (Kill, String) {
    use std::io::BufRead;
    let mut child = Command::new(kache_bin()).args(args).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.split_whitespace().find(|w| w.starts_with("http://")).unwrap().to_string();
    (Kill(child), url)
}

#[test]
fn a_cluster_named_by_a_kubeconfig_is_measured_beside_the_kache_in_front_of_it() {
    let (_sim, sim) = spawn(&["sim", "--listen", "127.0.0.1:0", "--pods", "10", "--compact-interval", "0"]);
    let (_kache, kache) = spawn(&["serve", "--listen", "127.0.0.1:0", "--server", &sim, "--resources", "configmaps"]);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: \"{sim}\"}}\nusers:\n- name: u\n  user: {{token: t}}\n\
             contexts:\n- name: ctx\n  context: {{cluster: c, user: u}}\ncurrent-context: other\n"
        ),
    )
    .unwrap();
    let (json, svg, stdout) = run(&[
        "watch",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--context",
        "ctx",
        "--kache",
        &kache,
        "--watchers",
        "8",
        "--cluster-watchers",
        "2",
        "--pods-per-node",
        "2",
        "--rate",
        "20",
        "--duration",
        "2",
    ]);
    check_rows(&json, &svg, &stdout);
    assert_eq!(targets_of(&json, "10 watchers"), ["cluster", "kache"]);
    for row in rows(&json) {
        check_deliveries(row);
        assert!(row["cpu_seconds"].is_null(), "a remote target has no /proc figures");
    }
    let collection = json["params"]["collection"].as_str().unwrap();
    assert!(collection.starts_with("/api/v1/namespaces/kache-loadtest-") && collection.ends_with("/configmaps"), "{collection}");
}

#[test]
fn a_kache_url_needs_a_kubeconfig() {
    let out = Command::new(env!("CARGO_BIN_EXE_loadtest")).args(["lists", "--kache", "http://10.1.2.3:8001"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--kubeconfig"), "{}", String::from_utf8_lossy(&out.stderr));
}
