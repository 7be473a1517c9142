//! Slowness on request, as a real apiserver under load is slow: list bodies
//! written no faster than a byte rate (`--list-mb-per-second`), and
//! consistent reads answered after a latency (`--consistent-read-latency-ms`).
//! Both are off by default: the simulator answers as fast as it can.
//!
//! Invariant of a [`Pace`]: the bytes it releases, counted from its first
//! release, never run ahead of its rate — byte `n` goes out no earlier than
//! `n / rate` after the first byte was asked for — and it does not fall
//! behind for having slept late: what is already due goes out at once.

use std::time::Duration;

use tokio::time::Instant;

/// How slow the simulator answers reads. The default is not slow at all.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Slowness {
    /// List bodies (JSON, protobuf, Table, metadata-only; whole or a page;
    /// also the initial events of a watch) go out at most this many
    /// megabytes (10^6 bytes) per second, a write at a time; 0: unpaced.
    /// The apiserver measured 230 MB of pods in 2.9 s: about 80.
    pub list_mb_per_second: f64,
    /// Every consistent read (a list or GET without `resourceVersion`, a
    /// watch with `sendInitialEvents` and no `resourceVersion`) waits this
    /// long before it is read, as the apiserver's etcd quorum read makes it
    /// wait. The apiserver measured a consistent GET at 5 ms.
    pub consistent_read_latency: Duration,
}

/// A [`Slowness`] that cannot be served.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum SlownessError {
    /// The list rate is negative or not a number.
    #[error("list-mb-per-second must be a number of megabytes per second >= 0, got {0}")]
    ListRate(f64),
}

impl Slowness {
    /// Checks the values a flag or the `/_sim/slow` switch gave.
    pub fn validate(&self) -> Result<(), SlownessError> {
        let rate = self.list_mb_per_second;
        if rate.is_finite() && rate >= 0.0 { Ok(()) } else { Err(SlownessError::ListRate(rate)) }
    }

    /// The clock of one list body, or `None` when lists are not paced.
    pub fn list_pace(&self) -> Option<Pace> {
        (self.list_mb_per_second > 0.0).then_some(Pace { bytes_per_second: self.list_mb_per_second * 1e6, start: None, sent: 0 })
    }
}

/// The release times of one body's bytes at a byte rate.
#[derive(Debug)]
pub struct Pace {
    bytes_per_second: f64,
    /// When the first bytes were asked for.
    start: Option<Instant>,
    /// Bytes released so far.
    sent: u64,
}

impl Pace {
    /// Counts `n` more bytes and returns when they may go out: once every
    /// byte so far, these included, has had its share of time since the first.
    pub fn due(&mut self, n: usize) -> Instant {
        let start = *self.start.get_or_insert_with(Instant::now);
        self.sent += n as u64;
        start + Duration::from_secs_f64(self.sent as f64 / self.bytes_per_second)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pace_releases_bytes_no_faster_than_its_rate_counted_from_the_first() {
        let slow = Slowness { list_mb_per_second: 1.0, ..Slowness::default() };
        let mut pace = slow.list_pace().expect("paced");
        let first = pace.due(500_000);
        let start = pace.start.expect("started");
        assert_eq!(first - start, Duration::from_millis(500));
        assert_eq!(pace.due(250_000) - start, Duration::from_millis(750));
    }

    #[test]
    fn no_rate_means_no_pace_and_a_bad_rate_is_refused() {
        assert!(Slowness::default().list_pace().is_none());
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            assert!(Slowness { list_mb_per_second: bad, ..Slowness::default() }.validate().is_err(), "{bad}");
        }
    }
}
