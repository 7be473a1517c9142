//! The configuration controller (`apf_controller.go`'s `configController`):
//! the cluster's FlowSchemas and PriorityLevelConfigurations, read from
//! kache's own stores of them, digested into a [`Config`] whenever either
//! store's head moves (`lockAndDigestConfigObjects`: broken levels and
//! schemas naming no level ignored, the mandatory ones supplied, levels no
//! longer configured kept until their requests are done), each level's
//! seats divided from the server's and re-balanced every
//! [`ADJUSTMENT_PERIOD`] (`updateBorrowing`).
//!
//! Invariants: classification never waits for a digest in progress
//! longer than that digest (one at a time, under the levels' lock), and a
//! request is classified by the configuration of the stores' heads as it
//! arrives; until a store has been listed, the apiserver's bootstrap
//! configuration stands in for the cluster's.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{SystemTime, UNIX_EPOCH};

use apimachinery::auth::{Attributes, UserInfo};
use arc_swap::ArcSwap;
use parking_lot::Mutex;

use super::borrowing::{self, ADJUSTMENT_PERIOD, Limits};
use super::config::{Classified, Config, LevelRef, Schema, sort};
use super::level::{Level, queuing};
use super::metrics;
use super::objects::{FlowSchema, PriorityLevel, Queues};
use super::queueset::QueueSet;
use super::retry::Dropped;
use crate::cache::{Cache, CachedResource};

/// The group and resources of the configuration objects.
pub const GROUP: &str = "flowcontrol.apiserver.k8s.io";
pub(crate) const FLOW_SCHEMAS: &str = "flowschemas";
pub(crate) const PRIORITY_LEVELS: &str = "prioritylevelconfigurations";

/// A configuration, the stores' head revisions it stands for (`None`: the
/// bootstrap one), and what it was digested from: each store's object count
/// and newest object revision (a bookmark moves a head, not its objects).
#[derive(Debug)]
struct Digested {
    from: Option<(u64, u64)>,
    objects: Option<[(usize, u64); 2]>,
    config: Arc<Config>,
}

/// The levels that outlive configurations.
#[derive(Debug, Default)]
struct Levels {
    by_name: HashMap<String, (Arc<Level>, Arc<PriorityLevel>)>,
    nominal_sum: usize,
}

/// API Priority and Fairness for what kache answers itself.
#[derive(Debug)]
pub struct FlowControl {
    /// The seats kache shares (the apiserver's `serverConcurrencyLimit`).
    server_seats: usize,
    /// kache's stores of FlowSchemas and PriorityLevelConfigurations.
    sources: Option<(Arc<CachedResource>, Arc<CachedResource>)>,
    current: ArcSwap<Digested>,
    levels: Mutex<Levels>,
    dropped: Dropped,
}

impl FlowControl {
    /// Flow control over `server_seats` seats with the configuration in
    /// `cache` (the apiserver's bootstrap one if kache does not cache it);
    /// re-balances its levels' seats until dropped.
    pub fn start(server_seats: usize, cache: &Cache) -> Arc<FlowControl> {
        let find = |plural| cache.resources().iter().find(|r| r.info().group == GROUP && r.info().plural == plural).cloned();
        let sources = find(FLOW_SCHEMAS).zip(find(PRIORITY_LEVELS));
        let mut levels = Levels::default();
        let (pls, fss) = bootstrap();
        let config = digest(&mut levels, server_seats, pls, fss);
        metrics::server_seats(server_seats);
        let fc = Arc::new(FlowControl {
            server_seats,
            sources,
            current: ArcSwap::from_pointee(Digested { from: None, objects: None, config: Arc::new(config) }),
            levels: Mutex::new(levels),
            dropped: Dropped::default(),
        });
        tokio::spawn(rebalance(Arc::downgrade(&fc)));
        fc
    }

