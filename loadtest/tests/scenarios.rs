//! Every scenario run at a small size as a user runs it, as a process: the
//! table, the JSON (parsed, every row checked) and the SVG (its series).
//! The tool starts the kache binary built beside it (`cargo test
//! --workspace` builds it); the real-cluster path runs against a simulator
//! and a kache this test starts, named through a kubeconfig and `--kache`,
//! and leaves nothing in that simulator however the run ends.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use kache::upstream::client::Client;
use kache::upstream::connect::ConnectArgs;
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
    // Kubelets' watches come from memory; an informer's consistent start may go upstream when
    // that is sooner (a quiet resource), with a catch-up to prove the reads that follow.
    let upstream = kache["extra"]["upstream watches"].as_f64().unwrap();
    assert!(upstream <= 3.0 + 1.0, "kache opened upstream watches per client: {}", kache["extra"]);
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
    let kinds = ["informer events", "informer syncs", "kubectl pages", "kubelet events", "kubelet lists"];
    for kind in kinds.into_iter().chain(["kubelet mount events", "kubelet mount lists"]) {
        assert_eq!(targets_of(&json, kind), ["sim", "kache"], "{kind}");
    }
    for row in rows(&json).iter().filter(|r| r["workload"].as_str().unwrap().ends_with("events")) {
        check_deliveries(row);
    }
    // Each informer synced twice (at the start and in the storm); each kubelet listed its pods and its 3 mounts twice.
    let ops =
        |workload: &str| rows(&json).iter().filter(|r| r["workload"] == workload).map(|r| r["operations"].clone()).collect::<Vec<_>>();
    assert_eq!(ops("informer syncs"), [4, 4]);
    assert_eq!(ops("kubelet lists"), [20, 20]);
    assert_eq!(ops("kubelet mount lists"), [60, 60]);
    for side in ["direct", "kache"] {
        let figures = &json[side];
        for key in ["apiserver_cpu_s", "apiserver_peak_rss_bytes", "kache_cpu_s", "kache_peak_rss_bytes", "delivery_p99_ms"] {
            assert!(figures[key].as_f64().is_some_and(|v| v > 0.0), "{side} {key}: {figures}");
        }
        for key in ["missed", "duplicated", "reordered"] {
            assert_eq!(figures[key], 0.0, "{side} {key}: {figures}");
        }
        // A relist storm, not a restart.
        assert!(figures["watches_ended_by_restart"].is_null() && figures["restart_apiserver_cpu_s"].is_null(), "{figures}");
    }
    assert!(stdout.contains("per side") && stdout.contains("apiserver_cpu_s"), "{stdout}");
}

/// A child process killed on drop.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `kache ARGS` and reads the URL it prints (`http://` or `https://`).
fn spawn(args: &[&str]) -> (Kill, String) {
    let mut child = Command::new(kache_bin()).args(args).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url =
        line.split_whitespace().find(|w| w.starts_with("http")).unwrap_or_else(|| panic!("`kache {args:?}` printed no URL: {line:?}"));
    let url = url.to_string();
    (Kill(child), url)
}

/// A kubeconfig in `dir` whose context `ctx` (not the current one) names
/// `server`, trusting `ca` when given, as a user with `token` or as no user.
fn kubeconfig(dir: &Path, server: &str, ca: Option<&Path>, token: Option<&str>) -> PathBuf {
    let ca = ca.map_or(String::new(), |ca| format!(", certificate-authority: \"{}\"", ca.display()));
    let (users, user) = match token {
        Some(t) => (format!("- name: u\n  user: {{token: {t}}}\n"), ", user: u"),
        None => (String::new(), ""),
    };
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: \"{server}\"{ca}}}\nusers:\n{users}\
             contexts:\n- name: ctx\n  context: {{cluster: c{user}}}\ncurrent-context: other\n"
        ),
    )
    .unwrap();
    path
}

