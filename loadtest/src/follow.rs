//! A watching client that knows what it received: every event's revision
//! and arrival, and the revision ranges a list covered instead of events,
//! so the scenario can count, for every write a watcher had to see, whether
//! it arrived, was covered by a list, was missed, came twice, or came out
//! of order.
//!
//! Three ways to start (and to re-start in a relist storm), as clients do:
//! - [`Start::At`]: watch from a known revision (the watch scenario);
//! - [`Start::List`]: list at `resourceVersion=0` with the selector, then
//!   watch from the list's revision (a kubelet, client-go's classic
//!   informer): the list covers `(position, list revision]`;
//! - [`Start::Streaming`]: a streaming list (`sendInitialEvents=true`),
//!   whose initial events end with the `k8s.io/initial-events-end`
//!   bookmark at the list revision (a controller's informer in 1.36).
//!
//! A watch the server ends is resumed from the last revision seen (a
//! bookmark's too); a `410 Gone` (an ERROR event or answer) re-lists — so
//! after an apiserver restart, whose new watch cache starts at a later
//! revision, every client lists again, as client-go does. Failures are
//! retried after client-go's reflector backoff ([`Backoff`]), or no sooner
//! than a `Retry-After` says (a 429 from API Priority and Fairness); a
//! list or a watch's head not answered within [`REQUEST_TIMEOUT`] failed.
//! Each follower notes when the server ended (or broke) its watch and when
//! it completed a list after its first ([`Followed`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http::Method;
use http_body_util::BodyExt;
use indicatif::ProgressBar;
use tokio::sync::watch;

use crate::objects::Write;
use crate::procs::first_revision;
use crate::progress::note;
use crate::record::Recorder;
use crate::target::{Http, REQUEST_TIMEOUT, retry_after};

/// How long clients may go without one more starting before the run
/// fails. Longer than kube-apiserver's request timeout (60 s, past which a
/// list still waiting in its queues has failed): an informer's streaming
/// list is a watch, which no timeout bounds, and ten of them taking
/// 150,000 pods' initial events at once from a 2-core apiserver take
/// minutes. There is no deadline for all of them: one would cap how many
/// clients a slow or shedding server can start.
const STALL: Duration = Duration::from_secs(300);

/// How often starting clients are counted on stderr.
const NOTE_EVERY: Duration = Duration::from_secs(5);

/// How a follower starts, and starts again after a relist storm.
#[derive(Debug, Clone, Copy)]
pub enum Start {
    /// Watch from this revision.
    At(u64),
    /// List at `resourceVersion=0`, then watch from the list's revision.
    List,
    /// A streaming list, then the watch it becomes.
    Streaming,
}

/// The shared signals of a run: stop, relist storms, and counters the coordinator polls.
#[derive(Debug, Clone)]
pub struct Signals {
    /// Becomes true when the followers must stop.
    pub stop: watch::Receiver<bool>,
    /// Incremented for each relist storm.
    pub storm: watch::Receiver<u32>,
    /// Followers that have started (listed or connected) at least once.
    pub started: Arc<AtomicUsize>,
    /// Events newer than `floor` received by all followers.
    pub events: Arc<AtomicU64>,
    /// The revision before the first write the coordinator waits for (`u64::MAX`: none yet).
    pub floor: Arc<AtomicU64>,
}

/// What one follower saw.
#[derive(Debug)]
pub struct Followed {
    /// Event revisions and arrival times, in arrival order (initial events of streaming lists excluded).
    pub events: Vec<(u64, Instant)>,
    /// Revision ranges `(from, to]` that lists covered.
    pub covered: Vec<(u64, u64)>,
    /// Watches the server ended that were resumed.
    pub resumes: usize,
    /// Bytes received on watches (lists' are in `lists`).
    pub bytes: u64,
    /// Lists (and streaming lists until their end bookmark): latency, status, bytes.
    pub lists: Recorder,
    /// When the server ended (or broke) its watches, streaming lists included.
    pub ended: Vec<Instant>,
    /// When it completed a list (or streaming list) after its first.
    pub relisted: Vec<Instant>,
    /// When stopped while not watching (listing, streaming its initial
    /// events, or waiting to start again): the revision it had reached.
    /// Later writes it has not seen are not missed: it was not there yet.
    pub behind: Option<u64>,
}

impl Signals {
    /// Signals for new followers, and the senders that stop them and start relist storms.
    pub fn new() -> (Signals, watch::Sender<bool>, watch::Sender<u32>) {
        let (stop_tx, stop) = watch::channel(false);
        let (storm_tx, storm) = watch::channel(0u32);
        let signals = Signals {
            stop,
            storm,
            started: Arc::new(AtomicUsize::new(0)),
            events: Arc::new(AtomicU64::new(0)),
            floor: Arc::new(AtomicU64::new(u64::MAX)),
        };
        (signals, stop_tx, storm_tx)
    }