    /// What `request` of `user` is classified as, by the configuration of now.
    pub fn classify(&self, user: &UserInfo, request: &Attributes) -> Option<Classified> {
        self.refresh().config.classify(user, request)
    }

    /// Records a rejection of a request of `level`; the `Retry-After` to send it.
    pub fn rejected(&self, level: &str) -> i64 {
        let unix = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
        self.dropped.record(level, unix);
        self.dropped.retry_after(level)
    }

    /// The stores' head revisions, once both have been listed.
    fn revisions(&self) -> Option<(u64, u64)> {
        let (fs, pl) = self.sources.as_ref()?;
        let (fs, pl) = (fs.store().view().head().rv(), pl.store().view().head().rv());
        (fs > 0 && pl > 0).then_some((fs, pl))
    }

    /// The configuration of the stores' heads, digested anew if they moved.
    fn refresh(&self) -> Arc<Digested> {
        let from = self.revisions();
        let current = self.current.load_full();
        if current.from == from {
            return current;
        }
        let mut levels = self.levels.lock();
        let current = self.current.load_full();
        if current.from == from {
            return current;
        }
        let objects = self.sources.as_ref().zip(from).map(|((fs, pl), _)| [stamp(fs), stamp(pl)]);
        let config = match (&self.sources, objects) {
            _ if objects == current.objects => current.config.clone(),
            (Some((fs, pl)), Some(_)) => {
                let config = digest(&mut levels, self.server_seats, read(pl, PriorityLevel::read), read(fs, FlowSchema::read));
                tracing::info!(
                    schemas = config.schemas.len(),
                    levels = config.levels.len(),
                    "priority and fairness: configuration changed"
                );
                Arc::new(config)
            }
            _ => current.config.clone(),
        };
        let digested = Arc::new(Digested { from, objects, config });
        self.current.store(digested.clone());
        digested
    }

    /// `updateBorrowing`, and levels no longer configured dropped once idle.
    fn rebalance(&self) {
        let mut levels = self.levels.lock();
        levels.by_name.retain(|_, (level, _)| !(level.quiescing() && level.queues.is_idle()));
        adjust(&levels);
    }
}

/// Every [`ADJUSTMENT_PERIOD`], while flow control lives.
async fn rebalance(fc: Weak<FlowControl>) {
    loop {
        tokio::time::sleep(ADJUSTMENT_PERIOD).await;
        let Some(fc) = fc.upgrade() else { return };
        fc.rebalance();
    }
}

/// A store's head's object count and newest object revision.
fn stamp(r: &CachedResource) -> (usize, u64) {
    let view = r.store().view();
    let head = view.head();
    (head.len(), head.iter().map(|o| o.resource_version()).max().unwrap_or(0))
}

/// The objects of a store's head that read as `T`.
fn read<T>(r: &CachedResource, parse: fn(&[u8]) -> Option<T>) -> Vec<T> {
    r.store().view().head().iter().filter_map(|o| parse(o.bytes())).collect()
}

/// The apiserver's bootstrap configuration: mandatory and suggested objects.
fn bootstrap() -> (Vec<PriorityLevel>, Vec<FlowSchema>) {
    use apimachinery::flowcontrol as boot;
    let bytes = |v: serde_json::Value| serde_json::to_vec(&v).unwrap_or_default();
    let pls = boot::mandatory_priority_levels().into_iter().chain(boot::suggested_priority_levels());
    let fss = boot::mandatory_flow_schemas().into_iter().chain(boot::suggested_flow_schemas());
    (pls.filter_map(|v| PriorityLevel::read(&bytes(v))).collect(), fss.filter_map(|v| FlowSchema::read(&bytes(v))).collect())
}

/// The mandatory object named `name` of `objects`.
fn mandatory<T>(objects: Vec<serde_json::Value>, name: &str, parse: fn(&[u8]) -> Option<T>) -> Option<T> {
    let v = objects.into_iter().find(|o| o["metadata"]["name"] == name)?;
    parse(&serde_json::to_vec(&v).ok()?)
}

