//! How a cached resource's objects are written besides the stored JSON:
//! as a lone object (the type spliced in front), their metadata only (as
//! the apiserver serves it), and the binary encodings made per object and
//! kept with it — protobuf messages and CBOR maps — with their warm-ups
//! ahead of large reads.
//!
//! Invariants: an object's binary encoding is made once per revision and
//! shared by every answer; an object without one turns that encoding off
//! for its resource from then on (its requests pass through; open streams
//! end and resume upstream) — never a guessed encoding. A large read in a
//! binary encoding is answered from memory only once every head object has
//! it ([`CachedResource::warm`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use apimachinery::negotiate::Encoding;
use apimachinery::resource::Resource;
use bytes::Bytes;

use super::CachedResource;
use crate::store::CachedObject;
use crate::upstream::store_sink::carries_type;

/// The protobuf message of object metadata.
pub const OBJECT_META: &str = "apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// What a resource's encodings need, and where each stands.
#[derive(Debug)]
pub(super) struct Encodings {
    /// `{"kind":K,"apiVersion":V,`, spliced into stored list items that lack it.
    type_prefix: Bytes,
    /// The schema name of its protobuf message, for built-in kinds.
    protobuf: Option<String>,
    /// Set once an object had no protobuf encoding: protobuf requests then pass through.
    protobuf_failed: AtomicBool,
    /// Warm-ups of its objects' protobuf messages and CBOR maps ([`CachedResource::warm`]), protobuf's then CBOR's.
    warm: [Warm; 2],
    /// How its objects are written in CBOR (`None`: a built-in kind the
    /// protobuf schema, which says which strings are `[]byte`, lacks).
    cbor_schema: Option<apimachinery::cbor::Schema>,
    /// Set once an object had no exact CBOR encoding: CBOR requests for its
    /// objects then pass through (a stream that ended for it must not be
    /// answered from memory again, and fail again, when it resumes).
    cbor_failed: AtomicBool,
}

impl Encodings {
    /// What `info`'s objects need (`custom`: a custom resource, stored unstructured).
    pub(super) fn of(info: &Resource, custom: bool) -> Encodings {
        let builtin = apimachinery::resource::builtin(&info.group, &info.version, &info.plural).is_some();
        let protobuf = builtin.then(|| apimachinery::protobuf::message_name(&info.api_version(), &info.kind)).flatten();
        let cbor_schema = match custom {
            true => Some(apimachinery::cbor::Schema::Custom),
            false => builtin.then(|| apimachinery::cbor::Schema::builtin(&info.api_version(), &info.kind)).flatten(),
        };
        Encodings {
            type_prefix: Bytes::from(info.type_prefix()),
            protobuf,
            protobuf_failed: AtomicBool::new(false),
            warm: Default::default(),
            cbor_schema,
            cbor_failed: AtomicBool::new(false),
        }
    }
}

impl CachedResource {
    /// `o`'s `metadata` (at `rv` when given) as metadata-only answers and
    /// Table rows carry it ([`apimachinery::meta::served_metadata`]: a
    /// custom resource's in `ObjectMeta` order, a DaemonSet's without its
    /// template-generation annotation); the stored bytes, shared, otherwise.
    pub fn metadata_parts(&self, o: &CachedObject, rv: Option<u64>) -> Vec<Bytes> {
        if rv.is_none() {
            return vec![self.metadata_bytes(o)];
        }
        let parts = o.metadata_at(rv);
        match apimachinery::meta::served_metadata(&self.info, &parts.concat()) {
            std::borrow::Cow::Owned(served) => vec![Bytes::from(served)],
            std::borrow::Cow::Borrowed(_) => parts,
        }
    }

    /// [`CachedResource::metadata_parts`] of the current revision, in one piece.
    pub fn metadata_bytes(&self, o: &CachedObject) -> Bytes {
        let stored = o.bytes().slice(o.metadata_range());
        match apimachinery::meta::served_metadata(&self.info, &stored) {
            std::borrow::Cow::Owned(served) => Bytes::from(served),
            std::borrow::Cow::Borrowed(_) => stored,
        }
    }

    /// Whether kache answers protobuf for this resource: a built-in kind
    /// whose every object so far had an encoding.
    pub fn speaks_protobuf(&self) -> bool {
        self.encodings.protobuf.is_some() && !self.encodings.protobuf_failed.load(Ordering::Relaxed)
    }

