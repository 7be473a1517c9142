//! Where events go: each backend's bounded buffer of lines, appended to
//! without ever waiting (the apiserver's `buffered` backend) and taken
//! whole by the backend, and the counts of what became of every event —
//! `kache_audit_events_total{backend, result}` with result `written`,
//! `dropped` (its buffer was full: the backend is slower than the
//! requests, as `apiserver_audit_error_total{plugin="buffered"}` counts)
//! or `failed` (the backend could not take it: the file cannot be written,
//! the webhook refused the batch).
//!
//! An event is written once, into a buffer of the thread that makes it,
//! and copied from there into each backend's [`Lines`]; the backend swaps
//! that buffer for its own emptied one. So no event costs an allocation,
//! and nothing allocated by a request's thread is freed by a backend's (a
//! line a request, freed by the writer, took malloc's one arena lock on
//! both sides).
//!
//! Invariants: [`Sink::send`] takes constant time and never blocks (a copy
//! under a lock no one holds longer than a copy or a swap); a backend is
//! woken only when it waits: by the line that ends an empty buffer's wait,
//! or the one that fills the quarter it gathers for; an event is counted
//! exactly once per backend; a buffer holds at most its size in events.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use metrics::Counter;
use parking_lot::{Condvar, Mutex};
use tokio::sync::Notify;

/// Which backend a count is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `--audit-log-path`.
    Log,
    /// `--audit-webhook-config-file`.
    Webhook,
}

impl Backend {
    /// The `backend` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Log => "log",
            Backend::Webhook => "webhook",
        }
    }
}

/// What became of events, per backend.
#[derive(Debug, Clone)]
pub struct Counts {
    pub written: Counter,
    pub dropped: Counter,
    pub failed: Counter,
}

impl Counts {
    /// `backend`'s counters (each starts at zero, so every series is scraped).
    pub fn of(backend: Backend) -> Counts {
        let counter = |result: &'static str| {
            let c = metrics::counter!("kache_audit_events_total", "backend" => backend.as_str(), "result" => result);
            c.absolute(0);
            c
        };
        Counts { written: counter("written"), dropped: counter("dropped"), failed: counter("failed") }
    }
}

/// Log lines (each an event and its newline), one after the other in one buffer.
#[derive(Debug, Default)]
pub struct Lines {
    bytes: Vec<u8>,
    /// Where each line ends in `bytes`.
    ends: Vec<usize>,
}

impl Lines {
    /// The number of lines.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Every line, one after the other.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Each line.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts.zip(&self.ends).map(|(start, &end)| &self.bytes[start..end])
    }

    /// `line` after the others.
    pub fn push(&mut self, line: &[u8]) {
        self.bytes.extend_from_slice(line);
        self.ends.push(self.bytes.len());
    }

    /// No lines (the buffers kept).
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    /// Lines of `texts`, each its own.
    #[cfg(test)]
    pub fn of(texts: &[&str]) -> Lines {
        let mut lines = Lines::default();
        texts.iter().for_each(|t| lines.push(t.as_bytes()));
        lines
    }

    /// Removes the first `n` lines.
    pub(crate) fn remove_first(&mut self, n: usize) {
        let Some(&cut) = n.checked_sub(1).and_then(|i| self.ends.get(i)) else {
            if n > 0 {
                self.clear();
            }
            return;
        };
        self.bytes.drain(..cut);
        self.ends.drain(..n);
        self.ends.iter_mut().for_each(|e| *e -= cut);
    }

    /// At most `max` of `other`'s first lines after these, and gone from
    /// `other` (all of them moved without a copy when `self` is empty).
    fn take_from(&mut self, other: &mut Lines, max: usize) {
        if max >= other.len() && self.is_empty() {
            std::mem::swap(self, other);
            return;
        }
        let n = max.min(other.len());
        let cut = n.checked_sub(1).map_or(0, |i| other.ends[i]);
        let base = self.bytes.len();
        self.bytes.extend_from_slice(&other.bytes[..cut]);
        self.ends.extend(other.ends[..n].iter().map(|e| e + base));
        other.remove_first(n);
    }
}

