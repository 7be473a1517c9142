//! YAML answers (`Accept: application/yaml`): the JSON document kache
//! writes for the request, rewritten as the apiserver's YAML serializer
//! writes it (`json.Marshal`, then `JSONToYAML`: [`apimachinery::yaml`]).
//!
//! A list or a Table is not converted whole: its one long array (`items`,
//! `rows`) is rewritten an element at a time as the client reads, so a list
//! in flight holds one element's tree, never the list's. The members around
//! that array are small and held until they are written, in go-yaml's key
//! order ([`apimachinery::yaml::key_less`]).
//!
//! Invariant (of the JSON writers, checked here): a streamed array is its
//! document's last member — lists and Tables are written that way — so
//! every member that sorts before it is known when its first element is
//! written. A document that breaks it, or is not JSON, ends the body early
//! (an error the client sees as a cut answer) rather than misplace a member.

use apimachinery::yaml;
use bytes::Bytes;
use serde_json::{Map, Value};

use crate::api::body::Parts;

/// The members streamed an element at a time.
const STREAMED: [&str; 2] = ["items", "rows"];

/// `json`, a JSON document's parts in order, as the YAML document's parts.
pub fn parts(json: impl Iterator<Item = Bytes> + Send + Sync + 'static) -> Parts {
    Box::new(Converter { json, scan: Scan::default(), head: Vec::new(), stream: None, done: false })
}

/// Where the scanner is in the JSON text.
#[derive(Default)]
struct Scan {
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// At depth 1, a member's key is next.
    expect_key: bool,
    /// In `head`: where the current top-level member begins (its `,` or just after `{`) and its key's opening quote.
    member_start: usize,
    key_start: Option<usize>,
}

impl Scan {
    /// Reads `b` if it is inside a string (its closing quote included); `false` otherwise.
    fn string_byte(&mut self, b: u8) -> bool {
        if !self.in_string {
            return false;
        }
        match (self.escaped, b) {
            (true, _) => self.escaped = false,
            (false, b'\\') => self.escaped = true,
            (false, b'"') => self.in_string = false,
            _ => {}
        }
        true
    }
}

/// The streamed array, once reached.
struct Stream {
    key: String,
    /// The members before it, and whether those that sort before it are written.
    members: Map<String, Value>,
    started: bool,
    /// The element being read (its bytes so far).
    element: Vec<u8>,
    /// The array has closed; only `}` may follow.
    closed: bool,
}

struct Converter<I> {
    json: I,
    scan: Scan,
    /// The document's bytes up to the streamed array (all of it when there is none).
    head: Vec<u8>,
    stream: Option<Stream>,
    done: bool,
}

impl<I: Iterator<Item = Bytes>> Iterator for Converter<I> {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        let mut out = Vec::new();
        while out.is_empty() && !self.done {
            let read = match self.json.next() {
                Some(part) => self.feed(&part, &mut out),
                None => {
                    self.done = true;
                    self.finish(&mut out)
                }
            };
            if read.is_none() {
                tracing::error!("a YAML answer's JSON document is not as its writers promise; the answer is cut");
                self.done = true;
                return None;
            }
        }
        (!out.is_empty()).then(|| Bytes::from(out))
    }
}

impl<I> Converter<I> {
    /// Reads `part`, writing the YAML it completes into `out`; `None` if the document breaks the invariant.
    fn feed(&mut self, part: &[u8], out: &mut Vec<u8>) -> Option<()> {
        for &b in part {
            match &mut self.stream {
                None => self.head_byte(b)?,
                Some(stream) => Self::stream_byte(&mut self.scan, stream, b, out)?,
            }
        }
        Some(())
    }

    /// A byte before the streamed array: kept, and watched for the array's start.
    fn head_byte(&mut self, b: u8) -> Option<()> {
        let at = self.head.len();
        self.head.push(b);
        let s = &mut self.scan;
        if s.string_byte(b) {
            return Some(());
        }
        match b {
            b'"' => {
                s.in_string = true;
                if s.depth == 1 && s.expect_key {
                    s.key_start = Some(at);
                    s.expect_key = false;
                }
            }
            b'{' | b'[' => {
                s.depth += 1;
                if s.depth == 1 {
                    s.expect_key = true;
                    s.member_start = at + 1;
                }
                if b == b'[' && s.depth == 2 {
                    return self.start_stream();
                }
            }
            b'}' | b']' => s.depth = s.depth.checked_sub(1)?,
            b',' if s.depth == 1 => {
                s.expect_key = true;
                s.member_start = at;
            }
            _ => {}
        }
        Some(())
    }

    /// At a top-level array's `[`: streams it if it is one of [`STREAMED`].
    fn start_stream(&mut self) -> Option<()> {
        let key_start = self.scan.key_start?;
        let key: String = serde_json::from_slice(json_string_at(&self.head[key_start..])?).ok()?;
        if !STREAMED.contains(&key.as_str()) {
            return Some(());
        }
        let mut members = self.head[..self.scan.member_start].to_vec();
        members.push(b'}');
        let Value::Object(members) = yaml::read_json(&members).ok()? else { return None };
        self.head = Vec::new();
        self.stream = Some(Stream { key, members, started: false, element: Vec::new(), closed: false });
        Some(())
    }

