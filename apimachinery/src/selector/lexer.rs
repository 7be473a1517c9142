//! The label selector lexer: a byte-level port of Go's `Lexer`
//! (`k8s.io/apimachinery/pkg/labels/selector.go`).
//!
//! Invariants: a NUL byte reads as the end of input; a literal always falls
//! on ASCII byte offsets, so slicing never splits a UTF-8 character.

/// The Go lexer's tokens (`ErrorToken` included for fidelity; unreachable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tok {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special_symbol(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// `string2token` for symbol literals.
fn symbol_token(s: &str) -> Option<Tok> {
    Some(match s {
        ")" => Tok::ClosedPar,
        "," => Tok::Comma,
        "!" => Tok::DoesNotExist,
        "==" => Tok::DoubleEquals,
        "=" => Tok::Equals,
        ">" => Tok::GreaterThan,
        "<" => Tok::LessThan,
        "!=" => Tok::NotEquals,
        "(" => Tok::OpenPar,
        _ => return None,
    })
}

/// Byte-level port of the Go `Lexer`: a NUL byte reads as end of input.
pub(super) struct Lexer<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `s`.
    pub(super) fn new(s: &'a str) -> Self {
        Lexer { s, pos: 0 }
    }

    fn read(&mut self) -> u8 {
        match self.s.as_bytes().get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    /// The literal between two byte offsets; they always fall on ASCII bytes.
    fn slice(&self, start: usize, end: usize) -> &'a str {
        self.s.get(start..end).unwrap_or("")
    }

    fn scan_id_or_keyword(&mut self) -> (Tok, &'a str) {
        let start = self.pos;
        let mut end = start;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if is_special_symbol(ch) || is_whitespace(ch) {
                self.unread();
                break;
            }
            end = self.pos;
        }
        let lit = self.slice(start, end);
        let tok = match lit {
            "in" => Tok::In,
            "notin" => Tok::NotIn,
            _ => Tok::Identifier,
        };
        (tok, lit)
    }

    /// Longest symbol token (`!=` over `!`, `==` over `=`).
    fn scan_special_symbol(&mut self) -> (Tok, &'a str) {
        let start = self.pos;
        let mut last: Option<(Tok, usize)> = None;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if !is_special_symbol(ch) {
                self.unread();
                break;
            }
            if let Some(tok) = symbol_token(self.slice(start, self.pos)) {
                last = Some((tok, self.pos));
            } else if last.is_some() {
                self.unread();
                break;
            }
        }
        match last {
            Some((tok, end)) => (tok, self.slice(start, end)),
            // Unreachable: every single special symbol is a token.
            None => (Tok::Error, "error expected: keyword found"),
        }
    }

    fn skip_whitespaces(&mut self, mut ch: u8) -> u8 {
        while is_whitespace(ch) {
            ch = self.read();
        }
        ch
    }

    pub(super) fn lex(&mut self) -> (Tok, &'a str) {
        let first = self.read();
        match self.skip_whitespaces(first) {
            0 => (Tok::EndOfString, ""),
            ch if is_special_symbol(ch) => {
                self.unread();
                self.scan_special_symbol()
            }
            _ => {
                self.unread();
                self.scan_id_or_keyword()
            }
        }
    }
}
