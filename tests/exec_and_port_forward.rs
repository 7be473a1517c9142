//! kubectl, unchanged, runs commands in the simulator's pods: `exec` and
//! `attach` over the WebSocket remote-command protocol, `port-forward` over
//! SPDY (tunnelled in a WebSocket, and plain), and the apiserver's refusals of
//! connect requests it cannot upgrade. Every check runs twice: against the
//! simulator directly and through kache in front of it, which must tunnel
//! each upgrade (and pass each refusal) unchanged.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::Process;
use serde_json::json;

const NS: &str = "ns-0000";
const POD: &str = "app-00000-0000000";
const POD_PATH: &str = "/api/v1/namespaces/ns-0000/pods/app-00000-0000000";

/// How long one kubectl run may take before the test fails.
const KUBECTL_TIMEOUT: Duration = Duration::from_secs(30);

/// The simulator, and kache in front of it.
struct Cluster {
    sim: Process,
    kache: Process,
}

impl Cluster {
    /// Both ways in: directly, and through kache.
    fn servers(&self) -> [&Process; 2] {
        [&self.sim, &self.kache]
    }
}

fn cluster() -> Cluster {
    let sim = Process::sim(&["--pods", "3", "--namespaces", "1", "--nodes", "1"]);
    let kache = Process::kache(&sim.url, &["--resources", "pods"]);
    Cluster { sim, kache }
}

/// Runs `kubectl --server SIM -n ns-0000 ARGS` with `stdin`, killed after [`KUBECTL_TIMEOUT`].
fn kubectl(sim: &Process, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let home = tempfile::tempdir().expect("a temp dir");
    let mut child = Command::new("kubectl")
        .args(["--server", &sim.url, "-n", NS])
        .args(args)
        .env("KUBECONFIG", home.path().join("config"))
        .env("KUBECACHEDIR", home.path().join("cache"))
        .env("HOME", home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl is installed");
    let mut input = child.stdin.take().expect("piped stdin");
    if let Some(bytes) = stdin {
        input.write_all(bytes).expect("kubectl reads stdin");
    }
    drop(input);
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let deadline = Instant::now() + KUBECTL_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("kubectl runs") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("kubectl {args:?} did not finish within {KUBECTL_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output { status, stdout: stdout.join().expect("stdout reader"), stderr: stderr.join().expect("stderr reader") }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn kubectl_exec_prints_the_command_output() {
    let cluster = cluster();
    for sim in cluster.servers() {
        let out = kubectl(sim, &["exec", POD, "--", "echo", "hello", "world"], None);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "hello world\n");
        let out = kubectl(sim, &["exec", POD, "--", "hostname"], None);
        assert_eq!((out.status.code(), text(&out.stdout)), (Some(0), format!("{POD}\n")));
    }
}

#[test]
fn kubectl_exec_exits_with_the_command_exit_code() {
    let cluster = cluster();
    for sim in cluster.servers() {
        let out = kubectl(sim, &["exec", POD, "--", "sh", "-c", "exit 3"], None);
        assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains("command terminated with exit code 3"), "{}", text(&out.stderr));
        let out = kubectl(sim, &["exec", POD, "--", "false"], None);
        assert_eq!(out.status.code(), Some(1));
        let out = kubectl(sim, &["exec", POD, "--", "ls", "-l"], None);
        assert_eq!(out.status.code(), Some(127));
        assert!(text(&out.stderr).starts_with("ls: command not found\n"), "{}", text(&out.stderr));
        assert!(text(&out.stdout).is_empty());
    }
}

#[test]
fn kubectl_exec_copies_stdin_until_it_closes() {
    let cluster = cluster();
    for sim in cluster.servers() {
        let out = kubectl(sim, &["exec", "-i", POD, "--", "cat"], Some(b"abc"));
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "abc");
        // A larger input than one message, through a shell reading line by line.
        let script: String = (0..2000).map(|i| format!("echo line {i}\n")).collect();
        let out = kubectl(sim, &["exec", "-i", POD, "--", "sh"], Some(format!("{script}exit 5\n").as_bytes()));
        assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
        let expected: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        assert_eq!(text(&out.stdout), expected);
    }
}

