//! Reads from the apiserver's socket, gathered while it streams.
//!
//! kube-apiserver's Go server writes every full 4 KiB DATA frame as a TLS
//! record and a system call of its own (`sim/src/gowrites.rs` has the
//! details), so a reader that keeps up wakes once per 4 KiB: an epoll
//! return, a context switch, a TLS record, a poll of every task on the
//! way. Relaying a 230 MB list at the apiserver's 60–80 MB/s, that was
//! 15,000 wake-ups a second and two thirds of kache's CPU (perf on
//! kube-apiserver 1.36.2: `finish_task_switch` alone 30%).
//!
//! So, while the socket streams — at least [`BUFFER`] bytes came in reads
//! that each found bytes waiting or waited less than [`STREAMING`] (a
//! reader back from writing to a slow client does not end the run), the
//! last within [`STREAMING`] — a read
//! that finds nothing there does not wait for the next byte: it waits
//! [`HOLD`] (about 60–80 KB at the apiserver's pace), with the socket's
//! receive low-water mark raised to [`BUFFER`] so the kernel wakes no one
//! for less meanwhile, then takes all the socket holds, up to [`BUFFER`],
//! in one system call; the TLS layer above then reads it from here. A hold
//! that finds nothing ends the stream: the mark drops to one byte, and the
//! next read waits for the next byte as any read would. The first read
//! after a quiet spell — a watch's event, an answer's head — is never held,
//! nor is anything of a small answer (a GET's, a page's end of stream after
//! its data: under a buffer's worth of bytes is no stream); bytes that
//! arrive while a stream flows wait at most [`HOLD`].
//!
//! The runtime reports no readiness under a raised mark, so the read after
//! a hold asks the socket directly (`recv` with `MSG_DONTWAIT`): a hold is
//! one wake-up and one read, and the mark is not moved to learn of the next
//! bytes (what a relayed list then costs: `docs/performance.md`).
//!
//! Invariant: bytes pass through unchanged and in order; writes are not
//! touched.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use std::os::fd::{AsRawFd, RawFd};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// How long a read that finds nothing waits while the socket streams:
/// tokio's timer resolution, and a watch event's added latency at worst.
const HOLD: Duration = Duration::from_millis(1);

/// Reads closer together than this are a stream.
const STREAMING: Duration = Duration::from_millis(2);

/// The most one read takes from the socket.
const BUFFER: usize = 256 << 10;

/// `inner`, read as the module doc says.
#[derive(Debug)]
pub(crate) struct Gathered<T> {
    inner: T,
    buf: Box<[u8]>,
    /// The unread bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// When the last read from the socket brought bytes.
    last: Option<Instant>,
    /// Since when the reader waits for the socket (a read found nothing, and no hold was armed).
    waiting: Option<Instant>,
    /// Bytes of the current run: reads that each found bytes at once or within [`STREAMING`].
    run: usize,
    /// Armed while the next read waits.
    hold: Pin<Box<Sleep>>,
    holding: bool,
    /// The socket's receive low-water mark is [`BUFFER`] (else 1).
    low_water: bool,
}