/// A backend's buffer, shared by the requests that fill it and the backend that empties it.
#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// The most events the buffer holds.
    size: usize,
    /// Wakes a backend thread waiting for events ([`Receiver::take_blocking`]).
    thread: Condvar,
    /// Wakes a backend task waiting for events ([`Receiver::take`]).
    task: Notify,
}

#[derive(Debug)]
struct State {
    lines: Lines,
    /// The backend waits for the buffer to hold this many lines, and the
    /// request whose line makes them so wakes it (`usize::MAX`: it waits for none).
    wake_at: usize,
    /// The sink is gone: nothing more comes.
    closed: bool,
}

impl Default for State {
    fn default() -> State {
        State { lines: Lines::default(), wake_at: usize::MAX, closed: false }
    }
}

/// One backend's buffer, as the sink fills it.
#[derive(Debug)]
pub struct Queue {
    shared: Arc<Shared>,
    counts: Counts,
}

/// One backend's buffer, as the backend empties it.
#[derive(Debug)]
pub struct Receiver {
    shared: Arc<Shared>,
}

impl Queue {
    /// A buffer of at most `size` events for `backend`, and its receiving end.
    pub fn new(backend: Backend, size: usize) -> (Queue, Receiver, Counts) {
        let shared =
            Arc::new(Shared { state: Mutex::new(State::default()), size: size.max(1), thread: Condvar::new(), task: Notify::new() });
        let counts = Counts::of(backend);
        (Queue { shared: shared.clone(), counts: counts.clone() }, Receiver { shared }, counts)
    }

    /// Appends `line` unless the buffer is full (then counted dropped); wakes a waiting backend.
    fn push(&self, line: &[u8]) {
        let mut state = self.shared.state.lock();
        if state.lines.len() >= self.shared.size {
            drop(state);
            self.counts.dropped.increment(1);
            return;
        }
        state.lines.push(line);
        if state.lines.len() >= state.wake_at {
            state.wake_at = usize::MAX;
            drop(state);
            self.shared.wake();
        }
    }
}

impl Shared {
    fn wake(&self) {
        self.thread.notify_one();
        self.task.notify_one();
    }
}

impl Drop for Queue {
    /// Nothing more comes: the backend writes what is left and ends.
    fn drop(&mut self) {
        self.shared.state.lock().closed = true;
        self.shared.wake();
    }
}

impl Receiver {
    /// Moves all that gathered to the end of `into`, waiting (the thread
    /// blocked) while nothing has, then letting more gather for up to
    /// `gather` or until a quarter of the buffer is full, whichever comes
    /// first; `false` once nothing more will come.
    pub fn take_blocking(&self, into: &mut Lines, gather: Duration) -> bool {
        let mut state = self.shared.state.lock();
        while state.lines.is_empty() && !state.closed {
            state.wake_at = 1;
            self.shared.thread.wait(&mut state);
        }
        let (enough, deadline) = (self.shared.size.div_ceil(4), Instant::now() + gather);
        while state.lines.len() < enough && !state.closed {
            state.wake_at = enough;
            if self.shared.thread.wait_until(&mut state, deadline).timed_out() {
                break;
            }
        }
        state.wake_at = usize::MAX;
        let taken = !state.lines.is_empty();
        into.take_from(&mut state.lines, usize::MAX);
        taken
    }

    /// As [`Receiver::take_blocking`], for a task, moving at most `max`
    /// lines (the rest stay in the bounded buffer).
    pub async fn take(&self, into: &mut Lines, max: usize) -> bool {
        loop {
            {
                let mut state = self.shared.state.lock();
                if !state.lines.is_empty() || state.closed {
                    state.wake_at = usize::MAX;
                    let taken = !state.lines.is_empty();
                    into.take_from(&mut state.lines, max);
                    return taken;
                }
                state.wake_at = 1;
            }
            // A wake between the unlock and this wait is kept by `Notify` (a permit).
            self.shared.task.notified().await;
        }
    }
}