/// `GET path` on the simulator at `url` (trusting `ca`): the status and the JSON body.
fn sim_get(url: &str, ca: Option<&Path>, path: &str) -> (u16, Value) {
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let connect = ConnectArgs { server: Some(url.into()), certificate_authority: ca.map(Path::to_path_buf), ..Default::default() };
        let client = Client::new(&connect.resolve().await.unwrap()).unwrap();
        let resp = client.get(path).await.unwrap();
        let status = resp.status().as_u16();
        (status, serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap_or_default())
    })
}

/// Nothing the tool labels as a run's (namespaces, Nodes, pods, secrets,
/// configmaps) is left in the simulator at `url`, nor namespace `RUN-0`.
fn assert_nothing_left(url: &str, ca: Option<&Path>, run: &str) {
    // The simulator deletes a namespace at once (it has no namespace controller); the tool waits for the rest.
    let (status, ns) = sim_get(url, ca, &format!("/api/v1/namespaces/{run}-0"));
    assert_eq!(status, 404, "namespace {run}-0 is still there: {ns}");
    for resource in ["namespaces", "nodes", "pods", "secrets", "configmaps"] {
        let path = format!("/api/v1/{resource}?labelSelector=kache-loadtest%2Frun");
        let (status, list) = sim_get(url, ca, &path);
        assert_eq!(status, 200, "{path}: {list}");
        assert_eq!(list["items"].as_array().map(Vec::len), Some(0), "{path} still lists some: {list}");
    }
}

/// Whether `said` says the run's objects, namespace `RUN-0` first, were deleted.
fn deleted(said: &str, run: &str) -> bool {
    said.lines().any(|l| l.contains("loadtest: deleted namespace") && l.contains(&format!(" {run}-0")))
}

/// A running `loadtest ARGS` (stdout discarded), killed on drop, and its stderr line by line.
struct Tool {
    child: Kill,
    stderr: mpsc::Receiver<String>,
    said: Vec<String>,
}

impl Tool {
    fn start(args: &[&str]) -> Tool {
        let mut child =
            Command::new(env!("CARGO_BIN_EXE_loadtest")).args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Tool { child: Kill(child), stderr: rx, said: Vec::new() }
    }

    /// The run's name, which its namespaces and Nodes begin with.
    fn run(&self) -> String {
        format!("kache-loadtest-{}", self.child.0.id())
    }