impl<T> Gathered<T> {
    /// Wraps a socket.
    pub fn new(inner: T) -> Gathered<T> {
        Gathered {
            inner,
            buf: vec![0; BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
            last: None,
            waiting: None,
            run: 0,
            hold: Box::pin(tokio::time::sleep(Duration::ZERO)),
            holding: false,
            low_water: false,
        }
    }
}

impl<T: AsyncRead + AsRawFd + Unpin> AsyncRead for Gathered<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, out: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        while this.start == this.end {
            if this.holding {
                ready!(this.hold.as_mut().poll(cx));
                this.holding = false;
                // The runtime saw no readiness under the raised mark: ask the socket itself.
                match receive_now(this.inner.as_raw_fd(), &mut this.buf) {
                    Ok(n) => {
                        this.took(n);
                        break;
                    }
                    // Nothing came for a whole hold: the stream paused.
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => (this.last, this.run) = (None, 0),
                    Err(e) => return Poll::Ready(Err(e)),
                }
            }
            let mut into = ReadBuf::new(&mut this.buf);
            if Pin::new(&mut this.inner).poll_read(cx, &mut into)?.is_ready() {
                let n = into.filled().len();
                this.took(n);
                break;
            }
            let now = Instant::now();
            if this.run >= BUFFER && this.last.is_some_and(|last| now.duration_since(last) < STREAMING) {
                // Streaming: come back after the hold, or once a whole read is there.
                if !this.low_water {
                    this.low_water = true;
                    set_receive_low_water(this.inner.as_raw_fd(), BUFFER)?;
                }
                this.hold.as_mut().reset(now + HOLD);
                this.holding = true;
                continue;
            }
            // Quiet: the next byte must wake the reader (lowering the mark
            // signals the kernel's readiness at once if bytes came meanwhile).
            if this.low_water {
                this.low_water = false;
                set_receive_low_water(this.inner.as_raw_fd(), 1)?;
            }
            this.waiting.get_or_insert(now);
            return Poll::Pending;
        }
        let n = (this.end - this.start).min(out.remaining());
        out.put_slice(&this.buf[this.start..this.start + n]);
        this.start += n;
        Poll::Ready(Ok(()))
    }
}

impl<T> Gathered<T> {
    /// A read from the socket brought `n` bytes (none: its end).
    fn took(&mut self, n: usize) {
        (self.start, self.end) = (0, n);
        if n > 0 {
            // A reader back from elsewhere (writing what it read to a slow client) that finds bytes waiting: the run goes on.
            let now = Instant::now();
            let runs_on = self.waiting.take().is_none_or(|since| now.duration_since(since) < STREAMING);
            self.run = if runs_on { self.run.saturating_add(n) } else { n };
            self.last = Some(now);
        }
    }
}

