//! The concurrency allocation problem borrowing solves, ported line for
//! line from `k8s.io/apiserver/pkg/util/flowcontrol/conc_alloc.go`: share
//! `required_sum` seats among classes in proportion to their targets, each
//! held between its bounds.
//!
//! Invariant (`computeConcurrencyAllocation`): the allocations sum to the
//! required sum, and each is either `fair_prop × target` within its bounds,
//! or the bound that proportion would cross.

/// One class to allocate to (`allocProblemItem`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Item {
    pub target: f64,
    pub lower: f64,
    pub upper: f64,
}

/// A target below this counts as this (`MinTarget`).
pub(crate) const MIN_TARGET: f64 = 0.001;
const EPSILON: f64 = 0.0000001;

/// Why an allocation problem has no answer (`computeConcurrencyAllocation`'s errors, in its words).
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub(crate) enum AllocError {
    /// A class's lower bound is below zero.
    #[error("lower bound {idx} is {lower} but negative lower bounds are not allowed")]
    NegativeLower { idx: usize, lower: f64 },
    /// A class's target is below its lower bound.
    #[error("target {idx} is {target}, which is below its lower bound of {lower}")]
    TargetBelowLower { idx: usize, target: f64, lower: f64 },
    /// A class's upper bound is below its lower bound.
    #[error("upper bound {idx} is {upper} but should not be less than the lower bound {lower}")]
    UpperBelowLower { idx: usize, upper: f64, lower: f64 },
    /// Some lower bound exceeds its target (`excess` is the largest ratio less one).
    #[error("lbRange.max-1={excess}, which is impossible because lbRange.max can not be greater than 1")]
    LowerOverTarget { excess: f64 },
    /// The lower bounds need more than the required sum.
    #[error("lower bounds sum to {low_sum}, which is higher than the required sum of {required_sum}")]
    LowerSumTooHigh { low_sum: f64, required_sum: usize },
    /// The upper bounds reach less than the required sum.
    #[error("upper bounds sum to {high_sum}, which is lower than the required sum of {required_sum}")]
    UpperSumTooLow { high_sum: f64, required_sum: usize },
    /// The bounds ran out before the sum was reached (a bug, as the Go code says).
    #[error("impossible: ran out of bounds to consider in bound-constrained problem")]
    OutOfBounds,
}