    /// Waits up to `within` for a line on stderr containing `text`; whether one came.
    fn wait_for(&mut self, text: &str, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while let Ok(line) = self.stderr.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            self.said.push(line);
            if self.said.last().is_some_and(|l| l.contains(text)) {
                return true;
            }
        }
        false
    }

    /// Waits up to `within` for the tool to exit, with everything it said.
    fn exit(&mut self, within: Duration) -> (ExitStatus, String) {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.0.try_wait().unwrap() {
                // The reader thread ends with the pipe.
                self.said.extend(self.stderr.iter());
                return (status, self.said.join("\n"));
            }
            assert!(Instant::now() < deadline, "loadtest still running after {within:?}:\n{}", self.said.join("\n"));
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[test]
fn small_requests_are_timed_on_both_sides_and_kache_says_how_it_answered_each() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("small.json");
    let bin = kache_bin();
    let args = ["small", "--kache-bin", bin.to_str().unwrap(), "--pods", "600", "--samples", "6", "--json", json.to_str().unwrap()];
    let out = Command::new(env!("CARGO_BIN_EXE_loadtest")).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "loadtest {args:?} failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let json: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let rows = rows(&json);
    assert_eq!(rows.len(), 4, "{json}");
    let answered =
        |i: usize| rows[i]["kache_answered"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect::<Vec<_>>();
    for (i, row) in rows.iter().enumerate() {
        for side in ["sim", "kache"] {
            let q = row[side].as_array().unwrap_or_else(|| panic!("{side} in {row}"));
            let q: Vec<f64> = q.iter().map(|v| v.as_f64().unwrap()).collect();
            assert!(q[0] > 0.0 && q[0] <= q[1] && q[1] <= q[2], "{side}: p50 <= p90 <= p99 in {row}");
        }
        let n: f64 = answered(i).iter().map(|a| a.rsplit(' ').next().unwrap().parse::<f64>().unwrap()).sum();
        assert_eq!(n, 6.0, "every sample of {} is counted by kache once: {:?}", row["request"], answered(i));
    }
    assert_eq!(answered(2), ["upstream: not cached 6"], "kache caches no Services");
    assert_eq!(answered(3), ["upstream: not a read 6"], "a PATCH passes through");
    assert!(stdout.contains("first page of 500 pods, Table"), "{stdout}");
}

#[test]
fn a_cluster_named_by_a_kubeconfig_is_measured_beside_the_kache_in_front_of_it() {
    let (_sim, sim) = spawn(&["sim", "--listen", "127.0.0.1:0", "--pods", "10", "--compact-interval", "0"]);
    let (_kache, kache) = spawn(&["serve", "--listen", "127.0.0.1:0", "--server", &sim, "--resources", "pods"]);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig(dir.path(), &sim, None, Some("t"));
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
        // kache's process is found by the port it listens on; the cluster's is not read from /proc.
        assert_eq!(row["cpu_seconds"].is_null(), row["target"] == "cluster", "{row}");
    }
    assert_eq!(json["params"]["collection"], "/api/v1/pods");
    assert_nothing_left(&sim, None, "kache-loadtest");
}

/// The worst day on the simulator: halfway, the cluster's apiserver
/// restarts (the command the run is given). Directly, every client's watch
/// ends and every client lists again; through kache, none, and no event is
/// missed on either side. The cluster's CPU comes from its `/metrics`.
#[test]
fn through_an_apiserver_restart_no_client_of_kache_loses_its_watch() {
    let (_sim, sim) = spawn(&["sim", "--listen", "127.0.0.1:0", "--compact-interval", "0"]);
    let (_kache, kache) = spawn(&["serve", "--listen", "127.0.0.1:0", "--server", &sim, "--resources", "pods,secrets,configmaps"]);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig(dir.path(), &sim, None, Some("t"));
    let kubeconfig = kubeconfig.to_str().unwrap();
    let restart = format!("kubectl --kubeconfig {kubeconfig} --context ctx create --raw /_sim/restart -f /dev/null >/dev/null");
    let (json, svg, stdout) = run(&[
        "mixed",
        "--kubeconfig",
        kubeconfig,
        "--context",
        "ctx",
        "--kache",
        &kache,
        "--kubelets",
        "6",
        "--pods-per-node",
        "3",
        "--controllers",
        "2",
        "--kubectl",
        "1",
        "--rate",
        "20",
        "--duration",
        "4",
        "--restart-command",
        &restart,
        "--restart-window",
        "8",
    ]);
    check_rows(&json, &svg, &stdout);
    // 6 kubelets watching their pods and 3 mounts each, and 2 informers.
    let clients = 6.0 * 4.0 + 2.0;
    let (direct, cached) = (&json["direct"], &json["kache"]);
    assert_eq!(direct["watches_ended_by_restart"], clients, "{direct}");
    // Each lists again unless no write came since its last event (its revision is then the restarted cache's first).
    assert!(direct["relists_after_restart"].as_f64().is_some_and(|n| n >= 1.0), "{direct}");
    assert_eq!(cached["watches_ended_by_restart"], 0.0, "{cached}");
    assert_eq!(cached["relists_after_restart"], 0.0, "{cached}");
    for figures in [direct, cached] {
        for key in ["missed", "duplicated", "reordered"] {
            assert_eq!(figures[key], 0.0, "{key}: {figures}");
        }
        for key in ["apiserver_cpu_s", "apiserver_peak_rss_bytes", "restart_apiserver_cpu_s", "delivery_p99_ms"] {
            assert!(figures[key].as_f64().is_some_and(|v| v > 0.0), "{key}: {figures}");
        }
    }
    assert!(cached["kache_cpu_s"].as_f64().is_some_and(|v| v > 0.0), "{cached}");
    assert_eq!(json["params"]["halfway"], "apiserver restart");
}

