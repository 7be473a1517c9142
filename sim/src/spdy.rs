//! The server's side of SPDY/3.1 framing, as much of it as client-go's
//! port-forward speaks (through `moby/spdystream`): it reads SYN_STREAM,
//! DATA, RST_STREAM, PING and GOAWAY (every other frame is read and
//! skipped), and writes SYN_REPLY, DATA and PING.
//!
//! Header blocks are zlib streams with the SPDY/3 dictionary, one stream per
//! direction for the whole connection: every header-carrying frame is
//! inflated in order (even the ones skipped) so the shared state never
//! drifts. There is no flow control, as spdystream has none.
//!
//! Invariants: a malformed frame, a header block that does not inflate or
//! parse, or one that inflates past [`MAX_HEADER_BLOCK`] is an `InvalidData`
//! error, never a panic; frames are length-checked before they are sliced.

use std::io;
use std::sync::LazyLock;

use bytes::Bytes;
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest inflated header block accepted.
pub const MAX_HEADER_BLOCK: usize = 64 * 1024;

const VERSION: u16 = 3;
const SYN_STREAM: u16 = 1;
const SYN_REPLY: u16 = 2;
const RST_STREAM: u16 = 3;
const PING: u16 = 6;
const GOAWAY: u16 = 7;
const HEADERS: u16 = 8;
const FLAG_FIN: u8 = 0x01;

/// The header-compression dictionary of SPDY/3 (draft 3, section 2.6.10.1):
/// header names and common values, each behind a 32-bit length, then a
/// run of common strings without lengths.
static DICTIONARY: LazyLock<Vec<u8>> = LazyLock::new(|| {
    const WORDS: &[&str] = &[
        "options",
        "head",
        "post",
        "put",
        "delete",
        "trace",
        "accept",
        "accept-charset",
        "accept-encoding",
        "accept-language",
        "accept-ranges",
        "age",
        "allow",
        "authorization",
        "cache-control",
        "connection",
        "content-base",
        "content-encoding",
        "content-language",
        "content-length",
        "content-location",
        "content-md5",
        "content-range",
        "content-type",
        "date",
        "etag",
        "expect",
        "expires",
        "from",
        "host",
        "if-match",
        "if-modified-since",
        "if-none-match",
        "if-range",
        "if-unmodified-since",
        "last-modified",
        "location",
        "max-forwards",
        "pragma",
        "proxy-authenticate",
        "proxy-authorization",
        "range",
        "referer",
        "retry-after",
        "server",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "user-agent",
        "vary",
        "via",
        "warning",
        "www-authenticate",
        "method",
        "get",
        "status",
        "200 OK",
        "version",
        "HTTP/1.1",
        "url",
        "public",
        "set-cookie",
        "keep-alive",
        "origin",
    ];
    const TAIL: &str = concat!(
        "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505",
        "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized",
        "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable",
        "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT",
        "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,",
        "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
    );
    let mut d = Vec::with_capacity(1500);
    for w in WORDS {
        d.extend_from_slice(&u32::try_from(w.len()).expect("short words").to_be_bytes());
        d.extend_from_slice(w.as_bytes());
    }
    d.extend_from_slice(TAIL.as_bytes());
    d
});

/// One frame the server acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// SYN_STREAM: the client opens a stream.
    SynStream {
        /// The new stream.
        stream_id: u32,
        /// The client sends nothing more on it.
        fin: bool,
        /// Its headers (names lowercase, as SPDY requires).
        headers: Vec<(String, String)>,
    },
    /// DATA on a stream.
    Data {
        /// The stream.
        stream_id: u32,
        /// The client's last data on this stream.
        fin: bool,
        /// The payload (may be empty with `fin`).
        data: Bytes,
    },
    /// RST_STREAM: the stream is gone.
    Reset {
        /// The stream.
        stream_id: u32,
    },
    /// PING: to be echoed when its id is odd (the client's).
    Ping {
        /// The ping's id.
        id: u32,
    },
    /// GOAWAY: the client opens no more streams and is closing.
    GoAway,
    /// Any other frame (SETTINGS, WINDOW_UPDATE, HEADERS, ...), read and skipped.
    Skipped,
}

fn invalid(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

fn be32(b: &[u8], at: usize) -> io::Result<u32> {
    b.get(at..at + 4).map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]])).ok_or_else(|| invalid("SPDY frame too short"))
}

/// Reads frames from the client.
#[derive(Debug)]
pub struct Reader<R> {
    io: R,
    inflate: Decompress,
}