    /// Whether kache answers metadata-only protobuf (`PartialObjectMetadata`)
    /// for this resource: any built-in kind it speaks protobuf for, and
    /// custom resources (their metadata is an `ObjectMeta` like any other).
    pub fn speaks_metadata_protobuf(&self) -> bool {
        self.custom || self.speaks_protobuf()
    }

    /// `o`'s `PartialObjectMetadata` message (at `rv` when given): its
    /// `ObjectMeta` a slice of the object's message where the served metadata
    /// is the stored one, else encoded from the served metadata.
    pub fn metadata_protobuf(&self, o: &CachedObject, rv: Option<u64>) -> Option<Vec<Bytes>> {
        let stored = o.metadata_at(rv).concat();
        let served = apimachinery::meta::served_metadata(&self.info, &stored);
        if let (std::borrow::Cow::Borrowed(_), false) = (&served, self.custom) {
            return apimachinery::protobuf::partial_object(&self.protobuf_of(o, rv)?);
        }
        let meta = apimachinery::protobuf::encode(OBJECT_META, &served).ok()?;
        let mut head = Vec::with_capacity(6);
        apimachinery::protobuf::wire::key(&mut head, 1, apimachinery::protobuf::wire::LEN);
        apimachinery::protobuf::wire::varint(&mut head, meta.len() as u64);
        Some(vec![Bytes::from(head), Bytes::from(meta)])
    }

    /// How its objects are written in CBOR, while kache can write them.
    pub fn cbor_schema(&self) -> Option<apimachinery::cbor::Schema> {
        self.encodings.cbor_schema.filter(|_| !self.encodings.cbor_failed.load(Ordering::Relaxed))
    }

    /// `o`'s CBOR map (at `rv` when given), with its `kind` and `apiVersion`
    /// when `typed` (a GET's or a watch event's object, and a custom
    /// resource's list item); `None` when it has no exact CBOR encoding.
    pub fn cbor_map(&self, o: &CachedObject, rv: Option<u64>, typed: bool) -> Option<Vec<Bytes>> {
        let schema = self.cbor_schema()?;
        let at;
        let object = match rv {
            None => o.cbor(schema),
            Some(rv) => {
                at = o.cbor_at(schema, rv);
                at.as_ref()
            }
        };
        let Some(object) = object else {
            if !self.encodings.cbor_failed.swap(true, Ordering::Relaxed) {
                let why = apimachinery::cbor::Object::encode(o.bytes(), schema).err().map(|e| e.to_string()).unwrap_or_default();
                tracing::warn!(resource = %self.info.qualified(), object = %o.key(), %why, "an object has no exact CBOR encoding here; CBOR requests for this resource now pass through");
            }
            return None;
        };
        Some(if typed { object.typed_map(&self.info.api_version(), &self.info.kind) } else { object.map() })
    }

    /// The schema name of its protobuf message, when it speaks protobuf.
    pub fn protobuf_message(&self) -> Option<&str> {
        self.encodings.protobuf.as_deref().filter(|_| self.speaks_protobuf())
    }

    /// Whether the head's objects all have their `binary` encodings made
    /// (protobuf messages, CBOR maps), so a large answer in it (a whole
    /// list, a watch's initial events) costs no encoding. The first time
    /// this is asked after a list (at start, or a re-list) they do not, and
    /// a warm-up starts in the background: every object of the head encoded
    /// once, on half the cores. Large answers in that encoding pass through
    /// until it is done, so a large CBOR read right after a start is as fast
    /// as going direct, not slower (protobuf's are made before the resource
    /// is ready: [`CachedResource::protobuf_ready`]). Objects that arrive
    /// later are encoded as their events are framed. Protobuf costs memory
    /// (about two thirds of the objects' JSON); a protobuf warm-up of
    /// 50,000 pods takes about 2.5 s of CPU.
    pub fn warm(self: &Arc<Self>, encoding: Encoding) -> bool {
        let Some(warm) = warm_index(encoding).map(|i| &self.encodings.warm[i]) else { return true };
        if encoding == Encoding::Protobuf && !self.speaks_protobuf() {
            return true;
        }
        if warm.epoch.load(Ordering::Acquire) == self.store.view().epoch() {
            return true;
        }
        if !warm.running.swap(true, Ordering::AcqRel) {
            let me = self.clone();
            tokio::task::spawn_blocking(move || me.make_ahead(encoding));
        }
        false
    }

