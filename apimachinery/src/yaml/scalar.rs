//! Which style a scalar is written in, as go-yaml v2's emitter chooses it
//! (`emitterc.go`, a port of libyaml): the style `yaml.Marshal` asks for
//! ([`string_style`]), what the scalar's characters allow
//! ([`Analysis`], libyaml's `yaml_emitter_analyze_scalar`), and the style
//! that wins ([`select_scalar_style`]).
//!
//! Invariants: block context and implicit tags only (what `yaml.Marshal` of
//! JSON values drives); a style the characters do not allow falls back as
//! libyaml's does: plain to single-quoted, single-quoted and literal to
//! double-quoted, which allows everything.

use super::resolve;

/// A scalar's style (go-yaml never asks for folded ones).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

/// `stringv`'s style request: literal for text with `\n`, plain when it
/// would read back as the same string, double-quoted otherwise.
pub(super) fn string_style(s: &str) -> Style {
    if s.contains('\n') {
        Style::Literal
    } else if resolve::plain_safe(s) {
        Style::Plain
    } else {
        Style::DoubleQuoted
    }
}

/// `yaml_emitter_select_scalar_style` (block context, implicit tags).
pub(super) fn select_scalar_style(value: &str, requested: Style, a: &Analysis, simple_key: bool) -> Style {
    let mut style = requested;
    if simple_key && a.multiline {
        style = Style::DoubleQuoted;
    }
    if style == Style::Plain && (!a.block_plain_allowed || (value.is_empty() && simple_key)) {
        style = Style::SingleQuoted;
    }
    if style == Style::SingleQuoted && !a.single_quoted_allowed {
        style = Style::DoubleQuoted;
    }
    if style == Style::Literal && (!a.block_allowed || simple_key) {
        style = Style::DoubleQuoted;
    }
    style
}

/// `yaml_emitter_analyze_scalar`, reduced to what block context reads.
pub(super) struct Analysis {
    pub(super) multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

impl Analysis {
    pub(super) fn of(value: &str) -> Analysis {
        if value.is_empty() {
            return Analysis { multiline: false, block_plain_allowed: true, single_quoted_allowed: true, block_allowed: false };
        }
        let mut block_indicators = value.starts_with("---") || value.starts_with("...");
        let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) = (false, false, false, false);
        let (mut break_space, mut space_break, mut special_characters, mut line_breaks) = (false, false, false, false);
        let (mut previous_space, mut previous_break) = (false, false);
        let mut preceded_by_whitespace = true;
        let bytes = value.as_bytes();
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            let c = if b.is_ascii() { char::from(b) } else { value[i..].chars().next().unwrap_or_default() };
            let (first, next) = (i == 0, i + c.len_utf8());
            i = next;
            // Blanks are ASCII: the next byte tells.
            let followed_by_whitespace = bytes.get(next).is_none_or(|&b| is_blank(char::from(b)));
            let last = next == bytes.len();
            block_indicators |= match c {
                ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"' | '%' | '@' | '`' => first,
                '?' | '-' => first && followed_by_whitespace,
                ':' => followed_by_whitespace,
                // Always true for the first character.
                '#' => preceded_by_whitespace,
                _ => false,
            };
            special_characters |= !is_printable(c);
            if c == ' ' {
                leading_space |= first;
                trailing_space |= last;
                break_space |= previous_break;
                (previous_space, previous_break) = (true, false);
            } else if is_break(c) {
                line_breaks = true;
                leading_break |= first;
                trailing_break |= last;
                space_break |= previous_space;
                (previous_space, previous_break) = (false, true);
            } else {
                (previous_space, previous_break) = (false, false);
            }
            preceded_by_whitespace = is_blank(c) || is_break(c) || c == '\0';
        }
        let no_plain = leading_space || leading_break || trailing_space || trailing_break || line_breaks || block_indicators;
        Analysis {
            multiline: line_breaks,
            block_plain_allowed: !(no_plain || break_space || space_break || special_characters),
            single_quoted_allowed: !(break_space || space_break || special_characters),
            block_allowed: !(trailing_space || space_break || special_characters),
        }
    }
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

pub(super) fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// libyaml's `is_printable` on UTF-8: `\n`, ASCII graphic characters and
/// space, U+00A0 to U+D7FF and U+E000 to U+FFFD except U+FEFF. Tabs,
/// other controls and everything beyond the BMP (emoji) are not.
pub(super) fn is_printable(c: char) -> bool {
    matches!(c, '\n' | ' '..='~' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}') && c != '\u{feff}'
}
