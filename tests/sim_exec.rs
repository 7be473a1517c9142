//! kubectl, unchanged, runs commands in the simulator's pods: `exec` and
//! `attach` over the WebSocket remote-command protocol, and the apiserver's
//! refusals of connect requests it cannot upgrade.

mod common;

use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::Process;

const NS: &str = "ns-0000";
const POD: &str = "app-00000-0000000";
const POD_PATH: &str = "/api/v1/namespaces/ns-0000/pods/app-00000-0000000";

/// How long one kubectl run may take before the test fails.
const KUBECTL_TIMEOUT: Duration = Duration::from_secs(30);

fn sim() -> Process {
    Process::sim(&["--pods", "3", "--namespaces", "1", "--nodes", "1"])
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
    let sim = sim();
    let out = kubectl(&sim, &["exec", POD, "--", "echo", "hello", "world"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hello world\n");
    let out = kubectl(&sim, &["exec", POD, "--", "hostname"], None);
    assert_eq!((out.status.code(), text(&out.stdout)), (Some(0), format!("{POD}\n")));
}

#[test]
fn kubectl_exec_exits_with_the_command_exit_code() {
    let sim = sim();
    let out = kubectl(&sim, &["exec", POD, "--", "sh", "-c", "exit 3"], None);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("command terminated with exit code 3"), "{}", text(&out.stderr));
    let out = kubectl(&sim, &["exec", POD, "--", "false"], None);
    assert_eq!(out.status.code(), Some(1));
    let out = kubectl(&sim, &["exec", POD, "--", "ls", "-l"], None);
    assert_eq!(out.status.code(), Some(127));
    assert!(text(&out.stderr).starts_with("ls: command not found\n"), "{}", text(&out.stderr));
    assert!(text(&out.stdout).is_empty());
}

#[test]
fn kubectl_exec_copies_stdin_until_it_closes() {
    let sim = sim();
    let out = kubectl(&sim, &["exec", "-i", POD, "--", "cat"], Some(b"abc"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "abc");
    // A larger input than one message, through a shell reading line by line.
    let script: String = (0..2000).map(|i| format!("echo line {i}\n")).collect();
    let out = kubectl(&sim, &["exec", "-i", POD, "--", "sh"], Some(format!("{script}exit 5\n").as_bytes()));
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    let expected: String = (0..2000).map(|i| format!("line {i}\n")).collect();
    assert_eq!(text(&out.stdout), expected);
}

#[test]
fn kubectl_attach_shows_the_container_output_and_echoes_stdin() {
    let sim = sim();
    let out = kubectl(&sim, &["attach", "-i", POD], Some(b"typed\n"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("simulated log of pod {NS}/{POD}\ntyped\n"));
}

#[test]
fn kubectl_exec_into_a_missing_pod_is_not_found() {
    let sim = sim();
    let out = kubectl(&sim, &["exec", "nope", "--", "true"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains(r#"Error from server (NotFound): pods "nope" not found"#), "{}", text(&out.stderr));
}

#[test]
fn connect_requests_that_cannot_be_upgraded_get_the_apiserver_status() {
    let sim = sim();
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
