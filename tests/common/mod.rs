//! Test harness: runs `kache sim` and `kache serve` as real processes on
//! free loopback ports and talks to them with real clients (kubectl, a
//! plain HTTP client).

#![allow(dead_code)] // Each test binary uses a different part of the harness.

pub mod pki;
pub mod promql;
pub mod watching;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Whether `tool` is here (`tool VERSION_ARG` succeeds). Where it is not,
/// the test says so and is skipped (`how`: where to get it; `untested`: what
/// goes untested) — except under `CI=true`, where `.ci/run` installs it and
/// its absence fails the test.
pub fn tool_present(tool: &str, version_arg: &str, how: &str, untested: &str) -> bool {
    let found = Command::new(tool).arg(version_arg).output().is_ok_and(|o| o.status.success());
    if !found {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{tool} is not installed, and CI=true: .ci/run installs it");
        eprintln!("skipped: {tool} is not installed ({how}); {untested}");
    }
    found
}

/// A `kache sim` or `kache serve` process, killed on drop.
pub struct Process {
    child: Child,
    /// `http://127.0.0.1:PORT` (or `https://`).
    pub url: String,
    /// The CA that a simulator serving HTTPS wrote (`Process::sim_https`).
    pub ca: Option<PathBuf>,
    kube_dir: tempfile::TempDir,
}

/// One HTTP response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

/// The log file of a [`Process::logged`] process, in its directory.
const LOG: &str = "stderr.log";

impl Process {
    /// Starts `kache sim --listen 127.0.0.1:0 ARGS` and waits until it serves.
    pub fn sim(args: &[&str]) -> Process {
        Self::spawn("sim", args)
    }

    /// Starts `kache serve --listen 127.0.0.1:0 --server UPSTREAM ARGS` and waits until it listens.
    pub fn kache(upstream: &str, args: &[&str]) -> Process {
        let mut all = vec!["--server", upstream];
        all.extend_from_slice(args);
        Self::spawn("serve", &all)
    }

    /// Starts `kache sim` serving HTTPS as kube-apiserver does (HTTP/2 by
    /// ALPN, 100 streams a connection) with a certificate it makes, whose
    /// CA is then [`Process::ca`].
    pub fn sim_https(args: &[&str]) -> Process {
        let kube_dir = tempfile::tempdir().expect("a temp dir");
        let ca = kube_dir.path().join("ca.crt");
        let mut all = vec!["--https-ca-out", ca.to_str().expect("a UTF-8 path")];
        all.extend_from_slice(args);
        let mut sim = Self::launch("sim", "127.0.0.1:0", &all, kube_dir);
        sim.ca = Some(ca);
        sim
    }

    /// Starts `kache serve` in front of `sim`, trusting its CA when it serves HTTPS.
    pub fn kache_over(sim: &Process, args: &[&str]) -> Process {
        let mut all: Vec<&str> = sim.ca.iter().flat_map(|ca| ["--certificate-authority", ca.to_str().expect("a UTF-8 path")]).collect();
        all.extend_from_slice(args);
        Self::kache(&sim.url, &all)
    }

    /// Starts `kache sim --listen 127.0.0.1:PORT ARGS` and waits until it serves.
    pub fn sim_at(port: u16, args: &[&str]) -> Process {
        Self::spawn_at("sim", &format!("127.0.0.1:{port}"), args)
    }

    fn spawn(subcommand: &str, args: &[&str]) -> Process {
        Self::spawn_at(subcommand, "127.0.0.1:0", args)
    }

    fn spawn_at(subcommand: &str, listen: &str, args: &[&str]) -> Process {
        Self::launch(subcommand, listen, args, tempfile::tempdir().expect("a temp dir"))
    }

    /// Starts `kache SUBCOMMAND --listen 127.0.0.1:0 ARGS` with its log in a
    /// file, read by [`Process::log`].
    pub fn logged(subcommand: &str, args: &[&str]) -> Process {
        let kube_dir = tempfile::tempdir().expect("a temp dir");
        let log = std::fs::File::create(kube_dir.path().join(LOG)).expect("a log file");
        Self::launch_with(subcommand, "127.0.0.1:0", args, kube_dir, log.into())
    }

