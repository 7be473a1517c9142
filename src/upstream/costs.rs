//! What reads cost, as kache observes them, for the choice between
//! answering a consistent read from memory (once proven fresh) and passing
//! it through ([`super::freshness`]): the apiserver's latency (a consistent
//! read's round trip, measured by the freshness probes), its throughput
//! (bytes a second of the document bodies kache reads from it or relays:
//! list pages, passed-through lists — from each answer's head to its end,
//! so a round trip both roads pay is not taken for a slow transfer) and
//! kache's own throughput making lists from memory (the time spent making
//! them — the socket's copy not included — not the client's reading,
//! which either road waits for alike). The reflector's
//! initial lists are the first measurement of upstream's.
//!
//! None of these is a constant of the apiserver's. A figure not yet
//! measured is unknown. Upstream's unknown transfer time is taken as
//! nothing, which makes no case for memory: when in doubt, pass through.
//! kache's own is taken as nothing too until its first list from memory
//! measures it — it is an order of magnitude below the apiserver's in
//! every benchmark (`loadtest lists`), and a first consistent read must be
//! able to choose memory for it ever to be measured. Each figure is a moving
//! average weighing recent observations most ([`WEIGHT`]); throughputs are
//! weighted by bytes, over bodies large enough for the transfer, not the
//! round trip, to dominate ([`MIN_SAMPLE`]).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use parking_lot::Mutex;

/// The weight of each new observation in a moving average, once it has
/// had as many: the last ~10 observations count.
const WEIGHT: f64 = 0.2;

/// A body shorter than this says more about the round trip than the
/// throughput (a page of 500 pods is 2.3 MB; a probe's is a few hundred bytes).
pub const MIN_SAMPLE: u64 = 256 * 1024;

/// A moving average; its first observations are averaged evenly (the
/// first replaces what was assumed before it), later ones with [`WEIGHT`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Average {
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

/// Which side a body came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The apiserver's (read or relayed by kache).
    Upstream,
    /// kache's memory.
    Memory,
}

/// The measured costs, shared by everything that reads or answers.
#[derive(Debug, Default)]
pub struct Costs {
    latency: Mutex<Average>,
    upstream: Rate,
    memory: Rate,
}

impl Costs {
    /// A consistent read's round trip to the apiserver took `took`.
    pub fn record_latency(&self, took: Duration) {
        self.latency.lock().record(took.as_secs_f64());
    }

    /// The apiserver's consistent-read round trip, if measured.
    pub fn latency(&self) -> Option<Duration> {
        self.latency.lock().get().map(Duration::from_secs_f64)
    }

    /// Bytes a second from `side`, if measured.
    pub fn throughput(&self, side: Side) -> Option<f64> {
        self.rate(side).per_second()
    }

    fn rate(&self, side: Side) -> &Rate {
        match side {
            Side::Upstream => &self.upstream,
            Side::Memory => &self.memory,
        }
    }

    /// How long upstream takes to send `bytes` after its first byte (nothing, unmeasured).
    pub fn upstream_transfer(&self, bytes: u64) -> Duration {
        self.upstream.time(bytes).unwrap_or_default()
    }

    /// How long kache takes to send `bytes` from memory (nothing, unmeasured).
    pub fn memory_transfer(&self, bytes: u64) -> Duration {
        self.memory.time(bytes).unwrap_or_default()
    }
}

/// Measures one body for [`Costs`]: upstream's from its head to its end
/// (kache reads as fast as the apiserver sends); kache's own by the time
/// spent making it, not the time the client took to read it — a slow
/// client reads either road's answer as slowly, so only the making tells
/// the roads apart.
#[derive(Debug)]
pub struct Meter {
    costs: Arc<Costs>,
    side: Side,
    started: Instant,
    /// Time spent in the body's `poll_frame` (kache's side).
    busy: Duration,
    bytes: u64,
}

impl Meter {
    /// A body from `side` whose head is out now.
    pub fn new(costs: Arc<Costs>, side: Side) -> Meter {
        Meter { costs, side, started: Instant::now(), busy: Duration::ZERO, bytes: 0 }
    }

    /// `n` more bytes went by.
    pub fn add(&mut self, n: usize) {
        self.bytes += n as u64;
    }

    /// The body ended: its throughput is recorded (a body that failed or
    /// was dropped measures nothing, so is never finished).
    pub fn finish(self) {
        let took = match self.side {
            Side::Upstream => self.started.elapsed(),
            Side::Memory => self.busy,
        };
        self.costs.rate(self.side).record(self.bytes, took);
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
        let polled = self.meter.as_ref().is_some_and(|m| m.side == Side::Memory).then(Instant::now);
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
    fn unmeasured_transfers_take_nothing() {
        let c = Costs::default();
        assert_eq!((c.upstream_transfer(1 << 30), c.memory_transfer(1 << 30), c.latency()), (Duration::ZERO, Duration::ZERO, None));
        c.upstream.record(80_000_000, Duration::from_secs(1));
        assert_eq!(c.upstream_transfer(230_000_000), Duration::from_secs_f64(2.875));
        c.memory.record(800_000_000, Duration::from_secs(1));
        assert!(c.memory_transfer(230_000_000) < Duration::from_millis(300));
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
