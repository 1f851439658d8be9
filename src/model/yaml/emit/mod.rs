//! YAML written straight from serde's calls, for `pier translate`: the bytes serde-saphyr writes with
//! pier's options (`to_yaml`), without its per-node bookkeeping.
//!
//! Why: at 5,000 routes the document took 300 ms to write as YAML against 160 ms as JSON (`scale
//! phases`), the difference being serde-saphyr's checks of every scalar and its layout state. The
//! layout here is the one serde-saphyr gives block collections with two-space steps and compact
//! lists: a sequence under a key at the key's indentation, a mapping or sequence inside a sequence
//! entry starting on the dash's line, empty collections as `{}` and `[]`. Only scalars whose style is
//! certain are written here: strings that start with a letter and hold nothing a plain scalar
//! cannot (printable ASCII, no keyword, no `: `, ` #`, final `:` or trailing space; keys only
//! letters, digits and `._/-`), digits-and-dots strings (double-quoted: YAML 1.1 reads them as
//! numbers), integers and booleans. Every other scalar is rendered by serde-saphyr itself, alone,
//! and remembered, so the rules for quoting, escapes and floats stay serde-saphyr's. The golden
//! `streamed` holds the output byte-identical to `to_yaml` on every case, and a property test
//! (`src/model/yaml/tests/emit.rs`) on generated values.

use std::collections::HashMap;
use std::io::Write;

use serde::Serialize;
use serde::ser::{self, Error as _, Impossible};
use serde_saphyr::SerializeError as Error;

use collection::Collection;

/// Serializer methods for what a document never holds: each refuses, naming `what`.
macro_rules! refuse {
    ($what:expr; $($method:ident($($arg:ty),*) -> $ret:ty),* $(,)?) => {$(
        fn $method(self, $(_: $arg),*) -> Result<$ret, Error> {
            unsupported($what)
        }
    )*};
}

mod collection;
mod keys;
mod root;

pub use root::RootMap;

/// Where the next node goes.
#[derive(Debug, Clone, Copy)]
enum At {
    Root,
    /// After `key:` of a mapping whose keys are at `indent`.
    Value {
        indent: usize,
    },
    /// After `- ` of a sequence whose dashes are at `indent`.
    Item {
        indent: usize,
    },
}

/// Scalars rendered by serde-saphyr up to this length are remembered (keys, reasons, messages repeat),
/// up to this many of each, so the memory stays bounded whatever the document.
const REMEMBERED: usize = 64;
const REMEMBERED_COUNT: usize = 1_024;

pub(super) struct Emitter<'w, W: Write> {
    out: &'w mut W,
    at: At,
    values: HashMap<String, String>,
    keys: HashMap<String, String>,
    /// A key's text, reused from key to key.
    key_buf: String,
}

impl<'w, W: Write> Emitter<'w, W> {
    pub(super) fn new(out: &'w mut W) -> Self {
        Emitter {
            out,
            at: At::Root,
            values: HashMap::new(),
            keys: HashMap::new(),
            key_buf: String::new(),
        }
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.out.write_all(bytes).map_err(Error::custom)
    }

    fn indent(&mut self, n: usize) -> Result<(), Error> {
        const SPACES: &[u8] = &[b' '; 64];
        let mut left = n;
        while left > 0 {
            let step = left.min(SPACES.len());
            self.write(&SPACES[..step])?;
            left -= step;
        }
        Ok(())
    }

    /// A scalar, already rendered, in the current place.
    fn scalar(&mut self, text: &str) -> Result<(), Error> {
        put(self.out, self.at, text)
    }

    fn string(&mut self, s: &str) -> Result<(), Error> {
        if plain_value(s) {
            return self.scalar(s);
        }
        if numeral(s) {
            if matches!(self.at, At::Value { .. }) {
                self.write(b" ")?;
            }
            self.write(b"\"")?;
            self.write(s.as_bytes())?;
            return self.write(b"\"\n");
        }
        if let Some(r) = self.values.get(s) {
            return put(self.out, self.at, r);
        }
        let r = alone(&s)?;
        put(self.out, self.at, &r)?;
        if s.len() <= REMEMBERED && self.values.len() < REMEMBERED_COUNT {
            self.values.insert(s.to_string(), r);
        }
        Ok(())
    }

    fn key(&mut self, s: &str) -> Result<(), Error> {
        if plain_key(s) {
            return self.write(s.as_bytes());
        }
        if let Some(r) = self.keys.get(s) {
            return self.out.write_all(r.as_bytes()).map_err(Error::custom);
        }
        let mut one = serde_json::Map::new();
        one.insert(s.to_string(), serde_json::Value::Null);
        let entry = super::to_yaml(&one)?;
        let r = entry
            .strip_suffix(": null\n")
            .ok_or_else(|| Error::custom(format!("a key renders as {entry:?}")))?
            .to_string();
        self.write(r.as_bytes())?;
        if s.len() <= REMEMBERED && self.keys.len() < REMEMBERED_COUNT {
            self.keys.insert(s.to_string(), r);
        }
        Ok(())
    }

