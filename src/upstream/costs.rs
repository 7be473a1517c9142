//! What reads cost, as kache observes them, for the choice between
//! answering a consistent read from memory (once proven fresh) and passing
//! it through (`super::plan`): the apiserver's latency (a consistent
//! read's round trip, measured by the freshness probes); what consistent
//! reads took upstream beyond that round trip — its work before the head
//! (gathering, converting a Table) and its transfer — per byte of the
//! objects read, by [`Class`]; the apiserver's document throughput (from
//! each answer's head to its end: reflector pages, relayed lists), which
//! stands in for a class not measured yet; and what reads from memory took
//! kache to make (the time spent making them — the socket's copy not
//! included — not the client's reading, which either source waits for alike),
//! per byte of the objects read, by class. The reflector's initial lists
//! are the first measurement of upstream's throughput.
//!
//! None of these is a constant of the apiserver's. A figure not yet
//! measured is unknown. Upstream's unknown cost is taken as nothing, which
//! makes no case for memory: when in doubt, pass through. kache's own is
//! taken as nothing too until its first read from memory measures it — it
//! is an order of magnitude below the apiserver's in every benchmark
//! (`loadtest lists`), and a first consistent read must be able to choose
//! memory for it ever to be measured. Each figure is a moving average
//! weighing recent observations most ([`WEIGHT`]); rates are weighted by
//! bytes, over reads large enough for the work, not the round trip, to
//! dominate ([`MIN_SAMPLE`]).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use apimachinery::negotiate::{Encoding, Negotiated, Shape};
use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use parking_lot::Mutex;

/// The weight of each new observation in a moving average, once it has
/// had as many: the last ~10 observations count.
const WEIGHT: f64 = 0.2;

/// A body shorter than this says more about the round trip than the
/// throughput (a page of 500 pods is 2.3 MB; a probe's is a few hundred bytes).
pub(crate) const MIN_SAMPLE: u64 = 256 * 1024;

/// A moving average; its first observations are averaged evenly (the
/// first replaces what was assumed before it), later ones with [`WEIGHT`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Average {
    value: f64,
    n: u32,
}

impl Average {
    /// Takes in `v`.
    pub fn record(&mut self, v: f64) {
        self.n = self.n.saturating_add(1);
        self.value += (v - self.value) * WEIGHT.max(1.0 / f64::from(self.n));
    }

    /// The average, once anything was recorded.
    pub fn get(&self) -> Option<f64> {
        (self.n > 0).then_some(self.value)
    }
}

/// Bytes a second, from (bytes, seconds) samples weighted by bytes: the
/// ratio of the averages.
#[derive(Debug, Default)]
struct Rate(Mutex<(Average, Average)>);

impl Rate {
    fn record(&self, bytes: u64, took: Duration) {
        if bytes < MIN_SAMPLE || took.is_zero() {
            return;
        }
        let mut r = self.0.lock();
        r.0.record(bytes as f64);
        r.1.record(took.as_secs_f64());
    }

    fn per_second(&self) -> Option<f64> {
        let r = self.0.lock();
        Some(r.0.get()? / r.1.get()?)
    }

    fn time(&self, bytes: u64) -> Option<Duration> {
        self.per_second().map(|r| Duration::from_secs_f64(bytes as f64 / r))
    }
}

/// What a streaming list costs the apiserver, in lists of the same objects:
/// it encodes and frames each object as its own watch event. Measured on
/// kube-apiserver 1.36.2 with 50,000 pods (JSON): 7.2 s for the streaming
/// list against 3.4 s for the list.
pub(crate) const STREAM_COST: f64 = 2.0;

/// What a read holds and how it is written, as far as its cost goes: the
/// apiserver converts a Table row by row before it answers, writes
/// metadata-only answers a fraction of the objects' size, encodes protobuf
/// and CBOR apart from JSON, and frames a streaming list object by object;
/// kache's costs differ the same ways. Each class is measured apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Class {
    shape: usize,
    stream: bool,
}

