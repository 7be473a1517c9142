//! The store against a naive model: random sequences of adds, changes,
//! deletes, bookmarks, re-lists, compactions and refused updates are applied
//! to both; after every step, every retained revision's snapshot and every
//! `events_after` equal the model's, and revisions outside the window are
//! refused. Plus: readers walking snapshots while the writer applies a
//! million events only ever see whole snapshots.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{CachedObject, EventType, IndexKey, Snapshot, StoreConfig, StoreError, StoreReader, StoreWriter};
use bytes::Bytes;
use proptest::prelude::*;

type State = BTreeMap<String, Bytes>;

/// An object whose labels and indexed field (`spec.nodeName`, absent for some) vary with `salt`.
fn object(key: usize, rv: u64, salt: u8) -> CachedObject {
    let node = if salt.is_multiple_of(5) { String::new() } else { format!(r#","spec":{{"nodeName":"n{}"}}"#, salt % 4) };
    let json = format!(
        r#"{{"metadata":{{"name":"o{key:02}","namespace":"ns","resourceVersion":"{rv}","labels":{{"tier":"t{}"}}}},"data":{salt}{node}}}"#,
        salt % 3
    );
    CachedObject::parse(Bytes::from(json), &["spec.nodeName"]).expect("a valid object")
}

/// A snapshot's indexes, comparable.
fn indexes(s: &Snapshot) -> Vec<(IndexKey, Vec<String>)> {
    s.index_sets().map(|(k, keys)| (k.clone(), keys.iter().map(|k| k.to_string()).collect())).collect()
}

#[derive(Debug, Clone)]
enum Op {
    /// Create, change or delete object `key` (whichever fits), `gap` revisions
    /// on; at gap 0, another change of the last event's revision (a
    /// multi-key transaction), refused when a bookmark or re-list closed it.
    Touch {
        key: usize,
        delete: bool,
        gap: u64,
        salt: u8,
    },
    Bookmark {
        gap: u64,
    },
    /// Re-list: these objects at `gap` revisions on (or back, when `back`).
    Replace {
        keys: Vec<(usize, u8)>,
        gap: u64,
        back: bool,
    },
    /// Compact `n` events off the front.
    Compact {
        n: usize,
    },
    /// An event below the confirmed revision, or at it once closed, which must be refused.
    Stale {
        key: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0..12usize, any::<bool>(), 0..3u64, any::<u8>()).prop_map(|(key, delete, gap, salt)| Op::Touch { key, delete, gap, salt }),
        2 => (0..3u64).prop_map(|gap| Op::Bookmark { gap }),
        1 => (proptest::collection::vec((0..12usize, any::<u8>()), 0..8), 0..4u64, proptest::bool::weighted(0.2))
            .prop_map(|(keys, gap, back)| Op::Replace { keys, gap, back }),
        1 => (0..6usize).prop_map(|n| Op::Compact { n }),
        1 => (0..12usize).prop_map(|key| Op::Stale { key }),
    ]
}

/// Every revision's state since the last re-list, and the event log.
#[derive(Debug)]
struct Model {
    /// State after each revision that changed something (and at the re-list).
    states: BTreeMap<u64, State>,
    log: Vec<(u64, EventType, String)>,
    oldest: u64,
    confirmed: u64,
    max_events: usize,
    /// The confirmed revision came from an event: another of it may follow.
    open: bool,
}

impl Model {
    fn state_at(&self, rv: u64) -> &State {
        self.states.range(..=rv).next_back().map(|(_, s)| s).expect("a state at or before every retained revision")
    }

    fn current(&self) -> State {
        self.state_at(self.confirmed).clone()
    }

    /// Drops the oldest revision's events, all of them.
    fn pop_front(&mut self) {
        let (rv, ..) = self.log.remove(0);
        while self.log.first().is_some_and(|e| e.0 == rv) {
            self.log.remove(0);
        }
        self.oldest = rv;
    }

    fn trim(&mut self) {
        while self.log.len() > self.max_events {
            self.pop_front();
        }
    }
}

fn check(reader: &StoreReader, model: &Model) -> Result<(), TestCaseError> {
    let view = reader.view();
    prop_assert_eq!((view.oldest_rv(), view.confirmed_rv()), (model.oldest, model.confirmed));
    for rv in model.oldest.saturating_sub(2)..=model.confirmed + 2 {
        let got = view.snapshot_at(rv);
        let events = view.events_after(rv);
        if rv < model.oldest {
            prop_assert_eq!(got.map(|_| ()), Err(StoreError::TooOld { requested: rv, oldest: model.oldest }));
            prop_assert!(events.is_err());
        } else if rv > model.confirmed {
            prop_assert_eq!(got.map(|_| ()), Err(StoreError::TooNew { requested: rv, confirmed: model.confirmed }));
            prop_assert!(events.is_err());
        } else {
            let snapshot = got.expect("in the window");
            prop_assert_eq!(snapshot.rv(), rv);
            let state: State = snapshot.iter().map(|o| (o.key().to_string(), o.bytes().clone())).collect();
            prop_assert_eq!(&state, model.state_at(rv), "snapshot at {}", rv);
            prop_assert_eq!(snapshot.bytes(), state.values().map(|b| b.len()).sum::<usize>(), "the bytes at {}", rv);
            let keys: Vec<&str> = snapshot.iter().map(|o| &**o.key()).collect();
            prop_assert!(keys.windows(2).all(|w| w[0] < w[1]), "key order");
            let fresh = Snapshot::build(rv, snapshot.iter().cloned(), &snapshot);
            prop_assert_eq!(indexes(&snapshot), indexes(&fresh), "the indexes at {} are those of its objects", rv);
            let got: Vec<(u64, EventType, String)> =
                events.expect("in the window").iter().map(|e| (e.rv(), e.typ, e.object.key().to_string())).collect();
            let want: Vec<_> = model.log.iter().filter(|e| e.0 > rv).cloned().collect();
            prop_assert_eq!(got, want, "events after {}", rv);
        }
    }
    Ok(())
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let config = StoreConfig { max_events: 10, checkpoint_every: 3, indexed_fields: Arc::from([0usize]), ..StoreConfig::default() };
    let (mut writer, reader) = StoreWriter::new(config.clone());
    let mut model = Model {
        states: BTreeMap::from([(0, State::new())]),
        log: Vec::new(),
        oldest: 0,
        confirmed: 0,
        max_events: config.max_events,
        open: false,
    };
    let now = Instant::now();
    for op in ops {
        match op {
            Op::Touch { key, delete, gap, salt } => {
                let rv = model.confirmed + gap;
                if gap == 0 && !model.open {
                    let refused =
                        matches!(writer.apply(EventType::Added, object(key + 100, rv, salt), now), Err(StoreError::OutOfOrder { .. }));
                    prop_assert!(refused, "an event at a closed revision was applied");
                    continue;
                }
                let mut state = model.current();
                let name = format!("ns/o{key:02}");
                let typ = match (state.contains_key(&name), delete) {
                    (false, _) => EventType::Added,
                    (true, false) => EventType::Modified,
                    (true, true) => EventType::Deleted,
                };
                let obj = object(key, rv, salt);
                match typ {
                    EventType::Deleted => state.remove(&name),
                    _ => state.insert(name.clone(), obj.bytes().clone()),
                };
                // The wrong type for the state is refused and changes nothing.
                let wrong = if typ == EventType::Added { EventType::Modified } else { EventType::Added };
                let refused = matches!(writer.apply(wrong, object(key, rv, salt), now), Err(StoreError::Inconsistent { .. }));
                prop_assert!(refused, "a {:?} that does not fit was applied", wrong);
                writer.apply(typ, obj, now).expect("a fitting event");
                model.states.insert(rv, state);
                model.log.push((rv, typ, name));
                model.confirmed = rv;
                model.open = true;
                model.trim();
            }
            Op::Bookmark { gap } => {
                writer.bookmark(model.confirmed + gap).expect("a forward bookmark");
                model.confirmed += gap;
                model.open = false;
            }
            Op::Replace { keys, gap, back } => {
                let rv = if back { model.confirmed.saturating_sub(gap + 1).max(1) } else { model.confirmed + gap };
                let objects: Vec<CachedObject> = keys.iter().map(|&(k, salt)| object(k, rv, salt)).collect();
                let before = model.current();
                let state: State = objects.iter().map(|o| (o.key().to_string(), o.bytes().clone())).collect();
                let diff = writer.replace(objects, rv);
                let changed = before
                    .keys()
                    .chain(state.keys())
                    .filter(|k| before.get(*k) != state.get(*k))
                    .collect::<std::collections::BTreeSet<_>>();
                prop_assert_eq!(diff.len(), changed.len(), "the re-list's difference");
                model.states = BTreeMap::from([(rv, state)]);
                model.log.clear();
                model.oldest = rv;
                model.confirmed = rv;
                model.open = false;
            }
            Op::Compact { n } => {
                let upto = model.log.get(n.min(model.log.len().saturating_sub(1))).map(|e| e.0);
                if let Some(rv) = upto {
                    writer.compact(rv);
                    while model.log.first().is_some_and(|e| e.0 <= rv) {
                        model.pop_front();
                    }
                    model.oldest = model.oldest.max(rv);
                }
            }
            Op::Stale { key } => {
                let rv = if model.open { model.confirmed.saturating_sub(1) } else { model.confirmed };
                let refused = matches!(writer.apply(EventType::Added, object(key + 100, rv, 0), now), Err(StoreError::OutOfOrder { .. }));
                prop_assert!(refused, "an event at the confirmed revision was applied");
                if rv > 0 {
                    prop_assert!(writer.bookmark(rv - 1).is_err());
                }
            }
        }
        writer.publish();
        check(&reader, &model)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn the_store_equals_the_model_at_every_retained_revision(ops in proptest::collection::vec(op(), 1..60)) {
        run(ops)?;
    }
}

#[test]
fn the_log_is_bounded_by_age() {
    let (mut writer, reader) = StoreWriter::new(StoreConfig { max_age: Duration::from_secs(10), ..StoreConfig::default() });
    let t0 = Instant::now();
    for i in 1..=5u64 {
        writer.apply(EventType::Added, object(i as usize, i, 0), t0 + Duration::from_secs(i * 4)).unwrap();
    }
    writer.expire(t0 + Duration::from_secs(21));
    writer.publish();
    let view = reader.view();
    assert_eq!((view.oldest_rv(), view.log_len()), (2, 3), "events applied more than 10 s before went");
    assert!(view.snapshot_at(1).is_err() && view.snapshot_at(2).unwrap().len() == 2);
}

#[test]
fn pins_keep_snapshots_for_their_ttl_and_are_bounded() {
    let config = StoreConfig { pin_ttl: Duration::from_secs(300), max_pins: 2, max_events: 1, ..StoreConfig::default() };
    let (mut writer, reader) = StoreWriter::new(config);
    let t0 = Instant::now();
    writer.apply(EventType::Added, object(1, 1, 0), t0).unwrap();
    writer.publish();
    reader.pin(reader.view().head().clone(), t0);
    for rv in 2..=4 {
        writer.apply(EventType::Modified, object(1, rv, rv as u8), t0).unwrap();
    }
    writer.publish();
    assert!(reader.view().snapshot_at(1).is_err(), "revision 1 left the log");
    let pinned = reader.snapshot_at(1, t0 + Duration::from_secs(200)).expect("pinned");
    assert_eq!(pinned.get("ns/o01").unwrap().resource_version(), 1);
    assert!(reader.pinned(1, t0 + Duration::from_secs(499)).is_some(), "use refreshed the TTL");
    assert!(reader.pinned(1, t0 + Duration::from_secs(900)).is_none(), "expired");
    for rv in [2, 3, 4] {
        reader.pin(Arc::new(Snapshot::build(rv, [], &Snapshot::default())), t0 + Duration::from_secs(rv));
    }
    assert!(reader.pinned(2, t0).is_none() && reader.pinned(4, t0).is_some(), "the pin closest to expiry went first");
}

#[test]
fn a_slow_subscriber_never_blocks_the_writer_and_catches_up_from_the_log() {
    let (mut writer, reader) = StoreWriter::new(StoreConfig { max_events: 1000, ..StoreConfig::default() });
    let mut rx = reader.subscribe();
    let seen = *rx.borrow_and_update();
    let now = Instant::now();
    for rv in 1..=5000u64 {
        let typ = if rv <= 10 { EventType::Added } else { EventType::Modified };
        writer.apply(typ, object(((rv - 1) % 10) as usize, rv, 0), now).unwrap();
        writer.publish();
    }
    assert!(rx.has_changed().unwrap());
    assert_eq!(*rx.borrow_and_update(), 5000, "only the latest value is kept");
    let view = reader.view();
    assert!(matches!(view.events_after(seen), Err(StoreError::TooOld { .. })), "it fell out of the window and knows it");
    assert_eq!(view.events_after(4500).unwrap().len(), 500);
}

#[test]
fn readers_see_only_whole_snapshots_while_a_million_events_are_applied() {
    const KEYS: usize = 64;
    const EVENTS: u64 = 1_000_000;
    let (mut writer, reader) = StoreWriter::new(StoreConfig { max_events: 10_000, ..StoreConfig::default() });
    let now = Instant::now();
    for k in 0..KEYS {
        writer.apply(EventType::Added, object(k, k as u64 + 1, 0), now).unwrap();
    }
    writer.publish();
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (reader, done) = (reader.clone(), done.clone());
            std::thread::spawn(move || {
                let mut walks = 0u64;
                while !done.load(Ordering::Relaxed) {
                    let view = reader.view();
                    let head = view.head();
                    let rvs: Vec<u64> = head.iter().map(|o| o.resource_version()).collect();
                    // Whole: every key present, and the newest object is the snapshot's revision.
                    assert_eq!(rvs.len(), KEYS);
                    assert_eq!(rvs.iter().max().copied(), Some(head.rv()));
                    walks += 1;
                }
                walks
            })
        })
        .collect();
    let start = KEYS as u64 + 1;
    for rv in start..start + EVENTS {
        let key = (rv % KEYS as u64) as usize;
        let json = format!(r#"{{"metadata":{{"name":"o{key:02}","namespace":"ns","resourceVersion":"{rv}"}}}}"#);
        writer.apply(EventType::Modified, CachedObject::parse(Bytes::from(json), &[]).unwrap(), now).unwrap();
        if rv % 16 == 0 {
            writer.publish();
        }
    }
    writer.publish();
    done.store(true, Ordering::Relaxed);
    let walks: u64 = readers.into_iter().map(|r| r.join().expect("a reader saw a torn snapshot")).sum();
    assert!(walks > 0);
    assert_eq!(reader.view().confirmed_rv(), start + EVENTS - 1);
}
