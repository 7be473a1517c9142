//! The processes under test: the simulator and kache started from the
//! kache binary on loopback (killed when dropped), their CPU time and
//! memory read from `/proc`, and the HTTP client that talks to them.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// A child process killed on drop, and the URL it printed.
#[derive(Debug)]
pub struct Proc {
    child: Child,
    /// `http://127.0.0.1:PORT` (`https://` when it serves TLS).
    pub url: String,
}

impl Proc {
    /// Runs `bin ARGS` and waits for the line with its address (printed once it serves).
    pub fn spawn(bin: &str, args: &[&str]) -> anyhow::Result<Proc> {
        let mut child =
            Command::new(bin).args(args).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().with_context(|| format!("running {bin}"))?;
        let stdout = child.stdout.take().context("stdout")?;
        // Killed on drop from here on, also when it printed no address.
        let mut proc = Proc { child, url: String::new() };
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://") || w.starts_with("https://")) else {
            // Nothing at all: it closed its output by exiting.
            let status = if line.is_empty() { Some(proc.child.wait()?) } else { proc.child.try_wait()? };
            let status = status.map_or("running".to_string(), |s| s.to_string());
            bail!("`{bin} {}` printed no address ({line:?}; {status}): run it by hand to see why", args.join(" "));
        };
        proc.url = url.to_string();
        Ok(proc)
    }

    /// `kache sim` on loopback with `pods` pods on `nodes` nodes, no periodic compaction, and `extra` arguments.
    pub fn sim(bin: &str, pods: usize, nodes: usize, extra: &[&str]) -> anyhow::Result<Proc> {
        let (pods, nodes) = (pods.to_string(), nodes.max(1).to_string());
        let args = ["sim", "--listen", "127.0.0.1:0", "--pods", &pods, "--nodes", &nodes, "--compact-interval", "0"];
        Proc::spawn(bin, &[&args[..], extra].concat())
    }

    /// `kache serve` on loopback in front of `upstream`, caching pods, with `extra` arguments.
    pub fn kache(bin: &str, upstream: &str, extra: &[&str]) -> anyhow::Result<Proc> {
        let args = ["serve", "--listen", "127.0.0.1:0", "--server", upstream, "--resources", "pods"];
        Proc::spawn(bin, &[&args[..], extra].concat())
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// User + system CPU seconds of a process so far.
pub fn cpu_seconds(pid: u32) -> f64 {
    stat_cpu_seconds(&format!("/proc/{pid}"))
}

/// The CPU seconds (user and system) of `pid`'s threads named `name`.
pub fn thread_cpu_seconds(pid: u32, name: &str) -> f64 {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten();
    let named = tasks.filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim_end() == name));
    named.map(|t| stat_cpu_seconds(&t.path().to_string_lossy())).sum()
}

/// The user and system time in the `stat` file under `dir` (a process's or a thread's).
fn stat_cpu_seconds(dir: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("{dir}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks: f64 = fields.get(11..13).map_or(0.0, |f| f.iter().filter_map(|v| v.parse::<f64>().ok()).sum());
    ticks / 100.0
}

/// Resident memory now and at its peak, in bytes (`VmRSS`, `VmHWM`).
pub fn memory(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib = |key: &str| {
        status.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok()).unwrap_or(0) * 1024
    };
    (kib("VmRSS:"), kib("VmHWM:"))
}

/// A pooled HTTP/1.1 client.
pub type HttpClient = Client<HttpConnector, Empty<Bytes>>;

/// A new client.
pub fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build(HttpConnector::new())
}

/// `GET url`, whole body.
pub async fn get(client: &HttpClient, url: &str, gzip: bool) -> anyhow::Result<(u16, Bytes)> {
    get_with(client, url, if gzip { &[("accept-encoding", "gzip")] } else { &[] }).await
}

/// `GET url` with `headers`, whole body.
pub async fn get_with(client: &HttpClient, url: &str, headers: &[(&str, &str)]) -> anyhow::Result<(u16, Bytes)> {
    let mut req = hyper::Request::get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = client.request(req.body(Empty::new())?).await?;
    let status = resp.status().as_u16();
    Ok((status, resp.into_body().collect().await?.to_bytes()))
}

/// GETs of `url` made by [`drive`]: their latencies (sorted) and the wall time they took together.
pub struct Samples {
    pub latencies: Vec<Duration>,
    pub wall: Duration,
}

impl Samples {
    /// Requests per second.
    pub fn rps(&self) -> f64 {
        self.latencies.len() as f64 / self.wall.as_secs_f64()
    }

