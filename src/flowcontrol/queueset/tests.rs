//! The queue set against the behaviours the apiserver's `queueset_test.go`
//! checks — fair shares between flows, hands of one, widths, the
//! too-wide request, rejection, exemption, cancellation, shrinking — driven
//! at chosen instants (no clock), and the handles under paused time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::state::{Executing, Queuing, Rejection, State, Taken};
use super::*;

/// A state driven at instants `t0 + ms`.
struct Driven {
    s: State,
    t0: Instant,
}

fn queuing(queues: i64, hand_size: usize, queue_length_limit: usize) -> Queuing {
    Queuing { queues, queue_length_limit, hand_size }
}

impl Driven {
    fn new(q: Queuing, limit: usize) -> Driven {
        let t0 = Instant::now();
        let dealer = (q.queues > 0).then(|| Dealer::new(q.queues, q.hand_size as i64).unwrap());
        Driven { s: State::new(q, dealer, limit, t0), t0 }
    }

    fn at(&self, ms: u64) -> Instant {
        self.t0 + Duration::from_millis(ms)
    }

    fn start(&mut self, seats: usize, hash: u64, ms: u64) -> Result<Taken, Rejection> {
        let fs: Arc<str> = Arc::from(format!("flow-{hash}"));
        self.s.start(seats, hash, &fs, self.at(ms))
    }

    fn finish(&mut self, r: &Executing, ms: u64) {
        self.s.finish(r, self.at(ms));
    }
}

/// A request the test follows: executing, or waiting for its decision.
enum Req {
    Running(Executing),
    Waiting { queue: u64, decision: tokio::sync::oneshot::Receiver<Instant>, seats: usize, flow: u64 },
}

impl Req {
    fn of(taken: Taken, seats: usize, flow: u64) -> Req {
        match taken {
            Taken::Executing(e) => Req::Running(e),
            Taken::Waiting { queue, decision, .. } => Req::Waiting { queue, decision, seats, flow },
        }
    }

    /// Moves to running if dispatched; whether it runs.
    fn poll(&mut self) -> bool {
        if let Req::Waiting { queue, decision, seats, flow } = self
            && let Ok(started) = decision.try_recv()
        {
            let flow_schema = Arc::from(format!("flow-{flow}"));
            *self = Req::Running(Executing { queue: Some(*queue), seats: *seats, started, flow_schema });
        }
        matches!(self, Req::Running(_))
    }
}

#[test]
fn a_flooding_flow_cannot_starve_another_flows_request() {
    // One seat, hands of one: the flood (hash 0) and the victim (hash 1) have a queue each.
    let mut d = Driven::new(queuing(8, 1, 50), 1);
    let mut flood: Vec<Req> = (0..10).map(|_| Req::of(d.start(1, 0, 0).unwrap(), 1, 0)).collect();
    assert!(flood[0].poll() && !flood[1].poll(), "one executes, nine wait");
    let mut victim = Req::of(d.start(1, 1, 10).unwrap(), 1, 1);
    assert!(!victim.poll());
    let Req::Running(first) = &flood[0] else { unreachable!() };
    d.finish(&first.clone(), 100);
    assert!(victim.poll(), "the victim is served before the flood's next request");
    assert!(flood[1..].iter_mut().all(|r| !r.poll()));
}

#[test]
fn with_wider_hands_the_victim_waits_at_most_a_hands_worth_of_the_flood() {
    // `TestUniformFlowsHandSize3`'s shape: the flood spreads over its hand of three queues.
    let mut d = Driven::new(queuing(64, 3, 50), 1);
    let mut flood: Vec<Req> = (0..30).map(|i| Req::of(d.start(1, 7, i).unwrap(), 1, 7)).collect();
    let mut victim = Req::of(d.start(1, 12345, 40).unwrap(), 1, 12345);
    let mut finishes = 0;
    while !victim.poll() {
        let running = flood.iter_mut().position(|r| r.poll()).expect("the flood holds the seat");
        let Req::Running(e) = flood.remove(running) else { unreachable!() };
        finishes += 1;
        d.finish(&e, 100 * finishes);
    }
    assert!(finishes <= 3, "the victim waited for {finishes} of the flood's requests");
    assert!(flood.len() > 25, "most of the flood still waits");
}