/// `lockAndDigestConfigObjects`.
fn digest(levels: &mut Levels, server_seats: usize, pls: Vec<PriorityLevel>, fss: Vec<FlowSchema>) -> Config {
    // (level, object, queuing, whether it is new)
    let mut next: HashMap<String, (Arc<Level>, Arc<PriorityLevel>, Queues, bool)> = HashMap::new();
    let admit = |pl: PriorityLevel, next: &mut HashMap<_, _>| {
        let Some(q) = pl.queuing().filter(|q| QueueSet::check(&queuing(*q)).is_ok()) else {
            tracing::warn!(level = %pl.metadata.name, "ignoring a PriorityLevelConfiguration whose spec is broken");
            return;
        };
        let (level, new) = match levels.by_name.get(&pl.metadata.name) {
            Some((level, _)) => (level.clone(), false),
            None => match Level::new(&pl, q) {
                Ok(level) => (level, true),
                Err(_) => return,
            },
        };
        next.insert(pl.metadata.name.clone(), (level, Arc::new(pl), q, new));
    };
    for pl in pls {
        admit(pl, &mut next);
    }
    let mut schemas: Vec<Arc<Schema>> = fss
        .into_iter()
        .filter(|fs| next.contains_key(&fs.spec.priority_level_configuration.name))
        .map(|fs| Arc::new(Schema { name: fs.metadata.name.as_str().into(), uid: fs.metadata.uid.clone(), object: fs }))
        .collect();
    sort(&mut schemas);
    let has = |schemas: &[Arc<Schema>], name: &str| schemas.iter().any(|s| &*s.name == name);
    let boot_fs = |name| {
        let fs = mandatory(apimachinery::flowcontrol::mandatory_flow_schemas(), name, FlowSchema::read)?;
        Some(Arc::new(Schema { name: name.into(), uid: String::new(), object: fs }))
    };
    if !has(&schemas, "exempt") {
        schemas.splice(0..0, boot_fs("exempt"));
    }
    if !has(&schemas, "catch-all") {
        schemas.extend(boot_fs("catch-all"));
    }
    // Levels no longer configured: the mandatory ones stay; others stay while busy.
    for (name, (level, pl)) in &levels.by_name {
        let mandatory = matches!(name.as_str(), "exempt" | "catch-all");
        if next.contains_key(name) || (!mandatory && !level.quiesce()) {
            continue;
        }
        if let Some(q) = pl.queuing() {
            next.insert(name.clone(), (level.clone(), pl.clone(), q, false));
        }
    }
    for name in ["exempt", "catch-all"] {
        if !next.contains_key(name)
            && let Some(pl) = mandatory(apimachinery::flowcontrol::mandatory_priority_levels(), name, PriorityLevel::read)
        {
            admit(pl, &mut next);
        }
    }
    let share_sum: f64 = next.values().map(|(_, pl, _, _)| pl.commons().0 as f64).sum();
    levels.nominal_sum = 0;
    for (level, pl, q, new) in next.values() {
        let limits = Limits::of(server_seats, share_sum, pl.commons());
        level.set(pl, *q, limits, *new);
        levels.nominal_sum += limits.nominal;
    }
    levels.by_name = next.iter().map(|(name, (level, pl, _, _))| (name.clone(), (level.clone(), pl.clone()))).collect();
    adjust(levels);
    let levels = next.into_iter().map(|(name, (state, object, _, _))| (name, LevelRef { state, object })).collect();
    Config { schemas, levels }
}