impl Class {
    /// The class of a read negotiated as `negotiated` (`stream`: a watch's initial events).
    pub fn of(negotiated: &Negotiated, stream: bool) -> Class {
        let shape = match (negotiated.shape, negotiated.encoding) {
            (Shape::Table { .. }, _) => 3,
            (Shape::Metadata | Shape::MetadataList, _) => 2,
            (Shape::Objects, Encoding::Protobuf | Encoding::Cbor) => 1,
            (Shape::Objects, Encoding::Json | Encoding::Yaml) => 0,
        };
        Class { shape, stream }
    }

    /// Every class's index is below this.
    const COUNT: usize = 8;

    fn index(self) -> usize {
        2 * self.shape + usize::from(self.stream)
    }
}

/// What one measured body tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// A document the apiserver sent: its throughput from head to end, by body bytes.
    Transfer,
    /// A consistent read the apiserver answered, of the objects' `bytes` in
    /// `class`: from sending it to the body's end, less a round trip (its
    /// work before the head, which a round trip does not show, and its transfer).
    UpstreamRead(Class, u64),
    /// A read kache answered from memory, of the objects' `bytes` in
    /// `class`: the time spent making it.
    MemoryRead(Class, u64),
}

/// The measured costs, shared by everything that reads or answers.
#[derive(Debug, Default)]
pub struct Costs {
    latency: Mutex<Average>,
    /// Upstream's transfer, by body bytes.
    transfer: Rate,
    /// Consistent reads upstream, by the objects' bytes, by [`Class`].
    upstream: [Rate; Class::COUNT],
    /// Reads from memory, by the objects' bytes, by [`Class`].
    memory: [Rate; Class::COUNT],
}

impl Costs {
    /// A consistent read's round trip to the apiserver took `took`.
    pub(crate) fn record_latency(&self, took: Duration) {
        self.latency.lock().record(took.as_secs_f64());
    }

    /// The apiserver's consistent-read round trip, if measured.
    pub fn latency(&self) -> Option<Duration> {
        self.latency.lock().get().map(Duration::from_secs_f64)
    }

    /// The apiserver's document throughput, bytes a second, if measured.
    pub(crate) fn upstream_throughput(&self) -> Option<f64> {
        self.transfer.per_second()
    }

    /// kache's throughput on reads of whole objects in JSON from memory, bytes a second, if measured.
    pub(crate) fn memory_throughput(&self) -> Option<f64> {
        self.memory[0].per_second()
    }

    /// How long upstream takes beyond a round trip for a consistent read of
    /// the objects' `bytes` in `class`: as such reads took; until one was
    /// measured, as the list of the same class took (a streaming list:
    /// [`STREAM_COST`] times it), else the transfer of `bytes` (nothing,
    /// unmeasured) — no case for memory out of what was not measured.
    pub(crate) fn upstream_read(&self, class: Class, bytes: u64) -> Duration {
        if let Some(took) = self.upstream[class.index()].time(bytes) {
            return took;
        }
        let list = Class { stream: false, ..class };
        let took = self.upstream[list.index()].time(bytes).or_else(|| self.transfer.time(bytes)).unwrap_or_default();
        if class.stream { took.mul_f64(STREAM_COST) } else { took }
    }

    /// How long kache takes to make a read of the objects' `bytes` in
    /// `class` from memory (nothing, unmeasured: a first read must be able
    /// to choose memory for it to be measured).
    pub(crate) fn memory_read(&self, class: Class, bytes: u64) -> Duration {
        self.memory[class.index()].time(bytes).unwrap_or_default()
    }

    fn record(&self, measure: Measure, bytes: u64, took: Duration) {
        match measure {
            Measure::Transfer => self.transfer.record(bytes, took),
            Measure::UpstreamRead(class, read) => {
                self.upstream[class.index()].record(read, took.saturating_sub(self.latency().unwrap_or_default()))
            }
            Measure::MemoryRead(class, read) => self.memory[class.index()].record(read, took),
        }
    }
}