#[test]
fn uniform_flows_get_equal_shares() {
    // `TestUniformFlowsHandSize1`: two flows always asking; each request holds its seat 10 ms.
    let mut d = Driven::new(queuing(8, 1, 100), 2);
    let mut reqs: Vec<(u64, Req)> = Vec::new();
    for flow in [0u64, 1] {
        for _ in 0..60 {
            reqs.push((flow, Req::of(d.start(1, flow, 0).unwrap(), 1, flow)));
        }
    }
    let mut served = [0usize; 2];
    for step in 1..=80u64 {
        reqs.iter_mut().for_each(|(_, r)| {
            r.poll();
        });
        let started = |r: &Req| match r {
            Req::Running(e) => Some(e.started),
            Req::Waiting { .. } => None,
        };
        let i = (0..reqs.len()).filter(|i| started(&reqs[*i].1).is_some()).min_by_key(|i| started(&reqs[*i].1)).unwrap();
        let (flow, Req::Running(e)) = reqs.remove(i) else { unreachable!() };
        served[flow as usize] += 1;
        d.finish(&e, step * 10);
    }
    assert!(served[0].abs_diff(served[1]) <= 2, "served {served:?}");
}

#[test]
fn the_queue_whose_request_would_finish_first_goes_first_if_it_fits() {
    // Ten seats, six in use; an 8-seat request waits (it does not fit).
    let mut d = Driven::new(queuing(8, 1, 50), 10);
    let big_run = Req::of(d.start(6, 0, 0).unwrap(), 6, 0);
    let mut wide = Req::of(d.start(8, 1, 1).unwrap(), 8, 1);
    assert!(!wide.poll());
    // Soon after, a 1-seat request would finish first in the virtual world: it goes, though the wide one came first.
    let mut narrow = Req::of(d.start(1, 2, 2).unwrap(), 1, 2);
    assert!(narrow.poll());
    // Much later, the wide request's virtual finish is the least and it does not fit: nothing else goes (head-of-line).
    let mut late = Req::of(d.start(2, 3, 5_000).unwrap(), 2, 3);
    assert!(!late.poll() && !wide.poll());
    let (Req::Running(big), Req::Running(small)) = (big_run, narrow) else { unreachable!() };
    d.finish(&big, 6_000);
    assert!(wide.poll() && !late.poll(), "the wide request first");
    d.finish(&small, 6_001);
    assert!(late.poll());
}

#[test]
fn a_request_wider_than_the_limit_runs_alone() {
    // `TestTooWide`.
    let mut d = Driven::new(queuing(8, 1, 50), 2);
    let first = Req::of(d.start(1, 0, 0).unwrap(), 1, 0);
    let mut wide = Req::of(d.start(5, 1, 1).unwrap(), 5, 1);
    assert!(!wide.poll());
    let Req::Running(first) = first else { unreachable!() };
    d.finish(&first, 2);
    assert!(wide.poll());
    assert_eq!(d.s.seats_in_use, 5);
}

#[test]
fn a_full_queue_rejects_while_the_seats_are_in_use() {
    let mut d = Driven::new(queuing(1, 1, 2), 1);
    let _run = d.start(1, 0, 0).unwrap();
    let _w1 = d.start(1, 0, 0).unwrap();
    let _w2 = d.start(1, 0, 0).unwrap();
    assert_eq!(d.start(1, 0, 0).err(), Some(Rejection::QueueFull));
    assert_eq!((d.s.waiting, d.s.executing), (2, 1));
}

