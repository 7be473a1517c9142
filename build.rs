//! The commit `kache --version` names, as `KACHE_COMMIT` at compile time:
//! the `KACHE_COMMIT` environment variable when set (a build without a git
//! checkout, such as the Dockerfile's, passes it in), else the short hash of
//! the checkout's `HEAD`, else `unknown`. Cargo runs this again when either
//! changes: the variable, or the files `HEAD` resolves through.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=KACHE_COMMIT");
    let commit = std::env::var("KACHE_COMMIT").ok().filter(|c| !c.trim().is_empty()).or_else(git_commit);
    println!("cargo:rustc-env=KACHE_COMMIT={}", commit.as_deref().unwrap_or("unknown").trim());
}

/// `git rev-parse --short HEAD`, watching the files that decide it.
fn git_commit() -> Option<String> {
    let commit = git(&["rev-parse", "--short", "HEAD"])?;
    let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])];
    if let Some(branch) = git(&["rev-parse", "--symbolic-full-name", "HEAD"]).filter(|b| b.starts_with("refs/")) {
        watched.push(git(&["rev-parse", "--git-path", &branch]));
    }
    watched.push(git(&["rev-parse", "--git-path", "packed-refs"]));
    // A path that does not exist would make Cargo run this on every build.
    for path in watched.into_iter().flatten().filter(|p| std::path::Path::new(p).exists()) {
        println!("cargo:rerun-if-changed={path}");
    }
    Some(commit)
}

/// One line of git's output, if git is there and succeeds.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let line = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !line.is_empty()).then_some(line)
}
