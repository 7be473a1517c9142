//! kache's container image as an operator gets it from `config/image/build.sh`:
//! an OCI archive whose root holds kache, the libraries it links, CA roots
//! and a non-root user, and nothing a shell could use; run with buildah
//! (chroot isolation, the host's network) as its entrypoint, it resolves the
//! apiserver's name through DNS, serves kubectl from memory, and `kache
//! --version` names the version and commit its labels carry.
//!
//! Which image: `KACHE_IMAGE` names an archive the script built (the
//! release image an operator gets: its size is checked too). Without it,
//! as in CI, where a release build would not fit, the script builds one
//! around this test's own `kache` (a debug build: the same root, a larger
//! binary, whose size says nothing of the release image's and is not
//! checked).
//!
//! Needs buildah (Debian's `buildah`) and root. Where buildah is missing
//! the tests say so and pass — except under `CI=true`, where `.ci/run`
//! installs it and its absence fails them.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use common::Process;
use serde_json::Value;

/// The largest image the release binary may make, in bytes (the bound).
const MAX_IMAGE_BYTES: u64 = 40 * 1000 * 1000;
/// The largest the root may be without kache itself: glibc's libraries
/// (about 3.2 MB), the CA roots and the copyright files.
const MAX_ROOT_WITHOUT_KACHE_BYTES: u64 = 4 * 1000 * 1000;

/// Whether buildah is here; if not, whether that fails the test (CI) or skips it.
fn buildah_present() -> bool {
    common::tool_present("buildah", "--version", "Debian: apt-get install buildah", "the image is not tested")
}

/// An image archive and what its OCI config says.
struct Image {
    archive: PathBuf,
    /// Whether it holds the release binary (built by the script, named by `KACHE_IMAGE`).
    release: bool,
    config: Value,
    /// The uncompressed size of every file in its single layer, by path.
    files: Vec<(String, u64)>,
    _dir: tempfile::TempDir,
}

/// The image under test, built or read once per test binary.
fn image() -> &'static Image {
    static IMAGE: OnceLock<Image> = OnceLock::new();
    IMAGE.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temp dir");
        let (archive, release) = match std::env::var_os("KACHE_IMAGE") {
            Some(path) => (PathBuf::from(path), true),
            None => {
                let archive = dir.path().join("kache.oci.tar");
                let out = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("config/image/build.sh"))
                    .args(["--binary", env!("CARGO_BIN_EXE_kache"), "--output"])
                    // Cargo runs tests with build.rs's variables, the short commit among them: the label takes git's full one.
                    .env_remove("KACHE_COMMIT")
                    .arg(&archive)
                    .output()
                    .expect("config/image/build.sh runs");
                assert!(out.status.success(), "config/image/build.sh: {}", String::from_utf8_lossy(&out.stderr));
                (archive, false)
            }
        };
        let layout = dir.path().join("layout");
        std::fs::create_dir(&layout).expect("a directory");
        tar(&["-xf"], &archive, Some(&layout));
        let blob = |digest: &str| layout.join("blobs/sha256").join(digest.strip_prefix("sha256:").expect("a sha256 digest"));
        let json = |path: &Path| -> Value { serde_json::from_slice(&std::fs::read(path).expect("a blob")).expect("JSON") };
        let index = json(&layout.join("index.json"));
        let manifest = json(&blob(index["manifests"][0]["digest"].as_str().expect("a manifest")));
        let config = json(&blob(manifest["config"]["digest"].as_str().expect("a config")));
        let layers = manifest["layers"].as_array().expect("layers");
        assert_eq!(layers.len(), 1, "one layer: {layers:?}");
        // `tar -tv`: mode, owner, size, date, time, path.
        let listing = tar(&["-tvf"], &blob(layers[0]["digest"].as_str().expect("a layer")), None);
        let files = listing
            .lines()
            .map(|l| {
                let fields: Vec<&str> = l.split_whitespace().collect();
                let path = fields[5..].join(" ").trim_start_matches("./").to_string();
                (path, fields[2].parse().expect("a size"))
            })
            .collect();
        Image { archive, release, config, files, _dir: dir }
    })
}