/// `updateBorrowingLocked`: every level's demand observed, then its seats.
fn adjust(levels: &Levels) {
    let all: Vec<&Arc<Level>> = levels.by_name.values().map(|(l, _)| l).collect();
    let seats: Vec<borrowing::Level> = all
        .iter()
        .map(|l| {
            let s = l.observe();
            borrowing::Level { exempt: s.exempt, limits: s.limits, demand: s.demand, current: s.current }
        })
        .collect();
    for (level, current) in all.iter().zip(borrowing::adjust(levels.nominal_sum, &seats)) {
        level.apply(current);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pl(name: &str, shares: u32) -> PriorityLevel {
        let v = json!({"metadata": {"name": name, "uid": format!("uid-{name}")}, "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": shares, "limitResponse": {"type": "Queue", "queuing": {"queues": 8, "handSize": 2, "queueLengthLimit": 5}}}}});
        PriorityLevel::read(v.to_string().as_bytes()).unwrap()
    }

    fn fs(name: &str, level: &str, precedence: u32, group: &str) -> FlowSchema {
        let v = json!({"metadata": {"name": name, "uid": format!("uid-{name}")}, "spec": {"priorityLevelConfiguration": {"name": level},
            "matchingPrecedence": precedence, "distinguisherMethod": {"type": "ByUser"},
            "rules": [{"subjects": [{"kind": "Group", "group": {"name": group}}], "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}});
        FlowSchema::read(v.to_string().as_bytes()).unwrap()
    }

    fn user(groups: &[&str]) -> UserInfo {
        UserInfo { name: "u".into(), groups: groups.iter().map(|g| g.to_string()).collect(), ..UserInfo::default() }
    }

    #[test]
    fn schemas_match_in_precedence_then_name_order_with_the_mandatory_ones_supplied() {
        let mut levels = Levels::default();
        let schemas =
            vec![fs("b", "low", 500, "dev"), fs("a", "low", 500, "dev"), fs("first", "low", 100, "ops"), fs("dangling", "none", 1, "dev")];
        let config = digest(&mut levels, 100, vec![pl("low", 10)], schemas);
        let names: Vec<&str> = config.schemas.iter().map(|s| &*s.name).collect();
        assert_eq!(names, ["exempt", "first", "a", "b", "catch-all"], "a schema naming no level is ignored");
        let get = Attributes { verb: "get".into(), path: "/version".into(), ..Attributes::default() };
        let dev = config.classify(&user(&["dev"]), &get).unwrap();
        assert_eq!((&*dev.schema.name, dev.level.object.metadata.uid.as_str()), ("a", "uid-low"));
        assert_ne!(dev.hash, 0, "a level of more than one queue has flows");
        assert_eq!(&*config.classify(&user(&["system:masters"]), &get).unwrap().schema.name, "exempt");
        assert_eq!(&*config.classify(&user(&["system:authenticated"]), &get).unwrap().schema.name, "catch-all");
        assert!(config.classify(&user(&["system:masters"]), &get).unwrap().exempt());
        // The mandatory levels are imagined, and every level gets its share of the seats (10 of 15 shares for `low`).
        assert_eq!(config.levels.len(), 3);
        assert_eq!(levels.nominal_sum, 67 + 34);
    }

    #[test]
    fn a_level_dropped_while_busy_stays_until_its_requests_are_done() {
        let mut levels = Levels::default();
        let first = digest(&mut levels, 100, vec![pl("low", 10)], vec![fs("a", "low", 500, "dev")]);
        let get = Attributes { verb: "get".into(), path: "/version".into(), ..Attributes::default() };
        let class = first.classify(&user(&["dev"]), &get).unwrap();
        let crate::flowcontrol::Admission::Executing(seat) = class.level.state.queues.start(1, class.hash, &class.schema.name) else {
            panic!("a free seat")
        };
        let second = digest(&mut levels, 100, vec![], vec![]);
        assert!(second.levels.contains_key("low"), "kept while its request executes");
        assert!(!second.schemas.iter().any(|s| &*s.name == "a"));
        drop(seat);
        let third = digest(&mut levels, 100, vec![], vec![]);
        assert!(!third.levels.contains_key("low"), "dropped once idle");
        assert_eq!(third.levels.len(), 2, "the mandatory levels stay");
    }
}