    /// A byte inside (or after) the streamed array.
    fn stream_byte(s: &mut Scan, stream: &mut Stream, b: u8, out: &mut Vec<u8>) -> Option<()> {
        if stream.closed {
            // Only the document's end may follow the array.
            return matches!(b, b'}' | b' ' | b'\n' | b'\r' | b'\t').then_some(());
        }
        if s.string_byte(b) {
            stream.element.push(b);
            return Some(());
        }
        match b {
            b',' | b']' if s.depth == 2 => {
                if !stream.element.iter().all(u8::is_ascii_whitespace) {
                    Self::element(stream, out)?;
                }
                if b == b']' {
                    s.depth = 1;
                    stream.closed = true;
                }
                return Some(());
            }
            b'"' => s.in_string = true,
            b'{' | b'[' => s.depth += 1,
            b'}' | b']' => s.depth -= 1,
            _ => {}
        }
        stream.element.push(b);
        Some(())
    }

    /// The element read, written as a sequence entry (after the members that sort before the array, first).
    fn element(stream: &mut Stream, out: &mut Vec<u8>) -> Option<()> {
        let value = yaml::read_json(&stream.element).ok()?;
        stream.element.clear();
        if !stream.started {
            stream.started = true;
            let before = take_members(&mut stream.members, |k| yaml::key_less(k, &stream.key));
            if !before.is_empty() {
                yaml::write_document(&Value::Object(before), out);
            }
            write_key(&stream.key, out);
        }
        yaml::write_entry(&value, out);
        Some(())
    }

    /// The document's end: what is left to write.
    fn finish(&mut self, out: &mut Vec<u8>) -> Option<()> {
        match self.stream.take() {
            None => {
                let value = yaml::read_json(&self.head).ok()?;
                yaml::write_document(&value, out);
            }
            Some(mut stream) => {
                if !stream.closed {
                    return None;
                }
                if !stream.started {
                    // An empty array: a small document, written whole.
                    stream.members.insert(stream.key, Value::Array(Vec::new()));
                } else if stream.members.is_empty() {
                    return Some(());
                }
                yaml::write_document(&Value::Object(stream.members), out);
            }
        }
        Some(())
    }
}

/// The members of `map` whose keys satisfy `pick`, taken out.
fn take_members(map: &mut Map<String, Value>, pick: impl Fn(&str) -> bool) -> Map<String, Value> {
    let keys: Vec<String> = map.keys().filter(|k| pick(k)).cloned().collect();
    keys.into_iter().filter_map(|k| map.remove_entry(&k)).collect()
}

/// `key:` opening a block sequence, as go-yaml writes a simple key.
fn write_key(key: &str, out: &mut Vec<u8>) {
    // The streamed keys are plain words: written as they are.
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b":\n");
}

/// The JSON string that starts `text` (quotes included).
fn json_string_at(text: &[u8]) -> Option<&[u8]> {
    let mut escaped = false;
    for (i, &b) in text.iter().enumerate().skip(1) {
        match (escaped, b) {
            (true, _) => escaped = false,
            (false, b'\\') => escaped = true,
            (false, b'"') => return Some(&text[..=i]),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The converter's output for `json` cut into pieces of `size` bytes.
    fn streamed(json: &str, size: usize) -> Option<String> {
        let pieces: Vec<Bytes> = json.as_bytes().chunks(size).map(Bytes::copy_from_slice).collect();
        let mut conv = Converter { json: pieces.into_iter(), scan: Scan::default(), head: Vec::new(), stream: None, done: false };
        let mut out = Vec::new();
        for part in conv.by_ref() {
            out.extend_from_slice(&part);
        }
        String::from_utf8(out).ok()
    }

    fn whole(json: &str) -> String {
        String::from_utf8(yaml::from_json(json.as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn a_streamed_document_equals_the_whole_conversion_however_it_is_cut() {
        let docs = [
            r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"12","continue":"x,]}"},"items":[{"metadata":{"name":"a","labels":{"k":"v]"}},"spec":{"containers":[{"name":"c"}]}},{"metadata":{"name":"b\"]"}}]}"#,
            r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"12"},"items":[]}"#,
            r#"{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"3"},"columnDefinitions":[{"name":"Name","type":"string"}],"rows":[{"cells":["a",1],"object":null}]}"#,
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","args":["1","yes"]}]}}"#,
            r#"{"items":[1,"two",{"three":[3]}]}"#,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"pods"},"code":404}"#,
        ];
        for doc in docs {
            let want = whole(doc);
            for size in [1, 2, 7, 64, doc.len()] {
                assert_eq!(streamed(doc, size).as_deref(), Some(want.as_str()), "{doc} in pieces of {size}");
            }
        }
    }

    #[test]
    fn a_member_after_the_streamed_array_cuts_the_answer_rather_than_misplace_it() {
        let doc = r#"{"items":[{"a":1}],"apiVersion":"v1"}"#;
        let out = streamed(doc, 5).unwrap();
        assert!(!out.contains("apiVersion"), "{out}");
        assert_ne!(out, whole(doc));
    }

    #[test]
    fn what_is_not_json_ends_the_answer() {
        assert_eq!(streamed(r#"{"kind":"Pod","#, 3).as_deref(), Some(""));
    }
}