    /// Whether its objects' protobuf messages are made, for a resource whose
    /// messages are made ahead (kache speaks protobuf for it, and no memory
    /// budget bounds it): clients that ask protobuf (kubelets, controllers)
    /// are most clients, so they are made as each list (or re-list) is in
    /// ([`Cache::start`](super::Cache::start)), and the resource is ready only
    /// then (`/readyz`): no protobuf read of a starting kache passes through
    /// because they are being made. Once made, the resource stays ready
    /// through re-lists (a Service must not drop kache while it re-lists
    /// after an apiserver restart): the objects a re-list finds unchanged
    /// keep their messages, and a large protobuf read passes through only
    /// for the moments the new ones take. (Asking starts them.) Under a
    /// memory budget they are made when a large read first asks, which
    /// passes through meanwhile.
    pub fn protobuf_ready(self: &Arc<Self>) -> bool {
        let made_once = || warm_index(Encoding::Protobuf).is_some_and(|i| self.encodings.warm[i].made_once.load(Ordering::Acquire));
        !self.protobuf_ahead.load(Ordering::Relaxed) || made_once() || self.warm(Encoding::Protobuf)
    }

    /// A read in `encoding` that passed through while its warm-up runs is
    /// being relayed (called as it leaves and as each of its frames passes):
    /// the warm-up pauses while the relay's bytes flow.
    pub fn relaying(&self, encoding: Encoding) {
        if let Some(warm) = warm_index(encoding).map(|i| &self.encodings.warm[i]) {
            warm.relayed_at.store(millis(), Ordering::Relaxed);
        }
    }

    fn make_ahead(&self, encoding: Encoding) {
        let started = Instant::now();
        let view = self.store.view();
        let objects: Vec<&Arc<CachedObject>> = view.head().iter().collect();
        // Half the cores: the read that asked meanwhile passes through, and its relay needs the rest.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().div_ceil(2));
        let Some(warm) = warm_index(encoding).map(|i| &self.encodings.warm[i]) else { return };
        std::thread::scope(|s| {
            for chunk in objects.chunks(objects.len().div_ceil(threads).max(1)) {
                s.spawn(move || {
                    let mut paused = Duration::ZERO;
                    for (i, o) in chunk.iter().enumerate() {
                        if i % YIELD_EVERY == 0 {
                            warm.yield_to_relays(&mut paused);
                        }
                        match encoding {
                            Encoding::Protobuf => drop(self.protobuf_of(o, None)),
                            Encoding::Cbor => drop(self.cbor_map(o, None, false)),
                            Encoding::Json | Encoding::Yaml => {}
                        }
                    }
                });
            }
        });
        warm.epoch.store(view.epoch(), Ordering::Release);
        warm.made_once.store(true, Ordering::Release);
        warm.running.store(false, Ordering::Release);
        tracing::info!(resource = %self.info.qualified(), objects = objects.len(), took = ?started.elapsed(), "{} made ahead of large reads", encoding.name());
    }

    /// `o`'s protobuf message (at `rv` when given); `None` when it has none,
    /// which turns protobuf off for the resource from then on.
    pub fn protobuf_of(&self, o: &CachedObject, rv: Option<u64>) -> Option<Bytes> {
        let message = self.protobuf_message()?;
        let encoded = match rv {
            None => o.protobuf(message).cloned(),
            Some(rv) => o.protobuf_at(message, rv),
        };
        if encoded.is_none() && !self.encodings.protobuf_failed.swap(true, Ordering::Relaxed) {
            let why = apimachinery::protobuf::encode(message, o.bytes()).err().map(|e| e.to_string()).unwrap_or_default();
            tracing::warn!(resource = %self.info.qualified(), object = %o.key(), %why, "an object has no protobuf encoding here; protobuf requests for this resource now pass through");
        }
        encoded
    }