    /// Opens a collection here: the indentation of its entries.
    fn open(&self, sequence: bool) -> usize {
        match self.at {
            At::Root => 0,
            At::Value { indent } if sequence => indent,
            At::Value { indent } | At::Item { indent } => indent + 2,
        }
    }

    /// Starts an entry of a collection opened at `opened`.
    fn entry(&mut self, opened: At, indent: usize, first: bool) -> Result<(), Error> {
        match (first, opened) {
            (true, At::Item { .. } | At::Root) => Ok(()),
            (true, At::Value { .. }) => {
                self.write(b"\n")?;
                self.indent(indent)
            }
            (false, _) => self.indent(indent),
        }
    }

    fn empty(&mut self, opened: At, marker: &[u8]) -> Result<(), Error> {
        if matches!(opened, At::Value { .. }) {
            self.write(b" ")?;
        }
        self.write(marker)?;
        self.write(b"\n")
    }
}

/// `text`, a rendered scalar, at `at`: after a key's `:` with a space, and ending its line.
fn put<W: Write>(out: &mut W, at: At, text: &str) -> Result<(), Error> {
    let lead: &[u8] = if matches!(at, At::Value { .. }) { b" " } else { b"" };
    [lead, text.as_bytes(), b"\n"]
        .iter()
        .try_for_each(|part| out.write_all(part))
        .map_err(Error::custom)
}

/// Spellings YAML 1.1 or 1.2 reads as a boolean, null or non-finite number (any case).
fn keyword(s: &str) -> bool {
    const KEYWORDS: [&str; 11] = [
        "null", "true", "false", "nan", "inf", "yes", "y", "on", "no", "n", "off",
    ];
    s.len() <= 5 && KEYWORDS.iter().any(|k| s.eq_ignore_ascii_case(k))
}

/// A key written plain, as serde-saphyr writes it: a letter, then letters, digits and `._/-`, and no
/// keyword.
fn plain_key(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphabetic()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'/' | b'-'))
        && !keyword(s)
}

/// A value written plain, as serde-saphyr writes it: printable ASCII from a letter on (no number,
/// indicator or document marker can start so), no keyword, and nothing a plain scalar cannot hold
/// (a trailing space, `: `, a final `:`, ` #`).
fn plain_value(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphabetic()
        && b.iter().all(|c| (0x20..0x7f).contains(c))
        && b[b.len() - 1] != b' '
        && !s.contains(": ")
        && !s.ends_with(':')
        && !s.contains(" #")
        && !keyword(s)
}

/// Digits and dots from a digit on (an address, a version, a number as a string): YAML 1.1 reads
/// them as a number, so serde-saphyr double-quotes them, and they need no escape.
fn numeral(s: &str) -> bool {
    s.as_bytes().first().is_some_and(u8::is_ascii_digit) && s.bytes().all(|c| c.is_ascii_digit() || c == b'.')
}

/// `value` as serde-saphyr writes it alone, without its line break.
fn alone<T: Serialize>(value: &T) -> Result<String, Error> {
    let text = super::to_yaml(value)?;
    match text.strip_suffix('\n') {
        Some(line) if !line.contains('\n') => Ok(line.to_string()),
        _ => Err(Error::custom(format!("a scalar renders over lines: {text:?}"))),
    }
}

fn unsupported<T>(what: &str) -> Result<T, Error> {
    Err(Error::custom(format!(
        "the streaming YAML writer does not write {what}"
    )))
}

impl<'a, 'w, W: Write> ser::Serializer for &'a mut Emitter<'w, W> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Collection<'a, 'w, W>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Collection<'a, 'w, W>;
    type SerializeStruct = Collection<'a, 'w, W>;
    type SerializeStructVariant = Impossible<(), Error>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.scalar(if v { "true" } else { "false" })
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.scalar(&v.to_string())
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.scalar(&v.to_string())
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.scalar(&alone(&v)?)
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.scalar(&alone(&v)?)
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.string(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.string(v)
    }
    refuse!("bytes"; serialize_bytes(&[u8]) -> ());
    fn serialize_none(self) -> Result<(), Error> {
        self.scalar("null")
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Error> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.scalar("null")
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
        self.scalar("null")
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), Error> {
        self.string(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<(), Error> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Error> {
        unsupported("enum variants with data")
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Collection<'a, 'w, W>, Error> {
        Ok(Collection::open(self, true))
    }
    refuse!("tuples"; serialize_tuple(usize) -> Impossible<(), Error>);
    refuse!("tuple structs"; serialize_tuple_struct(&'static str, usize) -> Impossible<(), Error>);
    refuse!("enum variants with data";
        serialize_tuple_variant(&'static str, u32, &'static str, usize) -> Impossible<(), Error>,
        serialize_struct_variant(&'static str, u32, &'static str, usize) -> Impossible<(), Error>,
    );
    fn serialize_map(self, _: Option<usize>) -> Result<Collection<'a, 'w, W>, Error> {
        Ok(Collection::open(self, false))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Collection<'a, 'w, W>, Error> {
        Ok(Collection::open(self, false))
    }
}