    /// Waits until `total` followers have started (listed or connected) on
    /// `target`, counting them on stderr every [`NOTE_EVERY`] and when all
    /// have; fails when none has for [`STALL`].
    pub async fn all_started(&self, total: usize, target: &str, bar: &ProgressBar) -> anyhow::Result<()> {
        let begun = Instant::now();
        let (mut count, mut progressed, mut noted) = (0, begun, begun);
        loop {
            let now = Instant::now();
            let started = self.started.load(Ordering::Relaxed);
            if started >= total {
                note(bar, format!("all {total} clients started on {target} in {:.1?}", begun.elapsed()));
                return Ok(());
            }
            if started > count {
                (count, progressed) = (started, now);
            }
            if now - progressed > STALL {
                anyhow::bail!("only {started} of {total} clients started on {target}, none in the last {STALL:?}");
            }
            if now - noted >= NOTE_EVERY {
                note(bar, format!("{started} of {total} clients started on {target}"));
                noted = now;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// client-go's reflector backoff: 800 ms, doubling up to 30 s, each wait
/// with as much again of jitter at most; back to the start once a watch is
/// answered.
#[derive(Debug)]
struct Backoff(Duration);

impl Backoff {
    const FIRST: Duration = Duration::from_millis(800);
    const MOST: Duration = Duration::from_secs(30);

    /// The next wait: `asked` (a `Retry-After`) if any, else the backoff's.
    fn next(&mut self, asked: Option<Duration>) -> Duration {
        let wait = self.0.mul_f64(1.0 + rand::random::<f64>());
        self.0 = (self.0 * 2).min(Self::MOST);
        asked.unwrap_or(wait)
    }
}

/// Waits `wait`, or until stopped: whether stopped.
async fn pause(wait: Duration, stop: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(wait) => false,
        _ = stop.changed() => true,
    }
}

/// Follows `collection` with `selector` (a `&…` query part) from `start` until stopped.
pub async fn follow(http: Http, collection: String, selector: String, start: Start, signals: Signals, epoch: Instant) -> Followed {
    let mut out = Followed {
        events: Vec::new(),
        covered: Vec::new(),
        resumes: 0,
        bytes: 0,
        lists: Recorder::new(epoch),
        ended: Vec::new(),
        relisted: Vec::new(),
        behind: None,
    };
    let Signals { mut stop, mut storm, started, events, floor } = signals;
    let mut position = match start {
        Start::At(rv) => rv,
        _ => 0,
    };
    let mut restart = !matches!(start, Start::At(_));
    // Whether the last watch was ended by the server (the next one resumes it).
    let mut ended = false;
    let mut first = true;
    // Whether a list (or streaming list) has completed: the next is a re-list.
    let mut synced = false;
    let mut backoff = Backoff(Backoff::FIRST);
    // A dropped sender (the scenario was aborted) stops it too; `changed()` then fails at once.
    while !*stop.borrow() && stop.has_changed().is_ok() {
        if restart && matches!(start, Start::List | Start::At(_)) {
            let t = Instant::now();
            let path = format!("{collection}?resourceVersion=0{selector}");
            let list = tokio::time::timeout(REQUEST_TIMEOUT, http.get(&path, &[]));
            let listed = tokio::select! {
                r = list => r.ok().and_then(Result::ok),
                _ = stop.changed() => break,
            };
            let (status, body) = listed.unwrap_or_default();
            out.lists.record(t.elapsed(), status, body.len());
            let Some(rv) = first_revision(&body).filter(|_| status == 200) else {
                if pause(backoff.next(None), &mut stop).await {
                    break;
                }
                continue;
            };
            if synced {
                out.relisted.push(Instant::now());
            }
            synced = true;
            out.covered.push((position, rv));
            position = rv;
        }
        let streaming = restart && matches!(start, Start::Streaming);
        let query = if streaming {
            format!(
                "{collection}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=3600{selector}"
            )
        } else {
            format!("{collection}?watch=1&allowWatchBookmarks=true&resourceVersion={position}&timeoutSeconds=3600{selector}")
        };
        restart = false;
        let t = Instant::now();
        let resp = tokio::select! {
            r = tokio::time::timeout(REQUEST_TIMEOUT, http.send(Method::GET, &query, &[], None)) => r.unwrap_or_else(|_| Err(anyhow::anyhow!("no answer"))),
            _ = stop.changed() => break,
        };
        let resp = match resp {
            Ok(r) if r.status() == 200 => r,
            Ok(r) => {
                restart = r.status() == 410;
                if streaming {
                    out.lists.record(t.elapsed(), r.status().as_u16(), 0);
                    restart = true;
                }
                // Thousands of watchers coming back sooner than a shedding server asks would keep it shedding.
                if pause(backoff.next(retry_after(r.headers())), &mut stop).await {
                    break;
                }
                continue;
            }
            Err(_) => {
                restart = streaming;
                if pause(backoff.next(None), &mut stop).await {
                    break;
                }
                continue;
            }
        };
        backoff = Backoff(Backoff::FIRST);
        if first {
            first = false;
            if !streaming {
                started.fetch_add(1, Ordering::Relaxed);
            }
        } else if ended && !streaming {
            out.resumes += 1;
        }
        ended = false;
        let mut initial = streaming;
        let (mut body, mut buf, mut bytes) = (resp.into_body(), Vec::new(), 0usize);
        loop {
            let frame = tokio::select! {
                f = body.frame() => f,
                _ = stop.changed() => {
                    out.behind = initial.then_some(position);
                    return out;
                }
                Ok(()) = storm.changed() => { restart = true; break }
            };
            let Some(Ok(frame)) = frame else {
                ended = true;
                out.ended.push(Instant::now());
                break;
            };
            let Ok(data) = frame.into_data() else { continue };
            let now = Instant::now();
            bytes += data.len();
            if !initial {
                out.bytes += data.len() as u64;
            }
            buf.extend_from_slice(&data);
            let mut consumed = 0;
            while let Some(end) = buf[consumed..].iter().position(|b| *b == b'\n') {
                let line = &buf[consumed..consumed + end];
                consumed += end + 1;
                if line.starts_with(b"{\"type\":\"ERROR\"") {
                    restart = true;
                    continue;
                }
                let Some(rv) = first_revision(line) else { continue };
                if line.starts_with(b"{\"type\":\"BOOKMARK\"") {
                    if initial && contains(line, b"k8s.io/initial-events-end") {
                        initial = false;
                        out.lists.record(t.elapsed(), 200, bytes);
                        out.covered.push((position, rv));
                        if synced {
                            out.relisted.push(now);
                        } else {
                            started.fetch_add(1, Ordering::Relaxed);
                        }
                        synced = true;
                    }
                    position = position.max(rv);
                } else if !initial {
                    out.events.push((rv, now));
                    if rv > floor.load(Ordering::Relaxed) {
                        events.fetch_add(1, Ordering::Relaxed);
                    }
                    position = position.max(rv);
                }
            }
            buf.drain(..consumed);
            if restart {
                break;
            }
        }
        if initial {
            // The streaming list ended before its end bookmark: list again.
            out.lists.record(t.elapsed(), 0, bytes);
            restart = true;
        }
    }
    out.behind = Some(position);
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// What the writes and the followers add up to.
#[derive(Debug)]
pub struct Tally {
    /// Deliveries: write acknowledged → event received, per watcher that had to see it.
    pub deliveries: Recorder,
    /// Deliveries the watchers had to make.
    pub expected: u64,
    /// Writes a watcher had to see that came neither as an event nor in a list.
    pub missed: u64,
    /// Writes a watcher had not seen because it was still listing (or
    /// starting again) when stopped, after the revision it had reached.
    pub unsynced: u64,
    /// Writes covered by a list instead of an event.
    pub covered: u64,
    /// Events received more than once.
    pub duplicated: u64,
    /// Events older than one received before them.
    pub reordered: u64,
    /// Watches resumed after the server ended them.
    pub resumes: usize,
    /// Lists and streaming lists, merged.
    pub lists: Recorder,
}

/// Checks every follower against the writes: `concerned(write)` names the followers that had to see it.
pub fn tally(writes: &[Write], followed: &[Followed], concerned: impl Fn(&Write) -> Vec<usize>, epoch: Instant) -> Tally {
    let mut t = Tally {
        deliveries: Recorder::new(epoch),
        expected: 0,
        missed: 0,
        unsynced: 0,
        covered: 0,
        duplicated: 0,
        reordered: 0,
        resumes: 0,
        lists: Recorder::new(epoch),
    };
    let arrivals: Vec<HashMap<u64, Instant>> = followed
        .iter()
        .map(|f| {
            let mut seen = HashMap::with_capacity(f.events.len());
            let mut newest = 0;
            for &(rv, at) in &f.events {
                if seen.insert(rv, at).is_some() {
                    t.duplicated += 1;
                } else if rv < newest {
                    t.reordered += 1;
                }
                newest = newest.max(rv);
            }
            seen
        })
        .collect();
    for f in followed {
        t.resumes += f.resumes;
        t.deliveries.bytes += f.bytes;
        t.lists.merge(&f.lists);
    }
    for w in writes {
        for i in concerned(w) {
            let f = &followed[i];
            t.expected += 1;
            if let Some(at) = arrivals[i].get(&w.rv) {
                t.deliveries.delivery(*at, at.saturating_duration_since(w.acked));
            } else if f.covered.iter().any(|&(from, to)| from < w.rv && w.rv <= to) {
                t.covered += 1;
            } else if f.behind.is_some_and(|at| w.rv > at) {
                t.unsynced += 1;
            } else {
                t.missed += 1;
            }
        }
    }
    t
}
