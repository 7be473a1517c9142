//! YAML 1.1 implicit typing as go-yaml v2 does it (`resolve.go`), and the
//! Go number syntaxes and formats it relies on (`strconv.ParseInt` and
//! `ParseUint` with base 0, `ParseFloat`, `FormatFloat(f, 'g', -1, 64)`,
//! `time.Parse` with the four timestamp layouts).

use std::borrow::Cow;
use std::fmt::{self, Write as _};

use serde_json::Value;

/// Whether go-yaml may write the string `s` as a plain scalar (`stringv`'s
/// `canUsePlain`): read back unquoted it must still be a string, and it must
/// not look like a YAML 1.1 base 60 float.
pub(super) fn plain_safe(s: &str) -> bool {
    resolves_to_str(s) && !is_base60_float(s)
}

/// A JSON number as go-yaml types it when it reads the JSON text as a plain
/// scalar: an integer when `ParseInt` or `ParseUint` (base 0) accepts it, a
/// float when `ParseFloat` does, and otherwise (out of range, such as `1e400`)
/// the string of its text.
pub(super) fn json_number(text: &str) -> Value {
    match go_int(text, 0) {
        Some(GoInt::Int(i)) => Value::from(i),
        Some(GoInt::Uint(u)) => Value::from(u),
        None => match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Value::from(f),
            _ => Value::String(text.to_owned()),
        },
    }
}

/// `resolve("", s)` gives the `!!str` tag. Its first byte is the hint: a
/// sign or digit for numbers and timestamps, a letter of the YAML 1.1 words,
/// or `.` for `.inf`, `.nan` and floats like `.5`; other strings are strings.
fn resolves_to_str(s: &str) -> bool {
    match s.as_bytes().first() {
        None => false, // null
        Some(b'+' | b'-' | b'0'..=b'9') => !(in_resolve_map(s) || is_timestamp(s) || number_after_underscores(&without_underscores(s))),
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => !in_resolve_map(s),
        Some(b'.') => !(in_resolve_map(s) || dot_float(s)),
        Some(_) => true,
    }
}

/// The values `resolve.go` looks up in its map (bools, nulls, infinities and
/// NaNs); `<<` is left out because its first byte gives no hint, so it is
/// never looked up.
fn in_resolve_map(s: &str) -> bool {
    matches!(
        s,
        "y" | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "true"
            | "True"
            | "TRUE"
            | "on"
            | "On"
            | "ON"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "false"
            | "False"
            | "FALSE"
            | "off"
            | "Off"
            | "OFF"
            | "~"
            | "null"
            | "Null"
            | "NULL"
            | ".nan"
            | ".NaN"
            | ".NAN"
            | ".inf"
            | ".Inf"
            | ".INF"
            | "+.inf"
            | "+.Inf"
            | "+.INF"
            | "-.inf"
            | "-.Inf"
            | "-.INF"
    )
}

fn without_underscores(s: &str) -> Cow<'_, str> {
    if s.contains('_') { Cow::Owned(s.replace('_', "")) } else { Cow::Borrowed(s) }
}

/// The integer and float cases of `resolve`'s digit/sign branch, on the text
/// with underscores removed. (Its `-0b` case accepts nothing that base 0
/// parsing has not already accepted.)
fn number_after_underscores(plain: &str) -> bool {
    go_int(plain, 0).is_some()
        || (yaml_style_float(plain) && plain.parse::<f64>().is_ok_and(f64::is_finite))
        || plain.strip_prefix("0b").is_some_and(|rest| go_int(rest, 2).is_some())
}

enum GoInt {
    Int(i64),
    Uint(u64),
}

/// `strconv.ParseInt(s, base, 64)`, or failing that `ParseUint(s, base, 64)`
/// (which takes no sign). Base 0 reads the `0b`, `0o`, `0x` and `0` prefixes.
fn go_int(s: &str, base: u32) -> Option<GoInt> {
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let magnitude = go_uint(digits, base)?;
    if negative {
        (magnitude <= 1 << 63).then(|| GoInt::Int(0i64.wrapping_sub_unsigned(magnitude)))
    } else if let Ok(i) = i64::try_from(magnitude) {
        Some(GoInt::Int(i))
    } else {
        (digits.len() == s.len()).then_some(GoInt::Uint(magnitude))
    }
}