/// `computeConcurrencyAllocation`: each class's allocation and the fair proportion.
pub fn allocate(required_sum: usize, classes: &[Item]) -> Result<(Vec<f64>, f64), AllocError> {
    let required = required_sum as f64;
    let (mut low_sum, mut high_sum, mut target_sum) = (0.0, 0.0, 0.0);
    let (mut ub_min, mut ub_max, mut lb_min, mut lb_max) = (f32::MAX as f64, 0.0f64, f32::MAX as f64, 0.0f64);
    let mut relative = Vec::with_capacity(classes.len());
    for (idx, item) in classes.iter().enumerate() {
        if item.lower < 0.0 {
            return Err(AllocError::NegativeLower { idx, lower: item.lower });
        }
        if item.target < item.lower {
            return Err(AllocError::TargetBelowLower { idx, target: item.target, lower: item.lower });
        }
        if item.upper < item.lower {
            return Err(AllocError::UpperBelowLower { idx, upper: item.upper, lower: item.lower });
        }
        let target = item.target.max(MIN_TARGET);
        low_sum += item.lower;
        high_sum += item.upper;
        target_sum += target;
        let (rl, ru) = (item.lower / target, item.upper / target);
        (ub_min, ub_max) = (ub_min.min(ru), ub_max.max(ru));
        (lb_min, lb_max) = (lb_min.min(rl), lb_max.max(rl));
        relative.push((target, rl, ru));
    }
    if lb_max > 1.0 {
        return Err(AllocError::LowerOverTarget { excess: lb_max - 1.0 });
    }
    if low_sum - required > EPSILON {
        return Err(AllocError::LowerSumTooHigh { low_sum, required_sum });
    }
    if required - high_sum > EPSILON {
        return Err(AllocError::UpperSumTooLow { high_sum, required_sum });
    }
    if required_sum == 0 {
        return Ok((vec![0.0; classes.len()], 0.0));
    }
    if low_sum - required > -EPSILON {
        return Ok((classes.iter().map(|c| c.lower).collect(), lb_min));
    }
    if required - high_sum > -EPSILON {
        return Ok((classes.iter().map(|c| c.upper).collect(), ub_max));
    }
    let mut fair_prop = required / target_sum;
    if lb_max <= fair_prop && fair_prop <= ub_min {
        return Ok((relative.iter().map(|(target, _, _)| target * fair_prop).collect(), fair_prop));
    }
    // Some bounds matter: raise fair_prop bound by bound, from the lowest.
    // A bound is 2×index (lower) or 2×index + 1 (upper), sorted ascending.
    let bound = |packed: usize| -> (f64, usize, bool) {
        let (idx, lower) = (packed / 2, packed.is_multiple_of(2));
        (if lower { relative[idx].1 } else { relative[idx].2 }, idx, lower)
    };
    let mut ascending: Vec<usize> = (0..classes.len() * 2).collect();
    ascending.sort_by(|a, b| bound(*a).0.total_cmp(&bound(*b).0));
    let mut sum_so_far = low_sum;
    fair_prop = lb_min;
    let (mut sensitive_target_sum, mut delta_target_sum) = (0.0, 0.0);
    let (mut sensitive_classes, mut delta_classes) = (0i64, 0i64);
    let mut next = 0;
    while sum_so_far < required {
        let next_bound = loop {
            sensitive_target_sum += delta_target_sum;
            sensitive_classes += delta_classes;
            let Some(packed) = ascending.get(next) else {
                return Err(AllocError::OutOfBounds);
            };
            let (b, idx, lower) = bound(*packed);
            (delta_classes, delta_target_sum) = if lower { (1, relative[idx].0) } else { (-1, -relative[idx].0) };
            next += 1;
            if b > fair_prop {
                break b;
            }
        };
        if sensitive_classes == 0 {
            fair_prop = next_bound;
            continue;
        }
        let next_prop = fair_prop + (required - sum_so_far) / sensitive_target_sum;
        if next_prop <= next_bound {
            fair_prop = next_prop;
            break;
        }
        sum_so_far += (next_bound - fair_prop) * sensitive_target_sum;
        fair_prop = next_bound;
    }
    let allocs: Vec<f64> = classes.iter().zip(&relative).map(|(c, (target, _, _))| c.lower.max(c.upper.min(fair_prop * target))).collect();
    debug_assert!((allocs.iter().sum::<f64>() - required).abs() <= 1e-6 * required, "the allocations sum to the required sum");
    Ok((allocs, fair_prop))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    const SLACK: f64 = 1e-10;

    fn rel_diff(a: f64, b: f64) -> f64 {
        let den = a.abs().max(b.abs());
        if den == 0.0 { 0.0 } else { (a - b).abs() / den }
    }

    /// `partition64`: `n` floats from `rng` that sum to `x`.
    fn partition(rng: &mut StdRng, n: usize, x: f64) -> Vec<f64> {
        if n == 0 {
            return Vec::new();
        }
        let mut divs: Vec<f64> = (0..n - 1).map(|_| rng.random()).collect();
        divs.sort_by(f64::total_cmp);
        let (mut out, mut last) = (Vec::with_capacity(n), 0.0);
        for d in divs {
            out.push((d - last) * x);
            last = d;
        }
        out.push((1.0 - last) * x);
        out
    }

    // `TestConcAlloc` of conc_alloc_test.go: 10,000 random problems, each
    // solution checked against the invariant (or the error expected).
    #[test]
    fn random_problems_are_solved_proportionally_within_their_bounds() {
        let mut rng = StdRng::seed_from_u64(1234567890);
        for _ in 0..10_000 {
            let n = [0, 1, 2, 3, 4, 6, 9][rng.random_range(0..7)];
            let mut classes = Vec::new();
            let required: usize;
            match (n, rng.random_range(0..20)) {
                (0, _) => required = 0,
                (_, 0) => {
                    required = rng.random_range(0..n * 3);
                    for x in partition(&mut rng, n, required as f64) {
                        classes.push(Item { lower: x, target: x + 2.0 * rng.random::<f64>(), upper: x + 3.0 * rng.random::<f64>() });
                    }
                }
                (_, 1) => {
                    required = rng.random_range(0..n * 3) + 1;
                    for x in partition(&mut rng, n, required as f64) {
                        let lower = x * (1.25 * rng.random::<f64>() - 1.0).max(0.0);
                        classes.push(Item { upper: x, lower, target: lower + rng.random::<f64>() });
                    }
                }
                _ => {
                    for _ in 0..n {
                        let x = (rng.random::<f64>() * 5.0 - 1.0).max(0.0);
                        classes.push(Item { lower: x, target: x + 2.0 * rng.random::<f64>(), upper: x + 3.0 * rng.random::<f64>() });
                    }
                    let (low, high): (f64, f64) = (classes.iter().map(|c| c.lower).sum(), classes.iter().map(|c| c.upper).sum());
                    required = (low + (high - low) * rng.random::<f64>()).round() as usize;
                }
            }
            while rng.random::<f64>() < 0.25 {
                classes.push(Item { target: 0.0, lower: 0.0, upper: rng.random::<f64>() + 0.00001 });
                let (last, m) = (classes.len() - 1, rng.random_range(0..classes.len()));
                classes.swap(m, last);
            }
            let (low, high): (f64, f64) = (classes.iter().map(|c| c.lower).sum(), classes.iter().map(|c| c.upper).sum());
            let expect_err = low - required as f64 > SLACK || required as f64 - high > SLACK;
            let Ok((allocs, fair)) = allocate(required, &classes) else {
                assert!(expect_err, "{required} over {classes:?}: unexpected error");
                continue;
            };
            assert!(!expect_err, "{required} over {classes:?}: expected an error, got {allocs:?}");
            assert!(rel_diff(required as f64, allocs.iter().sum()) <= SLACK, "{required} over {classes:?}: {allocs:?}");
            for (c, a) in classes.iter().zip(&allocs) {
                let proportional = fair * c.target.max(MIN_TARGET);
                if proportional <= c.lower {
                    assert_eq!(*a, c.lower);
                } else if proportional >= c.upper {
                    assert_eq!(*a, c.upper);
                } else {
                    assert!(rel_diff(proportional, *a) <= SLACK, "{a} is not {proportional}");
                }
            }
        }
    }
}
