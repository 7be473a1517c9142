//! The reflector against the simulator under churn and faults. A recording
//! sink keeps the state the reflector builds and every event it applied;
//! after each fault the state must equal the simulator's at the same
//! revision (an Exact list), and the events since the last list must be
//! exactly the simulator's, in order, without gaps or duplicates.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::list::ListPage;
use apimachinery::resource::Resource;
use apimachinery::watch::{EventType as FrameType, WatchDecoder};
use bytes::Bytes;
use kache::store::{StoreConfig, StoreReader, StoreWriter};
use kache::upstream::client::Client;
use kache::upstream::connect::ConnectArgs;
use kache::upstream::discovery;
use kache::upstream::reflector::{Reflector, ReflectorConfig, ReflectorStatus, Sink};
use kache::upstream::store_sink::StoreSink;
use parking_lot::Mutex;
use serde_json::Value;
use sim::{Sim, SimConfig, Workload};
use tokio::net::TcpListener;

/// Key → resourceVersion, the state's identity.
type State = BTreeMap<String, u64>;

#[derive(Debug, Default)]
struct Model {
    state: State,
    rv: u64,
    /// Revision of the last replace.
    listed_at: u64,
    /// Events applied since the last replace: (rv, type, key).
    events: Vec<(u64, FrameType, String)>,
    replaces: usize,
}

#[derive(Debug, Clone, Default)]
struct Recorder(Arc<Mutex<Model>>);

/// What the recorder refuses: an object it cannot read.
type Refused = std::io::Error;

fn key_and_rv(object: &[u8]) -> Result<(String, u64), Refused> {
    let v: Value = serde_json::from_slice(object)?;
    let m = &v["metadata"];
    let key = match m["namespace"].as_str() {
        Some(ns) => format!("{ns}/{}", m["name"].as_str().unwrap_or_default()),
        None => m["name"].as_str().unwrap_or_default().to_string(),
    };
    let rv = m["resourceVersion"].as_str().and_then(|r| r.parse().ok()).ok_or_else(|| Refused::other("no resourceVersion"))?;
    Ok((key, rv))
}

impl Sink for Recorder {
    type Error = Refused;

    fn replace(&mut self, items: Vec<Bytes>, rv: u64) -> Result<bool, Refused> {
        let state = items.iter().map(|i| key_and_rv(i)).collect::<Result<State, _>>()?;
        let mut m = self.0.lock();
        *m = Model { state, rv, listed_at: rv, events: Vec::new(), replaces: m.replaces + 1 };
        Ok(true)
    }

    fn apply(&mut self, typ: FrameType, object: Bytes) -> Result<u64, Refused> {
        let (key, rv) = key_and_rv(&object)?;
        let mut m = self.0.lock();
        match typ {
            FrameType::Deleted => m.state.remove(&key),
            _ => m.state.insert(key.clone(), rv),
        };
        m.rv = rv;
        m.events.push((rv, typ, key));
        Ok(rv)
    }

    fn bookmark(&mut self, rv: u64) {
        self.0.lock().rv = rv;
    }

    fn flush(&mut self) {}

    fn epoch(&self) -> u64 {
        self.0.lock().replaces as u64
    }
}

/// Feeds the recorder and the real store alike.
#[derive(Debug)]
struct Tee(Recorder, StoreSink);

impl Sink for Tee {
    type Error = Refused;

    fn replace(&mut self, items: Vec<Bytes>, rv: u64) -> Result<bool, Refused> {
        self.0.replace(items.clone(), rv)?;
        self.1.replace(items, rv).map_err(Refused::other)
    }

    fn apply(&mut self, typ: FrameType, object: Bytes) -> Result<u64, Refused> {
        let rv = self.0.apply(typ, object.clone())?;
        assert_eq!(self.1.apply(typ, object).map_err(Refused::other)?, rv);
        Ok(rv)
    }

    fn bookmark(&mut self, rv: u64) {
        self.0.bookmark(rv);
        self.1.bookmark(rv);
    }

    fn flush(&mut self) {
        self.1.flush();
    }

    fn epoch(&self) -> u64 {
        self.1.epoch()
    }
}

struct Rig {
    sim: Sim,
    client: Client,
    pods: Resource,
    model: Recorder,
    store: StoreReader,
    status: Arc<ReflectorStatus>,
    task: tokio::task::JoinHandle<()>,
}

const WORKLOAD: Workload = Workload { pods: 300, nodes: 10, namespaces: 4, configmaps: 20, configmap_size: 100, rbac: 0 };

async fn rig(churn: f64, page_size: usize) -> Rig {
    let config = SimConfig {
        bookmark_interval: Duration::from_millis(200),
        compact_interval: None,
        workload: WORKLOAD,
        churn,
        ..SimConfig::default()
    };
    let sim = Sim::start(config, TcpListener::bind("127.0.0.1:0").await.expect("a port")).expect("the simulator starts");
    let creds = ConnectArgs { server: Some(sim.url()), ..ConnectArgs::default() }.resolve().await.expect("credentials");
    let client = Client::new(&creds).expect("a client");
    let pods = discovery::resolve(&client, &["pods".to_string()]).await.expect("pods").remove(0);
    let model = Recorder::default();
    let (writer, store) = StoreWriter::new(StoreConfig::default());
    let sink = Tee(model.clone(), StoreSink::new(&pods, writer));
    let config = ReflectorConfig { page_size, backoff_initial: Duration::from_millis(20), ..ReflectorConfig::default() };
    let reflector = Reflector::new(client.clone(), pods.clone(), config, sink);
    let status = reflector.status();
    let task = tokio::spawn(reflector.run());
    Rig { sim, client, pods, model, store, status, task }
}

