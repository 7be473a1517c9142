//! Table watches (`kubectl get -w`): a stream's frames rewritten, as they
//! leave, into the apiserver's one-row Table events — the first carrying
//! the column definitions, every later one `null` — with ages computed as
//! each frame is sent. ERROR events pass unchanged; a BOOKMARK is the row
//! of the kind's empty object, as the apiserver prints it (streams with
//! bookmarks are answered only where the printer prints that object: the
//! router leaves the others to the apiserver). An object the printer
//! cannot read ends the stream rather than show a wrong row.

use std::sync::Arc;

use apimachinery::partial::MetaVersion;
use apimachinery::table::{self, IncludeObject, Printer};
use apimachinery::watch::{EventType, WatchDecoder, json_frame};
use bytes::{Bytes, BytesMut};

/// The largest frame a stream may hold (the store's objects are below it).
const MAX_FRAME: usize = 64 << 20;

/// One stream's rewriting.
pub struct TableFrames {
    printer: Arc<Printer>,
    include: IncludeObject,
    version: MetaVersion,
    /// The resource: rows carry its metadata as metadata-only answers do.
    res: apimachinery::resource::Resource,
    decoder: WatchDecoder,
    columns_sent: bool,
}

impl TableFrames {
    pub fn new(printer: Arc<Printer>, include: IncludeObject, version: MetaVersion, res: apimachinery::resource::Resource) -> TableFrames {
        TableFrames { printer, include, version, res, decoder: WatchDecoder::new(MAX_FRAME), columns_sent: false }
    }

    /// The whole frames of `chunk` as Table events; `None` ends the stream.
    pub fn convert(&mut self, chunk: &[u8]) -> Option<Bytes> {
        self.decoder.push(chunk);
        let now = table::unix_now();
        let mut out = BytesMut::new();
        while let Some(frame) = self.decoder.next_frame().ok()? {
            if frame.typ == EventType::Error {
                out.extend_from_slice(&json_frame(frame.typ, &[&frame.object]));
                continue;
            }
            let parts =
                table::json_watch_table(self.version, &self.printer, self.include, &frame.object, &self.res, !self.columns_sent, now)?;
            self.columns_sent = true;
            out.extend_from_slice(&json_frame(frame.typ, &parts.iter().map(|p| &p[..]).collect::<Vec<_>>()));
        }
        Some(out.freeze())
    }
}