/// What one resource's small consistent lists took upstream beyond a round
/// trip: a cost their bytes do not show. kube-apiserver's cache reads a
/// page in time that grows with the collection, not the page (1.36.2 with
/// 50,000 pods: a consistent page of 50 took 15 ms beyond the round trip,
/// which its 150 kB at the measured rate put at 4 ms, so it went upstream
/// though memory answered it in 0.3 ms after a 1.2 ms probe). A list's
/// upstream cost is at least this ([`SmallLists::took`]); bodies of
/// [`MIN_SAMPLE`] or more measure the rate instead.
#[derive(Debug, Default)]
pub struct SmallLists(Mutex<Average>);

impl SmallLists {
    fn record(&self, bytes: u64, beyond: Duration) {
        if bytes < MIN_SAMPLE {
            self.0.lock().record(beyond.as_secs_f64());
        }
    }

    /// What a small list took upstream beyond a round trip, recently (nothing, unmeasured).
    pub fn took(&self) -> Duration {
        self.0.lock().get().map_or(Duration::ZERO, Duration::from_secs_f64)
    }
}

/// Measures one body for [`Costs`]: upstream's from its head to its end
/// (kache reads as fast as the apiserver sends), or from the request's
/// sending for a consistent read; kache's own by the time spent making it,
/// not the time the client took to read it — a slow client reads either
/// source's answer as slowly, so only the making tells the sources apart.
#[derive(Debug)]
pub struct Meter {
    costs: Arc<Costs>,
    measure: Measure,
    started: Instant,
    /// Time spent in the body's `poll_frame` (kache's side).
    busy: Duration,
    bytes: u64,
    /// The resource's small lists, when this is a consistent list upstream.
    small: Option<Arc<SmallLists>>,
}

impl Meter {
    /// A body that measures `measure`, timed from `started` (an upstream
    /// read: when it was sent; a transfer: when its head came).
    pub fn new(costs: Arc<Costs>, measure: Measure, started: Instant) -> Meter {
        Meter { costs, measure, started, busy: Duration::ZERO, bytes: 0, small: None }
    }

    /// A consistent list upstream also measures its resource's `small` lists.
    pub(crate) fn of_list(self, small: Arc<SmallLists>) -> Meter {
        Meter { small: Some(small), ..self }
    }

    /// Whether it times its body's polls (kache's own making).
    fn polled(&self) -> bool {
        matches!(self.measure, Measure::MemoryRead(..))
    }

    /// `n` more bytes went by.
    pub fn add(&mut self, n: usize) {
        self.bytes += n as u64;
    }

    /// The body ended: what it measures is recorded (a body that failed or
    /// was dropped measures nothing, so is never finished).
    pub fn finish(self) {
        let took = if self.polled() { self.busy } else { self.started.elapsed() };
        if let (Some(small), Measure::UpstreamRead(_, read)) = (&self.small, self.measure) {
            small.record(read, took.saturating_sub(self.costs.latency().unwrap_or_default()));
        }
        self.costs.record(self.measure, self.bytes, took);
    }
}

/// A body measured by a [`Meter`] (none: passed on as it is).
#[derive(Debug)]
pub struct Metered<B> {
    inner: B,
    meter: Option<Meter>,
}

impl<B> Metered<B> {
    /// `inner`, measured by `meter` if any.
    pub fn new(inner: B, meter: Option<Meter>) -> Metered<B> {
        Metered { inner, meter }
    }
}