    /// The latency at quantile `q` (0.5: the median).
    pub fn quantile(&self, q: f64) -> Duration {
        let i = ((self.latencies.len() as f64 * q) as usize).min(self.latencies.len().saturating_sub(1));
        self.latencies.get(i).copied().unwrap_or_default()
    }
}

/// `n` GETs of `url`, `concurrency` at a time, the `i`-th with `headers(i)`;
/// any answer but 200 is an error.
pub async fn drive(
    client: &HttpClient,
    url: &str,
    n: usize,
    concurrency: usize,
    headers: impl Fn(usize) -> Vec<(&'static str, String)> + Send + Sync + 'static,
) -> anyhow::Result<Samples> {
    let started = Instant::now();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let headers = std::sync::Arc::new(headers);
    let mut tasks = Vec::new();
    for _ in 0..concurrency.max(1) {
        let (client, url, next, headers) = (client.clone(), url.to_string(), next.clone(), headers.clone());
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let h = headers(i);
                let h: Vec<(&str, &str)> = h.iter().map(|(k, v)| (*k, v.as_str())).collect();
                let t = Instant::now();
                let (status, _) = get_with(&client, &url, &h).await?;
                if status != 200 {
                    bail!("{url}: status {status}");
                }
                out.push(t.elapsed());
            }
            Ok::<_, anyhow::Error>(out)
        }));
    }
    let mut samples = Vec::new();
    for t in tasks {
        samples.extend(t.await??);
    }
    let wall = started.elapsed();
    let mut latencies = samples;
    latencies.sort();
    Ok(Samples { latencies, wall })
}

/// Waits until `url` answers 200 (a process's `/readyz`).
pub async fn ready(client: &HttpClient, url: &str, within: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    while get(client, url, false).await.map(|r| r.0).unwrap_or(0) != 200 {
        if Instant::now() > deadline {
            bail!("{url} did not become ready");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

/// The local process listening on TCP `port`: its socket's inode from
/// `/proc/net/tcp` and `tcp6` (state `0A`, listening), then the process
/// holding it in `/proc/*/fd`. `None` when none is visible here (another
/// machine, network namespace, or user).
pub fn listener(port: u16) -> Option<u32> {
    let sockets: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .flat_map(|table| std::fs::read_to_string(table).unwrap_or_default().lines().skip(1).map(str::to_string).collect::<Vec<_>>())
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let local = u16::from_str_radix(f.get(1)?.rsplit(':').next()?, 16).ok()?;
            (local == port && f.get(3) == Some(&"0A")).then(|| format!("socket:[{}]", f.get(9).unwrap_or(&"")))
        })
        .collect();
    if sockets.is_empty() {
        return None;
    }
    let mut procs = std::fs::read_dir("/proc").ok()?.flatten().filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok());
    procs.find(|pid| {
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).into_iter().flatten().flatten();
        fds.filter_map(|fd| std::fs::read_link(fd.path()).ok()).any(|l| sockets.iter().any(|s| l.as_os_str() == s.as_str()))
    })
}

/// This process's soft limit on open files (`None`: unlimited or unknown).
pub fn open_files_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    limits.lines().find_map(|l| l.strip_prefix("Max open files")?.split_whitespace().next()?.parse().ok())
}

/// The first `metadata.resourceVersion` in a body, without parsing it.
pub fn first_revision(body: &[u8]) -> Option<u64> {
    let key = b"\"resourceVersion\":\"";
    let at = body.windows(key.len()).position(|w| w == key)? + key.len();
    let digits = body[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&body[at..at + digits]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_threads_cpu_is_read_apart_from_the_others() {
        let (stop, started) = (std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)), Instant::now());
        let flag = stop.clone();
        let spinner = std::thread::Builder::new()
            .name("cpu-spinner".into())
            .spawn(move || {
                while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
            .unwrap();
        let me = std::process::id();
        // The kernel counts in ticks: spin until the spinner has one, or give up after a minute.
        while thread_cpu_seconds(me, "cpu-spinner") == 0.0 && started.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let spun = thread_cpu_seconds(me, "cpu-spinner");
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        spinner.join().unwrap();
        assert!(spun > 0.0, "the spinner's CPU was read");
        assert!(cpu_seconds(me) >= spun, "the process's CPU holds its thread's");
        assert_eq!(thread_cpu_seconds(me, "no-such-thread"), 0.0);
    }

    #[test]
    fn the_process_listening_on_a_port_is_found() {
        let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = socket.local_addr().unwrap().port();
        assert_eq!(listener(port), Some(std::process::id()));
        drop(socket);
        assert_eq!(listener(port), None);
    }
}