#[test]
fn thousands_of_watchers_start_on_an_https_cluster_and_ctrl_c_deletes_what_the_run_created() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.crt");
    // HTTP/2 with 100 streams a connection, as kube-apiserver: 2,020 watches need 21 connections.
    let (_sim, sim) = spawn(&["sim", "--listen", "127.0.0.1:0", "--compact-interval", "0", "--https-ca-out", ca.to_str().unwrap()]);
    assert!(sim.starts_with("https://"), "{sim}");
    let kubeconfig = kubeconfig(dir.path(), &sim, Some(&ca), None);
    let mut tool = Tool::start(&[
        "watch",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--context",
        "ctx",
        "--watchers",
        "2000",
        "--cluster-watchers",
        "20",
        "--pods-per-node",
        "2",
        "--rate",
        "50",
        "--duration",
        "30",
    ]);
    let run = tool.run();
    let started = tool.wait_for("all 2020 clients started on cluster", Duration::from_secs(30));
    // Mid-run: the writes have begun (or, when not every client started, the run is still starting).
    std::thread::sleep(Duration::from_secs(2));
    let kill = Command::new("kill").args(["-INT", &tool.child.0.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let (status, said) = tool.exit(Duration::from_secs(30));
    assert_eq!(status.code(), Some(130), "{status}:\n{said}");
    assert!(deleted(&said, &run), "{said}");
    assert_nothing_left(&sim, Some(&ca), &run);
    assert!(started, "not every client started in 30 s:\n{said}");
}

#[test]
fn a_run_that_fails_after_creating_its_pods_deletes_them() {
    let (_sim, sim) = spawn(&["sim", "--listen", "127.0.0.1:0", "--compact-interval", "0"]);
    // A kache that does not answer: the run fails once the direct target is measured, long after creating.
    let nothing = format!("http://{}", std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig(dir.path(), &sim, None, None);
    let mut tool = Tool::start(&[
        "watch",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--context",
        "ctx",
        "--kache",
        &nothing,
        "--watchers",
        "8",
        "--cluster-watchers",
        "2",
        "--pods-per-node",
        "2",
        "--rate",
        "20",
        "--duration",
        "1",
    ]);
    let run = tool.run();
    let (status, said) = tool.exit(Duration::from_secs(40));
    assert_eq!(status.code(), Some(1), "{status}:\n{said}");
    assert!(said.contains("all 10 clients started on cluster") && said.contains("Error:"), "{said}");
    assert!(deleted(&said, &run), "{said}");
    assert_nothing_left(&sim, None, &run);
}

#[test]
fn a_kache_url_needs_a_kubeconfig() {
    let out = Command::new(env!("CARGO_BIN_EXE_loadtest")).args(["lists", "--kache", "http://10.1.2.3:8001"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--kubeconfig"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn consistent_reads_and_streams_upstream_are_measured_over_https_both_ways() {
    let bin = kache_bin();
    let out = Command::new(env!("CARGO_BIN_EXE_loadtest"))
        .args(["consistent", "--kache-bin", bin.to_str().unwrap(), "--pods", "3000", "--requests", "1", "--streams", "300"])
        .args(["--list-mb-per-second", "20", "--rate", "50"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "loadtest consistent failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let line = |workload: &str, target: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(workload) && l[22..].trim_start().starts_with(target))
            .unwrap_or_else(|| panic!("no {workload} {target} in\n{stdout}"))
    };
    for target in ["kache", "sim"] {
        assert!(line("streams at once", target).contains("of 300 at once"));
        for workload in [
            "relayed list",
            "full list json",
            "full list protobuf",
            "full list table",
            "streaming list",
            "page of 500 table",
            "GET",
            "kubectl paging",
        ] {
            line(workload, target);
        }
    }
    // Continue pages come from memory; the GETs go upstream at once (as soon as memory would be).
    assert!(line("kubectl paging", "kache").contains("pages"), "{stdout}");
    assert!(stdout.contains("freshness proofs of pods"), "{stdout}");
}

#[test]
fn audit_compares_kaches_cpu_with_and_without_a_policy_and_every_event_is_written() {
    let (bin, args) = (kache_bin(), ["audit", "--watchers", "20", "--storms", "1", "--watch-seconds", "1", "--rounds", "1", "--kache-bin"]);
    let out = Command::new(env!("CARGO_BIN_EXE_loadtest")).args(args).arg(bin).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "loadtest audit failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let numbers = |start: &str| -> Vec<f64> {
        let line = stdout.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("no {start:?} in\n{stdout}"));
        line.split(|c: char| !c.is_ascii_digit() && c != '.').filter_map(|w| w.parse().ok()).collect()
    };
    let rows = [
        numbers("first load").len(),
        numbers("1        plain").len(),
        numbers("1        audited").len(),
        numbers("CPU with auditing").len().min(2),
        numbers("of which the log's thread").len(),
    ];
    assert_eq!(rows, [2, 2, 3, 2, 2], "{stdout}");
    // 20 kubelets, 2 cycles each, 5 events a cycle (a list's 2, a watch's 3), in the first load
    // (not counted) and the round's: all written, none dropped.
    let events = numbers("audit events written");
    assert!(events[0] >= 400.0 && events[1..] == [0.0, 400.0], "{stdout}");
}

#[test]
fn fairness_times_the_victim_read_by_read_and_names_what_kache_did_not_answer_from_memory() {
    let bin = kache_bin();
    let args = ["fairness", "--kache-bin", bin.to_str().unwrap(), "--pods", "600", "--seconds", "1", "--flood", "2"];
    let (json, svg, stdout) = run(&args);
    check_rows(&json, &svg, &stdout);
    let operations = |workload: &str, target: &str| {
        let row = rows(&json).iter().find(|r| r["workload"] == workload && r["target"] == target);
        row.unwrap_or_else(|| panic!("no {workload} row for {target}"))["operations"].as_u64().unwrap()
    };
    let lines: Vec<&str> = stdout.lines().skip_while(|l| !l.starts_with("the victim read by read")).collect();
    for target in ["sim", "kache"] {
        for phase in ["quiet", "flooded"] {
            let at = lines.iter().position(|l| l.split_whitespace().take(2).eq([target, phase]));
            let at = at.unwrap_or_else(|| panic!("no line for {target} {phase}:\n{stdout}"));
            // `object N, p50 / p99; consistent page of 50 N, …; one node's N, …`: every read counted, together the row's.
            let counts: Vec<u64> = lines[at]
                .split("; ")
                .map(|read| read.split(", ").next().unwrap().rsplit(' ').next().unwrap().parse().expect("a count"))
                .collect();
            assert_eq!(counts.len(), 3, "three reads: {}", lines[at]);
            assert!(counts.iter().all(|n| *n > 0), "every read was made: {}", lines[at]);
            let row = if phase == "quiet" { "victim quiet" } else { "victim flooded" };
            assert_eq!(counts.iter().sum::<u64>(), operations(row, target), "{target} {phase}: {}", lines[at]);
            // kache says which reads it did not answer from memory; the simulator is not asked.
            let roads = lines.get(at + 1).filter(|l| l.trim_start().starts_with("not from memory: "));
            assert_eq!(roads.is_some(), target == "kache", "{target} {phase}:\n{stdout}");
        }
    }
}