impl<B: Body<Data = Bytes> + Unpin> Body for Metered<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        // Only kache's own side is measured by its polls (upstream's by the clock).
        let polled = self.meter.as_ref().is_some_and(Meter::polled).then(Instant::now);
        let frame = Pin::new(&mut self.inner).poll_frame(cx);
        if let (Some(meter), Some(polled)) = (&mut self.meter, polled) {
            meter.busy += polled.elapsed();
        }
        let frame = ready!(frame);
        match &frame {
            Some(Ok(f)) => {
                if let (Some(meter), Some(data)) = (&mut self.meter, f.data_ref()) {
                    meter.add(data.len());
                }
            }
            None => {
                if let Some(meter) = self.meter.take() {
                    meter.finish();
                }
            }
            Some(Err(_)) => self.meter = None,
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmeasured_reads_take_nothing_then_what_their_class_took() {
        let c = Costs::default();
        let json = Class::of(&Negotiated::default(), false);
        let table = Class { shape: 3, stream: false };
        assert_eq!((c.upstream_read(json, 1 << 30), c.memory_read(json, 1 << 30), c.latency()), (Duration::ZERO, Duration::ZERO, None));
        c.record(Measure::Transfer, 80_000_000, Duration::from_secs(1));
        assert_eq!(c.upstream_read(table, 230_000_000), Duration::from_secs_f64(2.875), "a class not measured: the transfer");
        // A Table page of 500 pods (2.3 MB of objects) took upstream 26 ms beyond a round trip of 1 ms.
        c.record_latency(Duration::from_millis(1));
        c.record(Measure::UpstreamRead(table, 2_300_000), 60_000, Duration::from_millis(27));
        assert_eq!(c.upstream_read(table, 2_300_000), Duration::from_millis(26));
        assert_eq!(c.upstream_read(json, 230_000_000), Duration::from_secs_f64(2.875), "each class apart");
        let stream = Class { shape: 0, stream: true };
        assert_eq!(c.upstream_read(stream, 230_000_000), Duration::from_secs_f64(5.75), "a streaming list unmeasured: twice a list");
        c.record(Measure::UpstreamRead(stream, 230_000_000), 230_000_000, Duration::from_secs(4) + Duration::from_millis(1));
        assert_eq!(c.upstream_read(stream, 230_000_000), Duration::from_secs(4), "measured: what it took");
        c.record(Measure::MemoryRead(json, 800_000_000), 800_000_000, Duration::from_secs(1));
        assert!(c.memory_read(json, 230_000_000) < Duration::from_millis(300));
        assert_eq!(c.memory_read(table, 230_000_000), Duration::ZERO);
    }

    #[test]
    fn small_lists_measure_what_their_bytes_do_not_show() {
        let costs = Arc::new(Costs::default());
        costs.record_latency(Duration::from_millis(1));
        let small = Arc::new(SmallLists::default());
        assert_eq!(small.took(), Duration::ZERO, "unmeasured: nothing");
        let json = Class::of(&Negotiated::default(), false);
        let sent = |ms| Instant::now().checked_sub(Duration::from_millis(ms)).expect("a past instant");
        let list = |bytes, ms| Meter::new(costs.clone(), Measure::UpstreamRead(json, bytes), sent(ms)).of_list(small.clone()).finish();
        // A consistent page of 50 pods (150 kB of objects) took 16 ms: 15 beyond the round trip.
        list(150_000, 16);
        let page = small.took();
        // At least 15 ms; more only by the time this test took between sending and ending (a busy machine's).
        assert!(page >= Duration::from_millis(15) && page < Duration::from_millis(400), "{page:?}");
        assert!(costs.upstream_read(json, 150_000).is_zero(), "too small to measure the rate");
        // A large list measures the rate, not the small lists; a GET neither.
        list(2_300_000, 500);
        Meter::new(costs.clone(), Measure::UpstreamRead(json, 3_000), sent(900)).finish();
        assert_eq!(small.took(), page);
        assert!(costs.upstream_read(json, 2_300_000) >= Duration::from_millis(499));
    }

    #[test]
    fn an_average_starts_from_its_first_observations_then_follows_recent_ones() {
        let mut a = Average::default();
        assert_eq!(a.get(), None);
        a.record(1.0);
        assert_eq!(a.get(), Some(1.0), "the first observation replaces the assumption");
        a.record(0.0);
        assert_eq!(a.get(), Some(0.5));
        for _ in 0..40 {
            a.record(0.0);
        }
        assert!(a.get().is_some_and(|v| v < 0.01));
    }

    #[test]
    fn throughput_follows_recent_bodies_weighted_by_bytes_and_ignores_small_ones() {
        let r = Rate::default();
        r.record(1_000, Duration::from_secs(1));
        assert_eq!(r.per_second(), None, "a small body measures the round trip, not the rate");
        r.record(10_000_000, Duration::from_secs(1));
        for _ in 0..30 {
            r.record(40_000_000, Duration::from_secs(1));
        }
        let rate = r.per_second().expect("measured");
        assert!((rate - 40e6).abs() < 1e6, "{rate}");
    }
}