    /// `o` as the apiserver writes a lone object (a GET, a watch event):
    /// with `kind` and `apiVersion` first. Stored list items of built-in
    /// resources lack them; the parts concatenated are the object (a stored
    /// object always has `metadata`, so a field follows the prefix's comma).
    pub fn lone(&self, o: &CachedObject) -> Vec<Bytes> {
        self.with_type(vec![o.bytes().clone()])
    }

    /// [`CachedResource::lone`] with `metadata.resourceVersion` set to `rv`.
    pub fn lone_at(&self, o: &CachedObject, rv: u64) -> Vec<Bytes> {
        self.with_type(o.at_revision(rv).to_vec())
    }

    /// `parts` (an object in list-item form) with the type spliced in front.
    fn with_type(&self, mut parts: Vec<Bytes>) -> Vec<Bytes> {
        let Some(first) = parts.first_mut() else { return parts };
        if carries_type(first) || !first.starts_with(b"{") {
            return parts;
        }
        *first = first.slice(1..);
        parts.insert(0, self.encodings.type_prefix.clone());
        parts
    }
}

/// The warm-up slot of an encoding made per object and kept with it
/// (protobuf messages, CBOR maps); `None` for JSON and YAML, written from
/// the stored bytes as they are.
fn warm_index(encoding: Encoding) -> Option<usize> {
    match encoding {
        Encoding::Protobuf => Some(0),
        Encoding::Cbor => Some(1),
        Encoding::Json | Encoding::Yaml => None,
    }
}

/// A warm-up looks for relays to yield to every this many objects (about a millisecond of work).
const YIELD_EVERY: usize = 32;

/// A relay counts as flowing this long after its last frame: the
/// apiserver takes a few hundred milliseconds to gather a large list
/// before its first byte.
const RELAY_FLOWING: Duration = Duration::from_millis(500);

/// The most a warm-up thread pauses for relays in all: it then finishes,
/// so large reads stop passing through even while relays keep flowing.
const MOST_PAUSED: Duration = Duration::from_secs(30);

/// How long a paused warm-up sleeps before it looks again.
const PAUSE: Duration = Duration::from_millis(10);

/// Where the warm-up of one kept encoding stands.
#[derive(Debug)]
struct Warm {
    /// The store epoch whose head has every object's encoding made.
    epoch: AtomicU64,
    /// Set while a warm-up runs.
    running: AtomicBool,
    /// Set once a warm-up has finished (for any epoch).
    made_once: AtomicBool,
    /// When ([`millis`]) a relay of a read this warm-up made pass through last moved bytes (0: never).
    relayed_at: AtomicU64,
}

impl Default for Warm {
    fn default() -> Self {
        Warm {
            epoch: AtomicU64::new(u64::MAX),
            running: AtomicBool::new(false),
            made_once: AtomicBool::new(false),
            relayed_at: AtomicU64::new(0),
        }
    }
}

impl Warm {
    /// Sleeps while a relay flows, until `paused` (this thread's pauses so far) reaches [`MOST_PAUSED`]:
    /// on a small machine the warm-up would take the relay's CPU and make
    /// the read it passed through slower than asking the apiserver directly.
    fn yield_to_relays(&self, paused: &mut Duration) {
        let flowing = || {
            let at = self.relayed_at.load(Ordering::Relaxed);
            at > 0 && millis().saturating_sub(at) < RELAY_FLOWING.as_millis() as u64
        };
        while *paused < MOST_PAUSED && flowing() {
            std::thread::sleep(PAUSE);
            *paused += PAUSE;
        }
    }
}

/// Milliseconds on a monotonic clock, from 1 at its first reading.
fn millis() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(|| Instant::now() - Duration::from_millis(1)).elapsed().as_millis() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warm_up_pauses_while_a_relay_flows_and_not_for_ever() {
        let warm = Warm::default();
        let mut paused = Duration::ZERO;
        warm.yield_to_relays(&mut paused);
        assert_eq!(paused, Duration::ZERO, "no relay: no pause");
        warm.relayed_at.store(millis(), Ordering::Relaxed);
        warm.yield_to_relays(&mut paused);
        assert!(paused >= PAUSE, "a relay's bytes just moved: the warm-up paused");
        let mut most = MOST_PAUSED;
        warm.relayed_at.store(millis(), Ordering::Relaxed);
        warm.yield_to_relays(&mut most);
        assert_eq!(most, MOST_PAUSED, "a thread that paused its most goes on");
    }
}