#[test]
fn kubectl_attach_shows_the_container_output_and_echoes_stdin() {
    let cluster = cluster();
    for sim in cluster.servers() {
        let out = kubectl(sim, &["attach", "-i", POD], Some(b"typed\n"));
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), format!("simulated log of pod {NS}/{POD}\ntyped\n"));
    }
}

#[test]
fn kubectl_exec_into_a_missing_pod_is_not_found() {
    let cluster = cluster();
    for sim in cluster.servers() {
        let out = kubectl(sim, &["exec", "nope", "--", "true"], None);
        assert_eq!(out.status.code(), Some(1));
        assert!(text(&out.stderr).contains(r#"Error from server (NotFound): pods "nope" not found"#), "{}", text(&out.stderr));
    }
}

#[test]
fn connect_requests_that_cannot_be_upgraded_get_the_apiserver_status() {
    let cluster = cluster();
    for sim in cluster.servers() {
        let status = |path: &str, headers: &[(&str, &str)]| {
            let r = sim.request("GET", path, headers, None);
            let v = r.json();
            (r.status, v["reason"].as_str().unwrap_or_default().to_string(), v["message"].as_str().unwrap_or_default().to_string())
        };
        let owned = |code: u16, reason: &str, message: &str| (code, reason.to_string(), message.to_string());
        assert_eq!(status(&format!("{POD_PATH}/exec?command=ls&stdout=true"), &[]), owned(400, "BadRequest", "Upgrade request required"));
        assert_eq!(status(&format!("{POD_PATH}/attach?stdout=true"), &[]), owned(400, "BadRequest", "Upgrade request required"));
        assert_eq!(
            status("/api/v1/namespaces/ns-0000/pods/nope/exec?command=ls&stdout=true", &[]),
            owned(404, "NotFound", r#"pods "nope" not found"#)
        );
        assert_eq!(
            status(&format!("{POD_PATH}/exec?command=ls&stdout=true&container=other"), &[]),
            owned(400, "BadRequest", &format!("container other is not valid for pod {POD}"))
        );
        assert_eq!(
            status(&format!("{POD_PATH}/exec?command=ls"), &[]),
            owned(400, "BadRequest", "you must specify at least 1 of stdin, stdout, stderr")
        );
        let ws = [
            ("connection", "Upgrade"),
            ("upgrade", "websocket"),
            ("sec-websocket-version", "13"),
            ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ("sec-websocket-protocol", "base64.channel.k8s.io"),
        ];
        let (code, reason, message) = status(&format!("{POD_PATH}/exec?command=ls&stdout=true"), &ws);
        assert_eq!((code, reason.as_str()), (400, "BadRequest"));
        assert!(message.starts_with("requested protocol(s) are not supported: [base64.channel.k8s.io]"), "{message}");
    }
}

/// A running `kubectl port-forward`, killed on drop.
struct PortForward {
    child: Child,
    home: tempfile::TempDir,
    /// The local port kubectl listens on.
    port: u16,
}

impl PortForward {
    /// kubectl's `-v=6` log so far.
    fn log(&self) -> String {
        std::fs::read_to_string(self.home.path().join("stderr")).unwrap_or_default()
    }
}

impl Drop for PortForward {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `kubectl port-forward pod/POD :8080` and waits for its
/// "Forwarding from 127.0.0.1:PORT -> 8080" line.
fn port_forward(sim: &Process, websockets: bool) -> PortForward {
    let home = tempfile::tempdir().expect("a temp dir");
    let mut child = Command::new("kubectl")
        .args(["--server", &sim.url, "-n", NS, "-v=6", "port-forward", &format!("pod/{POD}"), ":8080"])
        .env("KUBECONFIG", home.path().join("config"))
        .env("KUBECACHEDIR", home.path().join("cache"))
        .env("HOME", home.path())
        .env("KUBECTL_PORT_FORWARD_WEBSOCKETS", if websockets { "true" } else { "false" })
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(home.path().join("stderr")).expect("a log file"))
        .spawn()
        .expect("kubectl is installed");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut forward = PortForward { child, home, port: 0 };
    let line = rx.recv_timeout(KUBECTL_TIMEOUT).expect("kubectl port-forward prints where it listens");
    let port = line
        .strip_prefix("Forwarding from 127.0.0.1:")
        .and_then(|rest| rest.strip_suffix(" -> 8080"))
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    forward.port = port;
    // Keep draining ("Handling connection for ...") so kubectl never blocks on its output.
    std::thread::spawn(move || for _ in rx {});
    forward
}

/// Connects to the forwarded port, sends `data`, ends the write side and
/// returns everything read back until the far side ends.
fn echo_through(port: u16, data: &[u8]) -> Vec<u8> {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).expect("kubectl accepts the connection");
    conn.set_read_timeout(Some(KUBECTL_TIMEOUT)).expect("a timeout");
    conn.set_write_timeout(Some(KUBECTL_TIMEOUT)).expect("a timeout");
    let mut writer = conn.try_clone().expect("a second handle");
    let data = data.to_vec();
    let sender = std::thread::spawn(move || {
        writer.write_all(&data).expect("the forwarded connection takes the bytes");
        writer.shutdown(std::net::Shutdown::Write).expect("half-close");
    });
    let mut back = Vec::new();
    conn.read_to_end(&mut back).expect("the echo comes back and ends");
    sender.join().expect("sender");
    back
}

fn check_port_forward(websockets: bool) {
    let cluster = cluster();
    for sim in cluster.servers() {
        let forward = port_forward(sim, websockets);
        assert_eq!(echo_through(forward.port, b"hello through the pod"), b"hello through the pod");
        // A second connection, larger than any one frame or message.
        let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        assert!(echo_through(forward.port, &big) == big, "the large echo differs");
        // The upgrade kubectl made is the one under test, not its fallback.
        let upgrade = format!("{} {}{POD_PATH}/portforward 101 Switching Protocols", if websockets { "GET" } else { "POST" }, sim.url);
        let log = forward.log();
        assert!(log.contains(&upgrade), "no {upgrade:?} in kubectl's log:\n{log}");
    }
}

#[test]
fn kubectl_port_forward_echoes_through_a_websocket_tunnel() {
    check_port_forward(true);
}

#[test]
fn kubectl_port_forward_echoes_over_plain_spdy() {
    check_port_forward(false);
}

#[test]
fn port_forward_refusals_are_apiserver_statuses() {
    let cluster = cluster();
    let created = cluster.sim.post(
        "/api/v1/namespaces/ns-0000/pods",
        &json!({"metadata": {"name": "unscheduled"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    for sim in cluster.servers() {
        let missing = sim.get("/api/v1/namespaces/ns-0000/pods/nope/portforward");
        assert_eq!((missing.status, missing.json()["reason"].as_str()), (404, Some("NotFound")));
        let plain = sim.get(&format!("{POD_PATH}/portforward"));
        assert_eq!((plain.status, plain.json()["message"].as_str()), (400, Some("Upgrade request required")));
        let unscheduled = sim.get("/api/v1/namespaces/ns-0000/pods/unscheduled/portforward");
        assert_eq!(
            (unscheduled.status, unscheduled.json()["message"].as_str()),
            (400, Some("pod unscheduled does not have a host assigned"))
        );
        let out = kubectl(sim, &["port-forward", "pod/nope", ":8080"], None);
        assert!(!out.status.success());
        assert!(text(&out.stderr).contains(r#"pods "nope" not found"#), "{}", text(&out.stderr));
    }
}