impl<R: AsyncRead + Unpin> Reader<R> {
    /// Reads from `io` (which should be buffered).
    pub fn new(io: R) -> Self {
        Self { io, inflate: Decompress::new(true) }
    }

    /// The next frame; `None` at a clean end of the connection between frames.
    pub async fn next(&mut self) -> io::Result<Option<Frame>> {
        let mut head = [0u8; 8];
        match self.io.read_exact(&mut head).await {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        let len = usize::from(head[5]) << 16 | usize::from(head[6]) << 8 | usize::from(head[7]);
        let mut payload = vec![0u8; len];
        self.io.read_exact(&mut payload).await?;
        let flags = head[4];
        if head[0] & 0x80 == 0 {
            let stream_id = be32(&head, 0)? & 0x7fff_ffff;
            return Ok(Some(Frame::Data { stream_id, fin: flags & FLAG_FIN != 0, data: Bytes::from(payload) }));
        }
        let version = u16::from_be_bytes([head[0], head[1]]) & 0x7fff;
        if version != VERSION {
            return Err(invalid(format!("unsupported SPDY version {version}")));
        }
        let frame = match u16::from_be_bytes([head[2], head[3]]) {
            SYN_STREAM => {
                let stream_id = be32(&payload, 0)? & 0x7fff_ffff;
                let block = payload.get(10..).ok_or_else(|| invalid("SYN_STREAM too short"))?;
                let headers = parse_headers(&self.inflate(block)?)?;
                Frame::SynStream { stream_id, fin: flags & FLAG_FIN != 0, headers }
            }
            SYN_REPLY | HEADERS => {
                // Not expected from a client, but inflated to keep the zlib stream in step.
                self.inflate(payload.get(4..).ok_or_else(|| invalid("header frame too short"))?)?;
                Frame::Skipped
            }
            RST_STREAM => Frame::Reset { stream_id: be32(&payload, 0)? & 0x7fff_ffff },
            PING => Frame::Ping { id: be32(&payload, 0)? },
            GOAWAY => Frame::GoAway,
            _ => Frame::Skipped,
        };
        Ok(Some(frame))
    }

    /// Inflates one header block, continuing the connection's zlib stream.
    fn inflate(&mut self, mut input: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(256);
        loop {
            if out.len() == out.capacity() {
                if out.len() >= MAX_HEADER_BLOCK {
                    return Err(invalid("SPDY header block too large"));
                }
                out.reserve(out.len());
            }
            let (in_before, out_before) = (self.inflate.total_in(), out.len());
            match self.inflate.decompress_vec(input, &mut out, FlushDecompress::Sync) {
                Ok(_) => {}
                Err(e) if e.needs_dictionary().is_some() => {
                    self.inflate.set_dictionary(&DICTIONARY).map_err(|e| invalid(format!("SPDY header dictionary: {e}")))?;
                }
                Err(e) => return Err(invalid(format!("SPDY header block: {e}"))),
            }
            let used = usize::try_from(self.inflate.total_in() - in_before).unwrap_or(usize::MAX).min(input.len());
            input = &input[used..];
            if input.is_empty() && out.len() < out.capacity() {
                return Ok(out);
            }
            if used == 0 && out.len() == out_before && out.len() < out.capacity() {
                return Err(invalid("SPDY header block does not inflate"));
            }
        }
    }
}

/// A SPDY/3 name/value block: a count, then length-prefixed names and values.
fn parse_headers(block: &[u8]) -> io::Result<Vec<(String, String)>> {
    let mut at = 4;
    let mut next = || -> io::Result<String> {
        let len = usize::try_from(be32(block, at)?).map_err(|_| invalid("header length"))?;
        let s = block.get(at + 4..at.saturating_add(4).saturating_add(len)).ok_or_else(|| invalid("header block too short"))?;
        at += 4 + len;
        Ok(String::from_utf8_lossy(s).into_owned())
    };
    let count = be32(block, 0)?;
    let mut headers = Vec::new();
    for _ in 0..count {
        let name = next()?;
        let value = next()?;
        headers.push((name, value));
    }
    Ok(headers)
}

/// Writes frames to the client.
#[derive(Debug)]
pub struct Writer<W> {
    io: W,
    deflate: Compress,
}

impl<W: AsyncWrite + Unpin> Writer<W> {
    /// Writes to `io`.
    pub fn new(io: W) -> Self {
        let mut deflate = Compress::new(Compression::best(), true);
        deflate.set_dictionary(&DICTIONARY).expect("a fresh deflate stream takes a dictionary");
        Self { io, deflate }
    }