thread_local! {
    /// The line being made, on each thread that makes events.
    static LINE: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Every backend's buffer.
#[derive(Debug, Default)]
pub struct Sink {
    queues: Vec<Queue>,
}

impl Sink {
    /// A sink feeding `queues`.
    pub fn new(queues: Vec<Queue>) -> Sink {
        Sink { queues }
    }

    /// Hands the line `write` makes (an event, [`super::event::Event::write_line`]) to
    /// every backend, dropping it where the buffer is full.
    pub fn send(&self, write: impl FnOnce(&mut String)) {
        LINE.with_borrow_mut(|line| {
            line.clear();
            write(line);
            self.queues.iter().for_each(|q| q.push(line.as_bytes()));
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(l: &Lines) -> Vec<String> {
        l.iter().map(|b| String::from_utf8(b.to_vec()).unwrap()).collect()
    }

    #[test]
    fn lines_are_kept_apart_taken_and_removed_from_the_front() {
        let mut a = Lines::of(&["a\n", "bb\n"]);
        let mut b = Lines::of(&["ccc\n", "d\n", "e\n"]);
        a.take_from(&mut b, 2);
        assert_eq!(strings(&a), ["a\n", "bb\n", "ccc\n", "d\n"]);
        assert_eq!(strings(&b), ["e\n"]);
        a.take_from(&mut b, 9);
        assert_eq!(strings(&a), ["a\n", "bb\n", "ccc\n", "d\n", "e\n"]);
        assert!(b.is_empty());
        assert_eq!(a.bytes(), b"a\nbb\nccc\nd\ne\n");
        a.remove_first(4);
        assert_eq!(strings(&a), ["e\n"]);
        a.remove_first(5);
        assert!(a.is_empty() && a.bytes().is_empty());
    }

    #[test]
    fn a_full_buffer_drops_and_counts_and_a_taker_empties_it() {
        let (queue, rx, _) = Queue::new(Backend::Log, 2);
        let sink = Sink::new(vec![queue]);
        for line in ["1\n", "2\n", "3\n"] {
            sink.send(|out| out.push_str(line));
        }
        let mut taken = Lines::default();
        assert!(rx.take_blocking(&mut taken, Duration::ZERO));
        assert_eq!(strings(&taken), ["1\n", "2\n"], "the third did not fit");
        sink.send(|out| out.push_str("4\n"));
        assert!(rx.take_blocking(&mut taken, Duration::ZERO));
        assert_eq!(strings(&taken), ["1\n", "2\n", "4\n"]);
        drop(sink);
        assert!(!rx.take_blocking(&mut taken, Duration::ZERO), "closed and empty");
    }

    #[test]
    fn a_gathering_backend_is_woken_once_a_quarter_of_its_buffer_is_full() {
        let (queue, rx, _) = Queue::new(Backend::Log, 8);
        let (tx, taken) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = Lines::default();
            // Gathers for an hour unless woken: a quarter of 8 is 2 lines.
            rx.take_blocking(&mut lines, Duration::from_secs(3600));
            tx.send(strings(&lines)).unwrap();
        });
        let sink = Sink::new(vec![queue]);
        sink.send(|out| out.push_str("a\n"));
        sink.send(|out| out.push_str("b\n"));
        let lines = taken.recv_timeout(Duration::from_secs(60)).expect("the second line woke the backend");
        assert_eq!(lines, ["a\n", "b\n"]);
    }

    #[test]
    fn a_waiting_backend_thread_is_woken_by_the_first_event() {
        let (queue, rx, _) = Queue::new(Backend::Log, 10);
        let backend = std::thread::spawn(move || {
            let mut taken = Lines::default();
            let mut got = Vec::new();
            while rx.take_blocking(&mut taken, Duration::ZERO) {
                got.extend(strings(&taken));
                taken.clear();
            }
            got
        });
        let sink = Sink::new(vec![queue]);
        sink.send(|out| out.push_str("x\n"));
        sink.send(|out| out.push_str("y\n"));
        drop(sink);
        assert_eq!(backend.join().unwrap(), ["x\n", "y\n"]);
    }
}