    /// What a [`Process::logged`] process has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.kube_dir.path().join(LOG)).expect("started with Process::logged")
    }

    fn launch(subcommand: &str, listen: &str, args: &[&str], kube_dir: tempfile::TempDir) -> Process {
        Self::launch_with(subcommand, listen, args, kube_dir, Stdio::inherit())
    }

    fn launch_with(subcommand: &str, listen: &str, args: &[&str], kube_dir: tempfile::TempDir, stderr: Stdio) -> Process {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kache"))
            .args([subcommand, "--listen", listen])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("kache runs");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        reader.read_line(&mut line).expect("kache prints its address");
        // Keep draining so the process never writes into a closed pipe.
        std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://") || w.starts_with("https://"))
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Process { child, url, ca: None, kube_dir }
    }

    /// Runs kubectl against the simulator with a private cache and no kubeconfig.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_stdin(args, None)
    }

    /// Runs kubectl with `stdin` as its standard input.
    pub fn kubectl_stdin(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut cmd = Command::new("kubectl");
        cmd.arg("--server").arg(&self.url);
        if let Some(ca) = &self.ca {
            // Over HTTPS without credentials kubectl would prompt for a user name; the simulator takes any token.
            cmd.arg("--certificate-authority").arg(ca).arg("--token").arg("kache-test");
        }
        cmd.args(args)
            .env("KUBECONFIG", self.kube_dir.path().join("config"))
            .env("KUBECACHEDIR", self.kube_dir.path().join("cache"))
            .env("HOME", self.kube_dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("kubectl is installed");
        if let Some(input) = stdin {
            use std::io::Write;
            child.stdin.take().expect("piped stdin").write_all(input.as_bytes()).expect("kubectl reads stdin");
        }
        drop(child.stdin.take());
        child.wait_with_output().expect("kubectl finishes")
    }

    /// kubectl that must succeed; returns stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(out.status.success(), "kubectl {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("UTF-8 output")
    }

    /// An HTTP request to the simulator.
    pub fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Resp {
        request(&format!("{}{path}", self.url), method, headers, body)
    }

    /// `GET path`.
    pub fn get(&self, path: &str) -> Resp {
        self.request("GET", path, &[], None)
    }

    /// Requests of `verb` on `resource` this simulator has served (its `/_sim/stats`).
    pub fn served(&self, resource: &str, verb: &str) -> u64 {
        let stats = self.get("/_sim/stats").json();
        stats["requests"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["resource"] == resource && r["verb"] == verb)
            .map_or(0, |r| r["count"].as_u64().unwrap_or(0))
    }

    /// `POST path` with a JSON body.
    pub fn post(&self, path: &str, body: &serde_json::Value) -> Resp {
        self.request("POST", path, &[("content-type", "application/json")], Some(body.to_string().as_bytes()))
    }

    /// Kills the process (SIGKILL) and reaps it.
    pub fn child_kill(&mut self) -> std::io::Result<()> {
        self.child.kill()?;
        self.child.wait().map(|_| ())
    }

    /// Waits up to `timeout` for the process to exit.
    pub fn wait(&mut self, timeout: Duration) -> std::process::ExitStatus {
        eventually(timeout, "the process to exit", || self.child.try_wait().expect("waitable"))
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The simulator's current revision.
    pub fn revision(&self) -> u64 {
        self.get("/_sim/stats").json()["revision"].as_u64().expect("a revision")
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every sample of a Prometheus text exposition at `/metrics`, by series (`name{labels}` as written).
pub fn scrape(process: &Process) -> std::collections::HashMap<String, f64> {
    let text = process.get("/metrics").text();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap_or_else(|| panic!("not a sample: {l}"));
            (series.to_string(), value.parse::<f64>().unwrap_or_else(|e| panic!("{l}: {e}")))
        })
        .collect()
}

/// One HTTP/1.1 request with a plain client that reports every status as a response.
pub fn request(url: &str, method: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Resp {
    let agent: ureq::Agent =
        ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(Duration::from_secs(60))).build().into();
    let mut req = ureq::http::Request::builder().method(method).uri(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(body.map(<[u8]>::to_vec).unwrap_or_default()).expect("a valid request");
    let mut resp = agent.run(req).unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let status = resp.status().as_u16();
    let headers = resp.headers().iter().map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string())).collect();
    let body = resp.body_mut().with_config().limit(u64::MAX).read_to_vec().expect("a body");
    Resp { status, headers, body }
}

/// Polls `f` until it returns `Some`, or panics after `timeout`.
pub fn eventually<T>(timeout: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The captured kube-apiserver 1.36 responses.
pub fn reference_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/reference/apiserver-1.36")
}

/// An open watch: its lines arrive on `lines`; the channel disconnects when the stream ends.
pub struct Watch {
    pub lines: std::sync::mpsc::Receiver<serde_json::Value>,
}

impl Watch {
    /// The next event, or `None` if the stream ended or nothing came within `timeout`.
    pub fn next(&self, timeout: Duration) -> Option<serde_json::Value> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// Whether the stream is still open (events not yet read do not count as an end).
    pub fn is_open(&self) -> bool {
        !matches!(self.lines.try_recv(), Err(std::sync::mpsc::TryRecvError::Disconnected))
    }

    /// Waits for the stream to end; panics if it is still open after `timeout`.
    pub fn expect_end(&self, timeout: Duration) -> Vec<serde_json::Value> {
        let deadline = Instant::now() + timeout;
        let mut rest = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) => rest.push(v),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return rest,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("the watch did not end; got {rest:?}"),
            }
        }
    }
}

impl Process {
    /// Opens a watch (`path` must carry `watch=1`) and streams its events.
    pub fn watch(&self, path: &str) -> Watch {
        self.try_watch(path).unwrap_or_else(|status| panic!("watch {path}: {status}"))
    }

    /// Opens a watch, or returns the status that refused it.
    pub fn try_watch(&self, path: &str) -> Result<Watch, u16> {
        let url = format!("{}{path}", self.url);
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let resp = agent.get(&url).call().unwrap_or_else(|e| panic!("GET {url}: {e}"));
        if resp.status().as_u16() != 200 {
            return Err(resp.status().as_u16());
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let reader = BufReader::new(resp.into_body().into_reader());
            for line in reader.lines().map_while(Result::ok) {
                if tx.send(serde_json::from_str(&line).expect("watch frames are JSON")).is_err() {
                    return;
                }
            }
        });
        Ok(Watch { lines: rx })
    }
}