/// Reads what the socket holds now, without waiting.
#[allow(unsafe_code)]
fn receive_now(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `fd` is the open socket `Gathered` owns; recv writes at most
    // `buf.len()` bytes into `buf`, which outlives the call.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// Sets the socket's `SO_RCVLOWAT`: epoll reports it readable only once
/// `bytes` are there (Linux's `tcp_data_ready`); a read still takes what
/// there is. Neither std, socket2 nor rustix offers this option.
#[allow(unsafe_code)]
fn set_receive_low_water(fd: RawFd, bytes: usize) -> io::Result<()> {
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `fd` is the open socket `Gathered` owns, and setsockopt reads
    // exactly `len` bytes from `value`, which lives across the call.
    let done = unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT, (&raw const value).cast(), len) };
    if done == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Gathered<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// A loopback connection: the writing end, and the reading end gathered.
    async fn pair() -> (TcpStream, Gathered<TcpStream>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let writer = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        writer.set_nodelay(true).unwrap();
        let (reader, _) = listener.accept().await.unwrap();
        (writer, Gathered::new(reader))
    }

    #[tokio::test(start_paused = true)]
    async fn bytes_pass_in_order_and_a_read_after_quiet_is_not_held() {
        let (mut writer, mut gathered) = pair().await;
        let sent: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
        let mut got = Vec::new();
        let mut written = 0;
        for piece in sent.chunks(4096) {
            writer.write_all(piece).await.unwrap();
            written += piece.len();
            while got.len() < written {
                let mut buf = [0u8; 1000];
                let started = Instant::now();
                let n = gathered.read(&mut buf).await.unwrap();
                assert!(started.elapsed() <= HOLD, "a read waited {:?}", started.elapsed());
                got.extend_from_slice(&buf[..n]);
            }
        }
        assert!(got == sent);
        // Quiet: the next read is not held, whatever the mark was.
        tokio::time::sleep(Duration::from_secs(1)).await;
        writer.write_all(b"event").await.unwrap();
        let started = Instant::now();
        let mut buf = [0u8; 16];
        assert_eq!(gathered.read(&mut buf).await.unwrap(), 5);
        assert_eq!(started.elapsed(), Duration::ZERO);
    }

    /// Reads `n` bytes written in 4 KiB pieces, as the apiserver's records come: a stream under way.
    async fn stream(writer: &mut TcpStream, gathered: &mut Gathered<TcpStream>, n: usize) {
        let mut buf = vec![0u8; BUFFER];
        for _ in 0..n / 4096 {
            writer.write_all(&[1; 4096]).await.unwrap();
            let mut got = 0;
            while got < 4096 {
                got += gathered.read(&mut buf).await.unwrap();
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_small_answer_is_never_held_not_even_its_end() {
        let (mut writer, mut gathered) = pair().await;
        let mut buf = vec![0u8; BUFFER];
        // A GET's answer: its head and data, then its end of stream in a frame of its own.
        writer.write_all(&[1; 4096]).await.unwrap();
        assert_eq!(gathered.read(&mut buf).await.unwrap(), 4096);
        let (read, written) = tokio::join!(
            async {
                let n = gathered.read(&mut buf).await.unwrap();
                (n, Instant::now())
            },
            async {
                tokio::time::sleep(Duration::from_micros(100)).await;
                writer.write_all(&[0; 9]).await.unwrap();
                Instant::now()
            }
        );
        assert_eq!(read, (9, written), "read as soon as it came, not after a hold");
    }

    /// One read while ten 4 KiB records are written: the bytes it took, and how long it waited.
    async fn read_while_ten_records_come(writer: &mut TcpStream, gathered: &mut Gathered<TcpStream>, buf: &mut [u8]) -> (usize, Duration) {
        let (read, ()) = tokio::join!(
            async {
                let started = Instant::now();
                let n = gathered.read(buf).await.unwrap();
                (n, started.elapsed())
            },
            async {
                for _ in 0..10 {
                    writer.write_all(&[3; 4096]).await.unwrap();
                }
            }
        );
        read
    }

    #[tokio::test(start_paused = true)]
    async fn while_bytes_stream_a_read_that_finds_nothing_waits_the_hold_so_they_gather() {
        let (mut writer, mut gathered) = pair().await;
        let mut buf = vec![0u8; BUFFER];
        stream(&mut writer, &mut gathered, BUFFER).await;
        // What comes within the hold is read at its end, at once.
        let read = read_while_ten_records_come(&mut writer, &mut gathered, &mut buf).await;
        assert_eq!(read.1, HOLD);
        assert!(read.0 > 4096, "{} bytes: not gathered", read.0);
        let mut rest = read.0;
        while rest < 40_960 {
            rest += gathered.read(&mut buf).await.unwrap();
        }
        assert_eq!(rest, 40_960);
        // Under the raised mark, the last bytes of a stream still arrive.
        writer.write_all(&[4; 100]).await.unwrap();
        let mut tail = Vec::new();
        while tail.len() < 100 {
            let n = gathered.read(&mut buf).await.unwrap();
            tail.extend_from_slice(&buf[..n]);
        }
        assert_eq!(tail, [4; 100]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_reader_back_from_a_slow_client_that_finds_bytes_waiting_keeps_gathering() {
        let (mut writer, mut gathered) = pair().await;
        let mut buf = vec![0u8; BUFFER];
        stream(&mut writer, &mut gathered, BUFFER).await;
        // The reader writes to its slow client for 10 ms; the stream flows meanwhile.
        writer.write_all(&[2; 4096]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(gathered.read(&mut buf).await.unwrap(), 4096);
        // Still a stream: the next read that finds nothing holds, and what came meanwhile is gathered.
        let read = read_while_ten_records_come(&mut writer, &mut gathered, &mut buf).await;
        assert_eq!(read, (40_960, HOLD));
    }

    #[tokio::test(start_paused = true)]
    async fn a_hold_that_finds_nothing_ends_the_stream() {
        let (mut writer, mut gathered) = pair().await;
        let mut buf = vec![0u8; BUFFER];
        stream(&mut writer, &mut gathered, BUFFER).await;
        // The next read holds, finds nothing, and then waits for the next byte
        // however long it takes, reading it as soon as it comes.
        let (read, written) = tokio::join!(
            async {
                let n = gathered.read(&mut buf).await.unwrap();
                (n, Instant::now())
            },
            async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                writer.write_all(b"event").await.unwrap();
                Instant::now()
            }
        );
        assert_eq!(read, (5, written));
    }
}
