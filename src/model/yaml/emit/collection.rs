//! A mapping or sequence as the emitter writes it: where it opened, its entries' indentation, and
//! whether it has any yet (an empty one is written `{}` or `[]` when it ends).

use std::io::Write;

use serde::Serialize;
use serde::ser;
use serde_saphyr::SerializeError as Error;

use super::keys::KeySink;
use super::{At, Emitter};

/// A mapping or sequence being written.
pub(in crate::model::yaml) struct Collection<'a, 'w, W: Write> {
    em: &'a mut Emitter<'w, W>,
    opened: At,
    indent: usize,
    first: bool,
}

impl<'a, 'w, W: Write> Collection<'a, 'w, W> {
    pub(super) fn open(em: &'a mut Emitter<'w, W>, sequence: bool) -> Self {
        let indent = em.open(sequence);
        Collection {
            opened: em.at,
            em,
            indent,
            first: true,
        }
    }

    fn key(&mut self, key: &str) -> Result<(), Error> {
        self.em.entry(self.opened, self.indent, self.first)?;
        self.first = false;
        self.em.key(key)?;
        self.em.write(b":")?;
        self.em.at = At::Value { indent: self.indent };
        Ok(())
    }

    fn end(self, marker: &[u8]) -> Result<(), Error> {
        if self.first {
            self.em.empty(self.opened, marker)?;
        }
        Ok(())
    }
}

impl<W: Write> ser::SerializeSeq for Collection<'_, '_, W> {
    type Ok = ();
    type Error = Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        self.em.entry(self.opened, self.indent, self.first)?;
        self.first = false;
        self.em.write(b"- ")?;
        self.em.at = At::Item { indent: self.indent };
        v.serialize(&mut *self.em)
    }

    fn end(self) -> Result<(), Error> {
        Collection::end(self, b"[]")
    }
}

impl<W: Write> ser::SerializeMap for Collection<'_, '_, W> {
    type Ok = ();
    type Error = Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        let mut text = std::mem::take(&mut self.em.key_buf);
        text.clear();
        key.serialize(KeySink(&mut text))?;
        let written = self.key(&text);
        self.em.key_buf = text;
        written
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        v.serialize(&mut *self.em)
    }

    fn end(self) -> Result<(), Error> {
        Collection::end(self, b"{}")
    }
}

impl<W: Write> ser::SerializeStruct for Collection<'_, '_, W> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> Result<(), Error> {
        self.key(key)?;
        v.serialize(&mut *self.em)
    }

    fn end(self) -> Result<(), Error> {
        Collection::end(self, b"{}")
    }
}