impl Rig {
    async fn until(&self, what: &str, cond: impl Fn(&Model, &ReflectorStatus) -> bool) {
        for _ in 0..300 {
            if cond(&self.model.0.lock(), &self.status) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("timed out waiting for {what}; last error {:?}", self.status.last_error());
    }

    /// The simulator's pods at `rv`, by an Exact list: the items' bytes.
    async fn upstream_items(&self, rv: u64) -> Vec<Bytes> {
        let path = format!("{}?resourceVersion={rv}&resourceVersionMatch=Exact", self.pods.collection_path());
        ListPage::parse(&self.client.get_bytes(&path).await.expect("an Exact list")).expect("a list").items
    }

    async fn upstream_state(&self, rv: u64) -> State {
        self.upstream_items(rv).await.iter().map(|i| key_and_rv(i)).collect::<Result<_, _>>().expect("keys")
    }

    /// The simulator's pod events in `(from, to]`, from a watch.
    async fn upstream_events(&self, from: u64, to: u64) -> Vec<(u64, FrameType, String)> {
        let mut out = Vec::new();
        if from == to {
            return out;
        }
        let path = format!("{}?watch=1&resourceVersion={from}&timeoutSeconds=5", self.pods.collection_path());
        let mut resp = self.client.get(&path).await.expect("a watch");
        // A restarted simulator refuses watches (429) while it re-initializes.
        while resp.status() == 429 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            resp = self.client.get(&path).await.expect("a watch");
        }
        assert_eq!(resp.status(), 200);
        let mut body = resp.into_body();
        let mut decoder = WatchDecoder::new(1 << 24);
        use http_body_util::BodyExt;
        while let Some(Ok(frame)) = body.frame().await {
            decoder.push(&frame.into_data().unwrap_or_default());
            while let Some(f) = decoder.next_frame().expect("a frame") {
                let (key, rv) = key_and_rv(&f.object).expect("an object");
                if rv > to {
                    return out;
                }
                out.push((rv, f.typ, key));
                if rv == to {
                    return out;
                }
            }
        }
        out
    }

    /// Waits until the reflector has caught up with the simulator, then checks exactness.
    async fn check(&self, what: &str) {
        let target = self.sim.revision();
        self.until(&format!("{what}: catching up to {target}"), |m, _| m.rv >= target).await;
        let (state, rv, listed_at, events) = {
            let m = self.model.0.lock();
            (m.state.clone(), m.rv, m.listed_at, m.events.clone())
        };
        assert_eq!(state, self.upstream_state(rv).await, "{what}: the state at {rv} differs");
        // The store holds every object byte for byte as upstream lists it.
        let head = self.store.view().head().clone();
        let stored: Vec<Bytes> = head.iter().map(|o| o.bytes().clone()).collect();
        let upstream = self.upstream_items(head.rv()).await;
        assert!(
            stored == upstream,
            "{what}: the store at {} differs from the simulator's list ({} vs {} items)",
            head.rv(),
            stored.len(),
            upstream.len()
        );
        let upstream = self.upstream_events(listed_at, events.last().map_or(listed_at, |e| e.0)).await;
        assert_eq!(events, upstream, "{what}: the events since {listed_at} differ");
        assert!(events.windows(2).all(|w| w[0].0 < w[1].0), "{what}: events out of order");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_list_and_one_watch_then_exact_under_churn() {
    let rig = rig(200.0, 1000).await;
    rig.until("ready", |_, s| s.is_ready()).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(rig.sim.request_count("pods", "list"), 1, "one list of one page");
    assert_eq!(rig.sim.request_count("pods", "watch"), 1);
    rig.check("steady churn").await;
    assert_eq!(rig.model.0.lock().replaces, 1);
    rig.task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_watches_resume_without_loss() {
    let rig = rig(200.0, 70).await;
    rig.until("ready", |_, s| s.is_ready()).await;
    for round in 0..5 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        rig.sim.drop_watches();
        rig.check(&format!("drop {round}")).await;
    }
    assert_eq!(rig.model.0.lock().replaces, 1, "resumed, never re-listed");
    assert!(rig.status.watches.load(std::sync::atomic::Ordering::Relaxed) >= 6);
    rig.task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalls_and_compaction_while_behind_force_a_relist_that_stays_exact() {
    let rig = rig(200.0, 70).await;
    rig.until("ready", |_, s| s.is_ready()).await;
    rig.sim.stall(Duration::from_secs(1));
    rig.check("stalled").await;
    assert_eq!(rig.model.0.lock().replaces, 1, "a stall is waited out");

    rig.sim.stall(Duration::from_secs(1));
    tokio::time::sleep(Duration::from_millis(300)).await;
    rig.sim.compact_now();
    rig.sim.drop_watches();
    rig.check("compacted while behind").await;
    assert_eq!(rig.model.0.lock().replaces, 2, "the compacted revision forced one re-list");
    rig.task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_keeping_or_resetting_revisions() {
    let rig = rig(100.0, 70).await;
    rig.until("ready", |_, s| s.is_ready()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A peer whose watch cache reaches back: resumed.
    rig.sim.restart(false, Duration::from_millis(500), true);
    rig.check("restart keeping revisions").await;
    assert_eq!(rig.model.0.lock().replaces, 1, "resumed after the restart");

    let before = rig.model.0.lock().rv;
    rig.sim.restart(true, Duration::ZERO, true);
    assert!(rig.sim.revision() < before, "the reset renumbered revisions");
    rig.until("a re-list after the reset", |m, _| m.replaces == 2).await;
    rig.check("restart resetting revisions").await;
    rig.task.abort();
}
