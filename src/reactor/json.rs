//! A small JSON writer: one object per line, built field by field into a reused `String`.
//!
//! Layer: reactor, under `trace_json.rs` (the structured trace, `EVLOOP_TRACE=json:PATH`),
//! which is its only user. The crate has no dependency but `libc`, so there is no serde: the
//! trace's records are flat objects of numbers, booleans, strings and arrays of those, and
//! this is all it takes to write them correctly. `docs/20-trace-format.md` describes the
//! lines it writes.
//!
//! ```text
//!  Line::begin(buf, "run") .u64("t", 120) .str("at", "src/main.rs:3:5") .end()
//!    -> {"ev":"run","t":120,"at":"src/main.rs:3:5"}\n    appended to buf
//! ```
//!
//! **Strings** are escaped as RFC 8259 requires and no more: `"` and `\` get a backslash,
//! control characters (U+0000 to U+001F) are written `\n`, `\t`, `\r`, `\b`, `\f` or
//! `\u00XX`, and everything else, non-ASCII included, is passed through as UTF-8 (a Rust
//! `&str` is valid UTF-8, so the output is valid JSON). DEL (U+007F) needs no escape.

use std::fmt::Write as _;

/// Appends `s` to `out` as a JSON string, quotes included.
pub(crate) fn string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    // Copy runs of characters that need no escape in one go.
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        // `i` is on a character boundary: the bytes matched above are ASCII.
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// One JSON object being written at the end of a buffer; [`Line::end`] closes it and ends
/// the line. Fields are written in the order they are given; keys are trusted (they are
/// literals of this crate) and written without escaping.
pub(crate) struct Line<'a> {
    out: &'a mut String,
}

impl<'a> Line<'a> {
    /// Opens an object whose first field is `"ev":KIND`.
    pub(crate) fn begin(out: &'a mut String, kind: &str) -> Line<'a> {
        out.push_str("{\"ev\":");
        string(out, kind);
        Line { out }
    }

    fn key(&mut self, key: &str) {
        self.out.push_str(",\"");
        self.out.push_str(key);
        self.out.push_str("\":");
    }

    /// `"key":n`.
    pub(crate) fn u64(mut self, key: &str, n: u64) -> Self {
        self.key(key);
        let _ = write!(self.out, "{n}");
        self
    }

    /// `"key":n`.
    pub(crate) fn i64(mut self, key: &str, n: i64) -> Self {
        self.key(key);
        let _ = write!(self.out, "{n}");
        self
    }

    /// `"key":n`, or `"key":null` for `None`.
    pub(crate) fn opt_u64(mut self, key: &str, n: Option<u64>) -> Self {
        self.key(key);
        match n {
            Some(n) => {
                let _ = write!(self.out, "{n}");
            }
            None => self.out.push_str("null"),
        }
        self
    }

    /// `"key":true` or `false`.
    pub(crate) fn bool(mut self, key: &str, b: bool) -> Self {
        self.key(key);
        self.out.push_str(if b { "true" } else { "false" });
        self
    }

    /// `"key":"escaped text"`.
    pub(crate) fn str(mut self, key: &str, s: &str) -> Self {
        self.key(key);
        string(self.out, s);
        self
    }

    /// `"key":"escaped text"`, or `"key":null` for `None`.
    pub(crate) fn opt_str(mut self, key: &str, s: Option<&str>) -> Self {
        self.key(key);
        match s {
            Some(s) => string(self.out, s),
            None => self.out.push_str("null"),
        }
        self
    }

    /// `"key":[n,n,...]`.
    pub(crate) fn u64s(mut self, key: &str, ns: impl IntoIterator<Item = u64>) -> Self {
        self.key(key);
        self.out.push('[');
        for (i, n) in ns.into_iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            let _ = write!(self.out, "{n}");
        }
        self.out.push(']');
        self
    }

    /// `"key":VALUE` where `value` writes the value itself (an array of objects, say) with
    /// the helpers of this module.
    pub(crate) fn raw(mut self, key: &str, value: impl FnOnce(&mut String)) -> Self {
        self.key(key);
        value(self.out);
        self
    }

    /// Closes the object and ends the line.
    pub(crate) fn end(self) {
        self.out.push_str("}\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quoted(s: &str) -> String {
        let mut out = String::new();
        string(&mut out, s);
        out
    }

    #[test]
    fn plain_text_is_quoted_as_it_is() {
        assert_eq!(quoted("sleeper"), r#""sleeper""#);
        assert_eq!(quoted(""), r#""""#);
    }

    #[test]
    fn hostile_strings_are_escaped() {
        assert_eq!(quoted(r#"say "hi""#), r#""say \"hi\"""#);
        assert_eq!(quoted(r"C:\tmp\x"), r#""C:\\tmp\\x""#);
        assert_eq!(quoted("a\nb\r\tc"), r#""a\nb\r\tc""#);
        assert_eq!(
            quoted("nul\0bell\x07esc\x1b"),
            r#""nul\u0000bell\u0007esc\u001b""#
        );
        assert_eq!(quoted("\x08\x0c\x1f\x7f"), "\"\\b\\f\\u001f\x7f\"");
        // Non-ASCII is UTF-8, untouched, next to escapes.
        assert_eq!(quoted("🦀\"é\n"), "\"🦀\\\"é\\n\"");
    }

    #[test]
    fn a_line_is_one_object_and_a_newline() {
        let mut buf = String::new();
        Line::begin(&mut buf, "run")
            .u64("t", 12)
            .i64("d", -3)
            .opt_u64("none", None)
            .bool("ok", true)
            .str("at", "a.rs:1:2")
            .opt_str("name", None)
            .u64s("ids", [1, 2])
            .u64s("empty", [])
            .raw("obj", |out| out.push_str("{\"fd\":5}"))
            .end();
        assert_eq!(
            buf,
            "{\"ev\":\"run\",\"t\":12,\"d\":-3,\"none\":null,\"ok\":true,\"at\":\"a.rs:1:2\",\
             \"name\":null,\"ids\":[1,2],\"empty\":[],\"obj\":{\"fd\":5}}\n"
        );
    }
}