#[test]
fn a_level_that_does_not_queue_rejects_at_its_limit_and_a_jail_admits_one_at_a_time() {
    let mut d = Driven::new(queuing(0, 0, 0), 2);
    assert!(matches!(d.start(1, 0, 0), Ok(Taken::Executing(_))));
    assert!(matches!(d.start(1, 0, 0), Ok(Taken::Executing(_))));
    assert_eq!(d.start(1, 0, 0).err(), Some(Rejection::ConcurrencyLimit));
    // A level of no seats (nominalConcurrencyShares 0) takes one request when nothing executes.
    let mut jail = Driven::new(queuing(0, 0, 0), 0);
    let Ok(Taken::Executing(one)) = jail.start(1, 0, 0) else { panic!("the first is admitted") };
    assert_eq!(jail.start(1, 0, 1).err(), Some(Rejection::ConcurrencyLimit));
    jail.finish(&one, 2);
    assert!(matches!(jail.start(1, 0, 3), Ok(Taken::Executing(_))));
}

#[test]
fn the_exempt_level_is_never_limited() {
    let mut d = Driven::new(queuing(-1, 0, 0), 0);
    for i in 0..100 {
        assert!(matches!(d.start(10, i, i), Ok(Taken::Executing(_))));
    }
    assert_eq!(d.s.seats_in_use, 1000);
}

#[test]
fn a_request_that_gives_up_leaves_its_queue() {
    let mut d = Driven::new(queuing(4, 1, 10), 1);
    let Ok(Taken::Executing(run)) = d.start(1, 0, 0) else { panic!() };
    let Ok(Taken::Waiting { queue, id, .. }) = d.start(1, 1, 1) else { panic!() };
    let Ok(Taken::Waiting { queue: q2, id: id2, decision: _listening }) = d.start(1, 2, 2) else { panic!() };
    assert!(d.s.cancel(queue, id, d.at(3)));
    assert!(!d.s.cancel(queue, id, d.at(3)), "once");
    d.finish(&run, 4);
    assert_eq!((d.s.waiting, d.s.executing), (0, 1), "the other one runs");
    assert!(!d.s.cancel(q2, id2, d.at(5)), "dispatched: it executes, it no longer waits");
    assert_eq!((d.s.waiting, d.s.executing), (0, 1));
}

#[test]
fn queues_beyond_those_wanted_go_once_empty() {
    let mut d = Driven::new(queuing(4, 1, 10), 1);
    let Ok(Taken::Executing(run)) = d.start(1, 3, 0) else { panic!() };
    let dealer = Dealer::new(2, 1).ok();
    d.s.configure(queuing(2, 1, 10), dealer, 1, d.at(1));
    assert_eq!(d.s.lengths().len(), 4, "queue 3 still has its request");
    d.finish(&run, 2);
    assert_eq!(d.s.lengths().len(), 3, "queue 3 went; queue 2, empty, goes when something in it finishes");
}

#[tokio::test(start_paused = true)]
async fn a_waiter_times_out_and_a_dropped_one_leaves_its_queue() {
    let qs = QueueSet::new("level", queuing(4, 1, 10), 1).unwrap();
    let fs: Arc<str> = Arc::from("schema");
    let Admission::Executing(seat) = qs.start(1, 0, &fs) else { panic!("the first executes") };
    let Admission::Waiting(late) = qs.start(1, 1, &fs) else { panic!("the second waits") };
    assert_eq!(late.wait(Duration::from_secs(15)).await.err(), Some(Rejection::TimeOut));
    let Admission::Waiting(gone) = qs.start(1, 2, &fs) else { panic!() };
    drop(gone);
    let Admission::Waiting(next) = qs.start(1, 3, &fs) else { panic!() };
    drop(seat);
    let seat = next.wait(Duration::from_secs(15)).await.expect("dispatched once the seat is free");
    assert_eq!(seat.seats(), 1);
    drop(seat);
    assert!(qs.is_idle());
}