/// `strconv.ParseUint(s, base, 64)` without underscores.
fn go_uint(s: &str, base: u32) -> Option<u64> {
    let b = s.as_bytes();
    let (base, digits) = match (base, b) {
        (_, []) => return None,
        (0, [b'0', p, _, ..]) if p.eq_ignore_ascii_case(&b'b') => (2, &b[2..]),
        (0, [b'0', p, _, ..]) if p.eq_ignore_ascii_case(&b'o') => (8, &b[2..]),
        (0, [b'0', p, _, ..]) if p.eq_ignore_ascii_case(&b'x') => (16, &b[2..]),
        (0, [b'0', ..]) => (8, &b[1..]),
        (0, _) => (10, b),
        (base, _) => (base, b),
    };
    digits.iter().try_fold(0u64, |n, &c| {
        let d = char::from(c).to_digit(36).filter(|&d| d < base)?;
        n.checked_mul(u64::from(base))?.checked_add(u64::from(d))
    })
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(b, &mut i) == 0 {
            return false;
        }
    } else {
        if digits(b, &mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(b, &mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(b, &mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Skips ASCII digits from `*i`; how many there were.
fn digits(b: &[u8], i: &mut usize) -> usize {
    let start = *i;
    while b.get(*i).is_some_and(u8::is_ascii_digit) {
        *i += 1;
    }
    *i - start
}

/// `strconv.ParseFloat(s, 64)` succeeds for a string starting with `.`: Go's
/// decimal float syntax with `_` allowed only between digits, and no
/// overflow to infinity.
fn dot_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 1;
    let mut mantissa_digits = 0;
    while let Some(&c) = b.get(i).filter(|c| c.is_ascii_digit() || **c == b'_') {
        mantissa_digits += usize::from(c != b'_');
        i += 1;
    }
    if mantissa_digits == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !b.get(i).is_some_and(u8::is_ascii_digit) {
            return false;
        }
        while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'_') {
            i += 1;
        }
    }
    let underscores_between_digits =
        b.iter().enumerate().all(|(j, &c)| c != b'_' || (b[j - 1].is_ascii_digit() && b.get(j + 1).is_some_and(u8::is_ascii_digit)));
    i == b.len() && underscores_between_digits && without_underscores(s).parse::<f64>().is_ok_and(f64::is_finite)
}

/// `isBase60Float`: `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`.
fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    if digits(b, &mut i) == 0 {
        return false;
    }
    while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while b.get(i) == Some(&b':') {
        i += 1;
        let start = i;
        match digits(b, &mut i) {
            1 => {}
            2 if b[start] <= b'5' => {}
            _ => return false,
        }
        groups += 1;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'_') {
            i += 1;
        }
    }
    groups > 0 && i == b.len()
}

/// `parseTimestamp`: exactly four digits and `-`, then Go's `time.Parse` with
/// one of `2006-1-2T15:4:5.999999999Z07:00`, the same with `t`,
/// `2006-1-2 15:4:5.999999999` and `2006-1-2`.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let year = b[..4].iter().fold(0, |y, &d| y * 10 + u32::from(d - b'0'));
    let mut rest = &b[5..];
    let Some(month) = getnum(&mut rest).filter(|m| (1..=12).contains(m)) else {
        return false;
    };
    let Some(day) = literal(&mut rest, b'-').and_then(|()| getnum(&mut rest)) else {
        return false;
    };
    let time_ok = match rest.first() {
        None => true,
        Some(b'T' | b't') => {
            rest = &rest[1..];
            clock(&mut rest) && zone(rest)
        }
        Some(b' ') => {
            while rest.first() == Some(&b' ') {
                rest = &rest[1..];
            }
            clock(&mut rest) && rest.is_empty()
        }
        Some(_) => false,
    };
    time_ok && (1..=days_in(month, year)).contains(&day)
}

/// Go's `getnum(s, false)`: one or two digits.
fn getnum(rest: &mut &[u8]) -> Option<u32> {
    let n = rest.iter().take(2).take_while(|c| c.is_ascii_digit()).count();
    if n == 0 {
        return None;
    }
    let v = rest[..n].iter().fold(0, |v, &d| v * 10 + u32::from(d - b'0'));
    *rest = &rest[n..];
    Some(v)
}

fn literal(rest: &mut &[u8], c: u8) -> Option<()> {
    let (&first, tail) = rest.split_first()?;
    (first == c).then(|| *rest = tail)
}

/// `15:4:5` and an optional `.999999999` (a `.` or `,` then digits, any
/// number of them).
fn clock(rest: &mut &[u8]) -> bool {
    let in_range = |v: Option<u32>, end| v.is_some_and(|v| v < end);
    let ok = in_range(getnum(rest), 24)
        && literal(rest, b':').is_some()
        && in_range(getnum(rest), 60)
        && literal(rest, b':').is_some()
        && in_range(getnum(rest), 60);
    if ok && matches!(rest, [b'.' | b',', d, ..] if d.is_ascii_digit()) {
        let n = 1 + rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        *rest = &rest[n..];
    }
    ok
}

