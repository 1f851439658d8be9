//! A root mapping written entry by entry, its long lists rendered on every core: `pier translate`'s
//! document, whose writing was a sixth of the command at 5,000 routes, on one core.
//!
//! The layout makes the split exact. A root mapping's keys, and a root sequence's dashes, sit at
//! column 0 with nothing written between one entry and the next, so:
//! - a root mapping is its entries each written alone, as a one-entry mapping, one after another;
//! - a non-empty list under a root key is `key:`, a newline, and its items written as root sequences,
//!   in any number of pieces, one after another (a sequence under a key sits at the key's
//!   indentation, so its items are laid out as a root sequence's are).
//!
//! Each piece is rendered by its own [`Emitter`] into its own buffer; what an emitter remembers only
//! spares it work, so the bytes do not depend on where the pieces are cut. A window of pieces is
//! rendered, then written, before the next: what is held as text is one window's items (512), not
//! the document.

use std::io::Write;

use serde::Serialize;
use serde::ser::{self, Error as _, SerializeMap};
use serde_saphyr::SerializeError as Error;

use super::Emitter;

/// Items a worker renders at a time, and items rendered before they are written.
const PIECE: usize = 64;
const WINDOW: usize = 512;

/// A root mapping being written; the caller writes its entries in key order, as a map would. One
/// with no entry writes nothing (a serialized empty mapping is `{}`).
pub struct RootMap<'w, W: Write> {
    out: &'w mut W,
    piece: usize,
    window: usize,
}

impl<'w, W: Write> RootMap<'w, W> {
    pub fn new(out: &'w mut W) -> Self {
        Self::cut(out, PIECE, WINDOW)
    }

    /// With pieces and windows of other sizes (tests cut them small to cross every boundary).
    pub fn cut(out: &'w mut W, piece: usize, window: usize) -> Self {
        RootMap {
            out,
            piece: piece.max(1),
            window: window.max(piece).max(1),
        }
    }

    /// The entry `key: value`.
    pub fn entry<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Error> {
        One(key, value).serialize(&mut Emitter::new(self.out))
    }

    /// The entry `key: items`, the items rendered on every core.
    pub fn list<T: Serialize + Sync>(&mut self, key: &str, items: &[T]) -> Result<(), Error> {
        if items.is_empty() {
            return self.entry(key, items);
        }
        let mut head = Emitter::new(self.out);
        head.key(key)?;
        head.write(b":\n")?;
        for window in items.chunks(self.window) {
            let pieces: Vec<&[T]> = window.chunks(self.piece).collect();
            let rendered = crate::par::map_batches(&pieces, |piece| {
                let mut buf = Vec::new();
                piece.serialize(&mut Emitter::new(&mut buf)).map(|()| buf)
            });
            for piece in rendered {
                self.out.write_all(&piece?).map_err(Error::custom)?;
            }
        }
        Ok(())
    }
}

/// A one-entry mapping.
struct One<'a, T: ?Sized>(&'a str, &'a T);

impl<T: Serialize + ?Sized> Serialize for One<'_, T> {
    fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry(self.0, self.1)?;
        map.end()
    }
}
