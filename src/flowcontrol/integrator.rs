//! A time-weighted integrator of one changing value, ported from
//! `k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/integrator.go`: what
//! a level's seat demand averaged, varied by and peaked at over a period,
//! which borrowing reads and resets every adjustment.
//!
//! Invariant: each value counts for the time it was held, measured by the
//! instants the caller passes (never read from a clock here).

use std::time::Instant;

/// What a period of the value was (`IntegratorResults`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Results {
    /// Seconds integrated.
    pub duration: f64,
    /// Time-weighted average (NaN over no time).
    pub average: f64,
    /// Time-weighted standard deviation (NaN over no time, or when rounding makes the variance negative).
    pub deviation: f64,
    pub min: f64,
    pub max: f64,
}

/// Integrates `x` over time.
#[derive(Debug, Clone)]
pub(crate) struct Integrator {
    last: Instant,
    x: f64,
    /// ∫dt, ∫x dt, ∫x² dt (`Moments`).
    moments: (f64, f64, f64),
    min: f64,
    max: f64,
}

impl Integrator {
    pub fn new(now: Instant) -> Integrator {
        Integrator { last: now, x: 0.0, moments: (0.0, 0.0, 0.0), min: 0.0, max: 0.0 }
    }

    /// The value is `x` from `now` on.
    pub fn set(&mut self, x: f64, now: Instant) {
        self.update(now);
        self.x = x;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }

    fn update(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.moments.0 += dt;
        self.moments.1 += self.x * dt;
        self.moments.2 += self.x * self.x * dt;
    }

    /// The period until `now`, then a new one from the current value.
    pub fn reset(&mut self, now: Instant) -> Results {
        self.update(now);
        let (t, ix, ixx) = self.moments;
        let (average, deviation) = match t > 0.0 {
            false => (f64::NAN, f64::NAN),
            true => {
                let avg = ix / t;
                let variance = ixx / t - avg * avg;
                (avg, if variance >= 0.0 { variance.sqrt() } else { f64::NAN })
            }
        };
        let results = Results { duration: t, average, deviation, min: self.min, max: self.max };
        self.moments = (0.0, 0.0, 0.0);
        self.min = self.x;
        self.max = self.x;
        results
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    // `TestIntegrator` of integrator_test.go.
    #[test]
    fn values_count_for_the_time_they_were_held() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut igr = Integrator::new(t0);
        igr.set(3.0, at(0));
        let r = igr.reset(at(1));
        assert_eq!((r.duration, r.average, r.deviation, r.min, r.max), (1.0, 3.0, 0.0, 0.0, 3.0));
        igr.set(2.0, at(2));
        igr.set(4.0, at(3));
        let r = igr.reset(at(4));
        // 3 for 1 s, 2 for 1 s, 4 for 1 s: mean 3, deviation sqrt(2/3).
        assert_eq!((r.duration, r.average, r.min, r.max), (3.0, 3.0, 2.0, 4.0));
        assert!((r.deviation - (2.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert!(igr.reset(at(4)).average.is_nan(), "no time, no average");
    }
}