/// `Z07:00` to the end: `Z`, or a sign, two digits of hours up to 24, `:`
/// and two digits of minutes up to 60.
fn zone(rest: &[u8]) -> bool {
    match rest {
        [b'Z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => {
            let two = |a: &u8, b: &u8| (a.is_ascii_digit() && b.is_ascii_digit()).then(|| u32::from(a - b'0') * 10 + u32::from(b - b'0'));
            two(h1, h2).is_some_and(|h| h <= 24) && two(m1, m2).is_some_and(|m| m <= 60)
        }
        _ => false,
    }
}

fn days_in(month: u32, year: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A short ASCII text on the stack (numbers as scalars).
pub(super) struct Text {
    buf: [u8; 40],
    len: usize,
}

impl Text {
    pub(super) fn new() -> Text {
        Text { buf: [0; 40], len: 0 }
    }

    pub(super) fn as_str(&self) -> &str {
        // Only ASCII is ever written (numbers), so this never fails.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default()
    }

    fn push(&mut self, b: u8) {
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        }
    }
}

impl fmt::Write for Text {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        self.buf.get_mut(self.len..end).ok_or(fmt::Error)?.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// `strconv.FormatFloat(f, 'g', -1, 64)` of a finite `f`: the shortest
/// digits that read back as `f`, in `%e` form (`1e+21`, `1.5e-07`) when the
/// decimal exponent is below -4 or at least 6 (the shortest-precision rule),
/// else in `%f` form.
pub(super) fn format_float(f: f64) -> Text {
    let (mantissa, exp) = shortest_digits(f.abs());
    let mut digits = Text::new();
    let _ = write!(digits, "{mantissa}");
    let digits = &digits.buf[..digits.len];
    let digit = |i: i32| usize::try_from(i).ok().and_then(|i| digits.get(i)).copied().unwrap_or(b'0');

    let mut out = Text::new();
    if f.is_sign_negative() {
        out.push(b'-');
    }
    if !(-4..6).contains(&exp) {
        out.push(digit(0));
        if digits.len() > 1 {
            out.push(b'.');
            digits[1..].iter().for_each(|&d| out.push(d));
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.unsigned_abs());
    } else {
        // `%f` with as many decimals as there are digits after the point.
        let point = exp + 1; // digits before the decimal point
        if point > 0 {
            (0..point).for_each(|i| out.push(digit(i)));
        } else {
            out.push(b'0');
        }
        let decimals = digits.len() as i32 - point;
        if decimals > 0 {
            out.push(b'.');
            (0..decimals).for_each(|i| out.push(digit(point + i)));
        }
    }
    out
}

/// The shortest digits that read back as `f` (not negative), closest to
/// it, as an integer, and the decimal exponent of the first digit. Rust's
/// `{:e}` finds them, but where the two closest are equally close (`f` is
/// exactly halfway between) it takes the upper one, and Go the even one.
fn shortest_digits(f: f64) -> (u64, i32) {
    let mut sci = Text::new();
    let _ = write!(sci, "{f:e}");
    let (mantissa, exp) = sci.as_str().split_once('e').unwrap_or(("0", "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits = mantissa.bytes().filter(u8::is_ascii_digit);
    let n = digits.clone().count() as i32;
    let upper = digits.fold(0u64, |m, d| m * 10 + u64::from(d - b'0'));
    // A tie needs the last digit's unit below f's spacing: 16 digits or more.
    if n < 16 || upper % 2 == 0 {
        return (upper, exp);
    }
    let unit = exp - n + 1; // f is about upper * 10^unit
    let lower = upper - 1;
    let tie = exact_decimal(f) == Some(normalized(upper * 10 - 5, unit - 1));
    let even = tie && format!("{lower}e{unit}").parse::<f64>() == Ok(f);
    (if even { lower } else { upper }, exp)
}

/// `f` exactly, as `(m, p)` for m * 10^p without trailing zeros in `m`,
/// when `m` fits 19 digits.
fn exact_decimal(f: f64) -> Option<(u64, i32)> {
    // 767 digits after the first are enough for any f64.
    let text = format!("{f:.767e}");
    let (mantissa, exp) = text.split_once('e')?;
    let digits = mantissa.replace('.', "");
    let significant = digits.trim_end_matches('0');
    if significant.len() > 19 {
        return None;
    }
    let exp: i32 = exp.parse().ok()?;
    Some(normalized(significant.parse().ok()?, exp - significant.len() as i32 + 1))
}

fn normalized(mut m: u64, mut p: i32) -> (u64, i32) {
    while m != 0 && m.is_multiple_of(10) {
        m /= 10;
        p += 1;
    }
    (m, p)
}
