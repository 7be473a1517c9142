//! API Priority and Fairness (KEP-1040) for what kache answers itself,
//! ported from kube-apiserver 1.36 (`k8s.io/apiserver/pkg/util/flowcontrol`)
//! and run on the cluster's own FlowSchemas and PriorityLevelConfigurations,
//! which kache caches like any resource: operators tune one configuration.
//!
//! Invariants:
//! - a request is classified as the apiserver classifies it — the same
//!   objects, the same matching order, the same flow hash — so it names the
//!   FlowSchema and level the apiserver would (their UIDs, in the
//!   `X-Kubernetes-PF-*` headers), under the configuration of kache's
//!   stores as the request arrives;
//! - kache's seats ([`default_seats`] or `--priority-and-fairness-seats`)
//!   are divided among the levels by their shares, lent and borrowed as
//!   the apiserver does; within a level, flows are served by fair queuing
//!   with shuffle sharding; a request waits at most [`WAIT_LIMIT`];
//! - a request holds its seats from dispatch until its answer is written
//!   (a watch: until its initial events are), and gives them back when it
//!   ends or its client goes; what it costs in memory is the memory
//!   budget's (`crate::budget`), not counted in seats.
//!
//! Ported file by file (kache's module ← the apiserver's file; all under
//! `staging/src/k8s.io/apiserver/pkg/`):
//!
//! | module | from |
//! |---|---|
//! | [`objects`] | `api/flowcontrol/v1/types.go`, `pkg/apis/flowcontrol/v1/defaults.go`, `queueSetCompleterForPL`'s checks |
//! | [`rule`] | `util/flowcontrol/rule.go` |
//! | [`config`] | `util/flowcontrol/apf_controller.go`: `startRequest`'s classification, `computeFlowDistinguisher`, `hashFlowID`; `util/apihelpers` `FlowSchemaSequence` |
//! | [`controller`] | `apf_controller.go`: `lockAndDigestConfigObjects` and its passes, `imaginePL`, `updateBorrowing`; the bootstrap objects are `apimachinery::flowcontrol` (`apis/flowcontrol/bootstrap/default.go`) |
//! | [`level`] | `apf_controller.go`: `priorityLevelState`, `MaxSeatsTracker` (`max_seats.go`) |
//! | [`borrowing`] | `apf_controller.go`: `finishQueueSetReconfigsLocked`'s limits, `seatDemandStats`, `updateBorrowingLocked` |
//! | [`alloc`] | `util/flowcontrol/conc_alloc.go` |
//! | [`integrator`] | `util/flowcontrol/fairqueuing/integrator.go` |
//! | [`queueset`] | `util/flowcontrol/fairqueuing/queueset/queueset.go`, `types.go`, `fifo_list.go`; `request/seat_seconds.go` |
//! | [`shuffle`] | `util/shufflesharding/shufflesharding.go` |
//! | [`width`] | `util/flowcontrol/request/width.go`, `list_work_estimator.go`, `config.go` |
//! | [`retry`] | `util/flowcontrol/dropped_requests_tracker.go` |
//! | [`metrics`] | `util/flowcontrol/metrics/metrics.go` (names and labels) |
//!
//! Left out, because kache only reads: the mutating work estimator (final
//! seats and additional latency), and writing FlowSchema status (the
//! apiserver's controller does that; kache ignores schemas whose level is
//! missing, as it does).

pub(crate) mod alloc;
pub(crate) mod borrowing;
pub mod config;
pub mod controller;
pub(crate) mod integrator;
pub mod level;
pub mod metrics;
pub mod objects;
pub(crate) mod queueset;
pub mod retry;
pub mod rule;
pub(crate) mod shuffle;
pub mod width;

use std::time::Duration;

pub use config::Classified;
pub use controller::FlowControl;
pub(crate) use queueset::{Admission, Seat};

/// The longest a request waits in its queue: a quarter of the apiserver's
/// 60 s `--request-timeout`, as `WithPriorityAndFairness` is given it.
pub(crate) const WAIT_LIMIT: Duration = Duration::from_secs(15);

/// Seats per core: five times kube-apiserver's share. The apiserver's
/// default budget is 600 seats (`--max-requests-inflight` 400 +
/// `--max-mutating-requests-inflight` 200), 300 a core on 2 cores; a
/// request costs the same seats in both (a list from a cache at most 10).
/// But a seat is one request's worth of work, and kache does that work for
/// a fraction of the apiserver's CPU: at the apiserver's share, a quiet
/// level lends most of its seats away, a flood of full lists then queues
/// until the next adjustment (10 s), and other flows' small reads queue
/// behind it; at 1,500 a core the same flood queues nothing
/// (`loadtest fairness`: `docs/performance.md`, "Priority and fairness").
pub(crate) const SEATS_PER_CORE: usize = 1500;

/// The seats kache shares when `--priority-and-fairness-seats` is not set:
/// [`SEATS_PER_CORE`] per core it may run on.
pub(crate) fn default_seats() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()) * SEATS_PER_CORE
}
