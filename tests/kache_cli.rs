//! The command line as a new user meets it: refusals before anything
//! listens, one line each whatever `RUST_BACKTRACE` says (an unknown
//! resource with what it probably meant), and a closed output taken as a
//! reason to stop, quietly.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::Process;

#[test]
fn bad_flags_are_refused_in_one_line_before_kache_listens() {
    for (server, says) in
        [("not-a-url", "not a URL"), ("ftp://x:1", "scheme ftp is not http or https"), ("https://", "not a URL"), ("/api", "not a URL")]
    {
        let out = Command::new(env!("CARGO_BIN_EXE_kache"))
            .args(["serve", "--listen", "127.0.0.1:0", "--server", server])
            .env("RUST_BACKTRACE", "1")
            .output()
            .unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "{server}: {stderr}");
        assert_eq!(stdout, "", "{server}: printed before refusing");
        assert_eq!(stderr.lines().count(), 1, "{server}: {stderr}");
        assert!(stderr.starts_with(&format!("Error: --server {server:?}: ")) && stderr.contains(says), "{server}: {stderr}");
    }
}

#[test]
fn malformed_resources_are_refused_before_kache_listens() {
    for resources in ["apps/v1/deployments/x", "pods,", "apps//deployments", "deployments."] {
        let out = Command::new(env!("CARGO_BIN_EXE_kache"))
            .args(["serve", "--listen", "127.0.0.1:0", "--server", "http://127.0.0.1:1", "--resources", resources])
            .env("RUST_BACKTRACE", "1")
            .output()
            .unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!((out.status.code(), stdout.as_ref()), (Some(1), ""), "{resources}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{resources}: {stderr}");
        assert!(stderr.starts_with("Error: --resources ") && stderr.contains("not a resource"), "{resources}: {stderr}");
    }
}

#[test]
fn an_unknown_resource_is_refused_with_a_did_you_mean_before_kache_listens() {
    let sim = Process::sim(&["--pods", "10"]);
    // Discovery answers once the simulator has generated its cluster; before that kache would listen first.
    common::eventually(Duration::from_secs(30), "the simulator to be ready", || (sim.get("/readyz").status == 200).then_some(()));
    for (resources, says) in [
        ("podz", r#"resource "podz" not found on the apiserver; did you mean "pods"?"#),
        ("pod", r#"resource "pod" not found on the apiserver; did you mean "pods"?"#),
        ("po", r#"resource "po" not found on the apiserver; did you mean "pods"?"#),
        ("pods,nodez", r#"resource "nodez" not found on the apiserver; did you mean "nodes"?"#),
        ("deployments", r#"resource "deployments" not found on the apiserver; did you mean "deployments.apps"?"#),
        ("deploymnets.apps", r#"resource "deploymnets.apps" not found on the apiserver; did you mean "deployments.apps"?"#),
        ("apps/v2/deployments", r#"resource "apps/v2/deployments" not found on the apiserver; did you mean "apps/v1/deployments"?"#),
        ("v1/podz", r#"resource "v1/podz" not found on the apiserver; did you mean "v1/pods"?"#),
        ("gizmos", r#"resource "gizmos" not found on the apiserver (expected RESOURCE, RESOURCE.GROUP or GROUP/VERSION/RESOURCE)"#),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_kache"))
            .args(["serve", "--listen", "127.0.0.1:0", "--server", &sim.url, "--resources", resources])
            .env("RUST_BACKTRACE", "1")
            .output()
            .unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!((out.status.code(), stdout.as_ref()), (Some(1), ""), "{resources}: printed before refusing: {stderr}");
        assert_eq!(stderr.trim_end(), format!("Error: {says}"), "{resources}");
    }
}

#[test]
fn a_closed_output_stops_kache_quietly() {
    let mut sim = Process::sim(&["--pods", "10"]);
    // `kache serve … 2>&1 | head -3`: both streams into one pipe, whose reader goes after three lines.
    let command = format!("exec '{}' serve --listen 127.0.0.1:0 --server {} --resources pods 2>&1", env!("CARGO_BIN_EXE_kache"), sim.url);
    let mut kache = Command::new("sh").args(["-c", &command]).stdout(Stdio::piped()).spawn().unwrap();
    let mut out = BufReader::new(kache.stdout.take().unwrap());
    for _ in 0..3 {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "kache ended before three lines");
    }
    drop(out);
    // Its next lines (the apiserver gone, retries) find the pipe closed.
    let _ = sim.child_kill();
    let status = common::eventually(Duration::from_secs(30), "kache to stop", || kache.try_wait().unwrap());
    assert_eq!(status.code(), Some(0), "{status:?}: a panic exits 101");
}

#[test]
fn kache_version_prints_the_semver_and_the_commit_it_was_built_from() {
    let out = Command::new(env!("CARGO_BIN_EXE_kache")).arg("--version").output().unwrap();
    assert!(out.status.success());
    let printed = String::from_utf8(out.stdout).unwrap();
    let (version, commit) = printed
        .trim()
        .strip_prefix("kache ")
        .and_then(|rest| rest.strip_suffix(')')?.split_once(" (commit "))
        .unwrap_or_else(|| panic!("not `kache VERSION (commit COMMIT)`: {printed:?}"));
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    let semver = version.split(['-', '+']).next().unwrap_or_default().split('.').collect::<Vec<_>>();
    assert!(semver.len() == 3 && semver.iter().all(|n| n.parse::<u64>().is_ok()), "not semver: {version}");
    // The checkout's HEAD, as build.rs read it (a build outside git says `unknown`).
    let head = Command::new("git").args(["rev-parse", "--short", "HEAD"]).current_dir(env!("CARGO_MANIFEST_DIR")).output();
    match head {
        Ok(head) if head.status.success() => assert_eq!(commit, String::from_utf8_lossy(&head.stdout).trim()),
        _ => assert_eq!(commit, "unknown"),
    }
}