/// GNU tar on `file` (compressed or not), in `dir`: its output.
fn tar(args: &[&str], file: &Path, dir: Option<&Path>) -> String {
    let mut command = Command::new("tar");
    command.args(args).arg(file);
    if let Some(dir) = dir {
        command.arg("-C").arg(dir);
    }
    let out = command.output().expect("tar runs");
    assert!(out.status.success(), "tar {args:?} {}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// `git rev-parse ARGS` of this checkout.
fn git_rev(args: &[&str]) -> String {
    let out = Command::new("git").arg("rev-parse").args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().expect("git runs");
    assert!(out.status.success(), "git rev-parse {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8").trim().to_string()
}

/// A private buildah store holding one working container of the image.
struct Container {
    store: tempfile::TempDir,
    name: String,
}

impl Container {
    /// `buildah from` the archive; the container's resolv.conf names `dns`.
    fn new(image: &Image, dns: &str) -> Container {
        let store = tempfile::tempdir().expect("a temp dir");
        let mut from = buildah(store.path());
        from.args(["from", "--quiet", "--dns", dns]).arg(format!("oci-archive:{}", image.archive.display()));
        let out = from.output().expect("buildah runs");
        assert!(out.status.success(), "buildah from: {}", String::from_utf8_lossy(&out.stderr));
        let name = String::from_utf8(out.stdout).expect("UTF-8").trim().to_string();
        Container { store, name }
    }

    /// `buildah run` of the image's entrypoint with `args`, as the image's user, on the host's network.
    fn run(&self, image: &Image, args: &[&str]) -> Command {
        let entrypoint: Vec<&str> =
            image.config["config"]["Entrypoint"].as_array().expect("an entrypoint").iter().filter_map(Value::as_str).collect();
        let mut run = buildah(self.store.path());
        run.args(["run", "--isolation", "chroot", "--network", "host", &self.name, "--"]).args(entrypoint).args(args);
        run
    }
}

fn buildah(store: &Path) -> Command {
    let mut command = Command::new("buildah");
    command.arg("--root").arg(store.join("root")).arg("--runroot").arg(store.join("run")).args(["--storage-driver", "vfs"]);
    command
}

/// A process in the container: stopped as an operator would (SIGTERM to
/// buildah, which passes it on), then killed if it lingers.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
        for _ in 0..100 {
            if self.0.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_image_is_kache_on_an_empty_root_with_its_labels_and_no_shell() {
    if !buildah_present() {
        return;
    }
    let image = image();
    let config = &image.config["config"];
    assert_eq!(config["Entrypoint"], serde_json::json!(["/usr/local/bin/kache"]));
    assert_eq!(config["User"], "65532:65532", "the non-root user the manifests run as");
    let labels = &config["Labels"];
    assert_eq!(labels["org.opencontainers.image.version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(labels["org.opencontainers.image.revision"], git_rev(&["HEAD"]));
    assert_eq!(labels["org.opencontainers.image.source"], env!("CARGO_PKG_REPOSITORY"));
    assert_eq!(labels["org.opencontainers.image.licenses"], env!("CARGO_PKG_LICENSE"));

    // Every file is one of these; nothing else, and so no shell.
    let regular: Vec<&(String, u64)> = image.files.iter().filter(|(p, _)| !p.ends_with('/')).collect();
    let expected = |path: &str| {
        path == "usr/local/bin/kache"
            || ["etc/passwd", "etc/group", "etc/nsswitch.conf", "etc/ssl/certs/ca-certificates.crt"].contains(&path)
            || (path.starts_with("lib") && path.contains(".so"))
            || (path.starts_with("usr/share/doc/") && path.ends_with("/copyright"))
    };
    let unexpected: Vec<&String> = regular.iter().map(|(p, _)| p).filter(|p| !expected(p)).collect();
    assert!(unexpected.is_empty(), "files the image should not hold: {unexpected:?}");
    let names: BTreeSet<&str> = image.files.iter().filter_map(|(p, _)| p.trim_end_matches('/').rsplit('/').next()).collect();
    for shell in ["sh", "bash", "dash", "ash", "zsh", "busybox"] {
        assert!(!names.contains(shell), "the image holds {shell}: {:?}", image.files);
    }
    for dir in ["bin/", "sbin/", "usr/bin/", "usr/sbin/"] {
        assert!(!image.files.iter().any(|(p, _)| p == dir), "the image has {dir}");
    }
    for lib in ["lib64/ld-linux-x86-64.so.2", "lib/x86_64-linux-gnu/libc.so.6"] {
        assert!(regular.iter().any(|(p, _)| p == lib), "no {lib} for a dynamically linked kache");
    }

    // The size: kache's binary and under 4 MB besides; the whole under 40 MB for the release binary.
    let kache = regular.iter().find(|(p, _)| p == "usr/local/bin/kache").map_or(0, |(_, s)| *s);
    let total: u64 = regular.iter().map(|(_, s)| s).sum();
    assert!(total - kache < MAX_ROOT_WITHOUT_KACHE_BYTES, "{} bytes besides kache", total - kache);
    let archive = std::fs::metadata(&image.archive).expect("the archive").len();
    eprintln!("image: {total} bytes unpacked (kache {kache}), archive {archive} bytes");
    if image.release {
        assert!(total < MAX_IMAGE_BYTES && archive < MAX_IMAGE_BYTES, "{total} bytes unpacked, {archive} archived");
    }
}

#[test]
fn kache_version_in_the_image_names_the_version_and_the_commit_of_its_labels() {
    if !buildah_present() {
        return;
    }
    let image = image();
    let container = Container::new(image, "127.0.0.1");
    let out = container.run(image, &["--version"]).output().expect("buildah runs");
    assert!(out.status.success(), "kache --version: {}", String::from_utf8_lossy(&out.stderr));
    let commit = git_rev(&["--short", "HEAD"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("kache {} (commit {commit})", env!("CARGO_PKG_VERSION")));
    let revision = image.config["config"]["Labels"]["org.opencontainers.image.revision"].as_str().expect("a revision");
    assert!(revision.starts_with(&commit), "the label's revision {revision} is not kache's commit {commit}");
}

/// The apiserver's name as the image resolves it, through DNS only (not
/// /etc/hosts), as a pod resolves `kubernetes.default.svc`.
const APISERVER: &str = "apiserver.kache.test";
/// The address of the test's DNS server (glibc takes no port: 53).
const DNS: &str = "127.0.0.153";

#[test]
fn kubectl_lists_the_simulated_pods_through_kache_in_the_image_which_finds_the_apiserver_by_dns() {
    if !buildah_present() {
        return;
    }
    let image = image();
    let sim = Process::sim(&["--pods", "40"]);
    let port = sim.url.rsplit(':').next().expect("a port");
    let dns = Dns::start();
    let container = Container::new(image, DNS);
    let server = format!("http://{APISERVER}:{port}");
    let mut run = container.run(image, &["serve", "--listen", "127.0.0.1:0", "--server", &server, "--resources", "pods"]);
    let mut child = Running(run.stdout(Stdio::piped()).spawn().expect("buildah runs"));
    let mut stdout = BufReader::new(child.0.stdout.take().expect("piped stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("kache prints its address");
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let url = line.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_else(|| panic!("no address in {line:?}")).to_string();
    assert!(dns.asked().iter().any(|n| n == APISERVER), "kache did not ask DNS for {APISERVER}: {:?}", dns.asked());

    common::eventually(Duration::from_secs(60), "kache in the image to be ready", || {
        (common::request(&format!("{url}/readyz"), "GET", &[], None).status == 200).then_some(())
    });
    let names = |output: String| -> BTreeSet<String> { output.lines().map(str::to_string).collect() };
    let expected = names(sim.kubectl_ok(&["get", "pods", "-A", "-o", "name"]));
    assert_eq!(expected.len(), 40, "the simulated pods");
    let through_kache = Command::new("kubectl")
        .args(["--server", &url, "get", "pods", "-A", "-o", "name"])
        .env("KUBECONFIG", "/dev/null")
        .output()
        .expect("kubectl runs");
    assert!(through_kache.status.success(), "kubectl through the image: {}", String::from_utf8_lossy(&through_kache.stderr));
    assert_eq!(names(String::from_utf8(through_kache.stdout).expect("UTF-8")), expected);
}

/// A DNS server on [`DNS`]:53 that answers [`APISERVER`]'s A query with
/// 127.0.0.1, its other queries with no record, other names with NXDOMAIN,
/// and remembers every name asked.
struct Dns {
    asked: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl Dns {
    fn start() -> Dns {
        let socket = UdpSocket::bind((DNS, 53)).unwrap_or_else(|e| panic!("a DNS server on {DNS}:53 (needs root): {e}"));
        socket.set_read_timeout(Some(Duration::from_millis(100))).expect("a timeout");
        let (asked, stop) = (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicBool::new(false)));
        let (names, stopped) = (asked.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            while !stopped.load(Ordering::Relaxed) {
                let Ok((n, peer)) = socket.recv_from(&mut buf) else { continue };
                if let Some((name, answer)) = dns_answer(&buf[..n]) {
                    names.lock().expect("not poisoned").push(name);
                    let _ = socket.send_to(&answer, peer);
                }
            }
        });
        Dns { asked, stop }
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().expect("not poisoned").clone()
    }
}

impl Drop for Dns {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The name a DNS query asks for, and the answer (RFC 1035, section 4).
fn dns_answer(query: &[u8]) -> Option<(String, Vec<u8>)> {
    let (mut at, mut labels) = (12, Vec::new());
    loop {
        let len = *query.get(at)? as usize;
        at += 1;
        if len == 0 {
            break;
        }
        labels.push(String::from_utf8_lossy(query.get(at..at + len)?).into_owned());
        at += len;
    }
    let question = query.get(12..at + 4)?;
    let qtype = u16::from_be_bytes([query[at], query[at + 1]]);
    let name = labels.join(".");
    let (rcode, answers) = match (name.eq_ignore_ascii_case(APISERVER), qtype) {
        (true, 1) => (0, 1),
        (true, _) => (0, 0),
        (false, _) => (3, 0),
    };
    let mut answer = Vec::with_capacity(question.len() + 32);
    answer.extend_from_slice(&query[..2]); // the query's id
    answer.extend_from_slice(&(0x8180u16 | rcode).to_be_bytes()); // a response, recursion desired and available
    answer.extend_from_slice(&[0, 1, 0, answers, 0, 0, 0, 0]);
    answer.extend_from_slice(question);
    if answers == 1 {
        // The name by pointer to the question's, A, IN, a TTL of 60 s, 4 bytes: 127.0.0.1.
        answer.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1]);
    }
    Some((name, answer))
}