    /// SYN_REPLY without headers: the stream is accepted.
    pub async fn reply(&mut self, stream_id: u32) -> io::Result<()> {
        let block = self.deflate(&0u32.to_be_bytes())?;
        let mut payload = (stream_id & 0x7fff_ffff).to_be_bytes().to_vec();
        payload.extend_from_slice(&block);
        self.control(SYN_REPLY, 0, &payload).await
    }

    /// DATA on `stream_id`; `fin` ends the server's side of the stream.
    pub async fn data(&mut self, stream_id: u32, fin: bool, data: &[u8]) -> io::Result<()> {
        for (i, chunk) in data.chunks(0xff_ffff).enumerate() {
            let last = (i + 1) * 0xff_ffff >= data.len();
            self.frame((stream_id & 0x7fff_ffff).to_be_bytes(), if fin && last { FLAG_FIN } else { 0 }, chunk).await?;
        }
        if data.is_empty() {
            self.frame((stream_id & 0x7fff_ffff).to_be_bytes(), if fin { FLAG_FIN } else { 0 }, &[]).await?;
        }
        Ok(())
    }

    /// PING with `id` (the echo of a client's ping).
    pub async fn ping(&mut self, id: u32) -> io::Result<()> {
        self.control(PING, 0, &id.to_be_bytes()).await
    }

    async fn control(&mut self, kind: u16, flags: u8, payload: &[u8]) -> io::Result<()> {
        let [v0, v1] = (0x8000 | VERSION).to_be_bytes();
        let [k0, k1] = kind.to_be_bytes();
        self.frame([v0, v1, k0, k1], flags, payload).await
    }

    async fn frame(&mut self, first: [u8; 4], flags: u8, payload: &[u8]) -> io::Result<()> {
        let len = u32::try_from(payload.len()).ok().filter(|l| *l <= 0xff_ffff).ok_or_else(|| invalid("SPDY frame too large"))?;
        let [_, l0, l1, l2] = len.to_be_bytes();
        let mut out = Vec::with_capacity(8 + payload.len());
        out.extend_from_slice(&first);
        out.extend_from_slice(&[flags, l0, l1, l2]);
        out.extend_from_slice(payload);
        self.io.write_all(&out).await?;
        self.io.flush().await
    }

    /// Deflates one header block, continuing the connection's zlib stream
    /// and ending it with a sync flush.
    fn deflate(&mut self, mut input: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(64);
        loop {
            if out.len() == out.capacity() {
                out.reserve(out.len().max(64));
            }
            let before = self.deflate.total_in();
            self.deflate.compress_vec(input, &mut out, FlushCompress::Sync).map_err(|e| invalid(format!("deflate: {e}")))?;
            let used = usize::try_from(self.deflate.total_in() - before).unwrap_or(usize::MAX).min(input.len());
            input = &input[used..];
            if input.is_empty() && out.len() < out.capacity() {
                return Ok(out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the server writes, read back by a reader of the same code: the
    /// header streams of both directions line up.
    #[tokio::test]
    async fn frames_round_trip_through_the_shared_header_streams() {
        let (client, server) = tokio::io::duplex(4096);
        let mut w = Writer::new(server);
        let mut r = Reader::new(client);
        w.reply(1).await.expect("write");
        w.data(1, false, b"hello").await.expect("write");
        w.reply(3).await.expect("write");
        w.data(3, true, b"").await.expect("write");
        w.ping(5).await.expect("write");
        // A reply is read (and inflated) as a skipped frame.
        assert_eq!(r.next().await.expect("read"), Some(Frame::Skipped));
        assert_eq!(r.next().await.expect("read"), Some(Frame::Data { stream_id: 1, fin: false, data: Bytes::from_static(b"hello") }));
        assert_eq!(r.next().await.expect("read"), Some(Frame::Skipped));
        assert_eq!(r.next().await.expect("read"), Some(Frame::Data { stream_id: 3, fin: true, data: Bytes::new() }));
        assert_eq!(r.next().await.expect("read"), Some(Frame::Ping { id: 5 }));
        drop(w);
        assert_eq!(r.next().await.expect("read"), None);
    }

    #[tokio::test]
    async fn garbage_is_an_error_not_a_panic() {
        for bytes in [
            &[0x80, 0x02, 0, 1, 0, 0, 0, 0][..],
            &[0x80, 0x03, 0, 1, 0, 0, 0, 2, 0, 0],
            &[0x80, 0x03, 0, 1, 0, 0, 0, 12, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 2],
        ] {
            let mut r = Reader::new(bytes);
            assert!(r.next().await.is_err(), "{bytes:?}");
        }
        assert!(parse_headers(&[0, 0, 0, 1, 0, 0, 0, 9, b'a']).is_err());
    }
}
