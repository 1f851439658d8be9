//! The protobuf wire format, read as far as the writer needs: one message's fields grouped in the
//! order they are written, each field's values typed. Anything prost would not have written (a
//! singular field twice, two members of one oneof, a group, a wire type that does not match the
//! field) makes [`fields`] answer `None`, and that message goes through prost-reflect instead, which
//! defines what such bytes mean.

use prost::encoding::decode_varint;

use super::super::shape::{Card, FieldShape, Fields, Ty};

#[derive(Debug, Clone, Copy)]
pub(super) enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Len(&'a [u8]),
    Fixed32(u32),
}

/// Each field of a message (number, value), in the order written; `None` at the first malformed
/// field or group.
pub(super) fn read(mut bytes: &[u8]) -> impl Iterator<Item = Option<(u32, Wire<'_>)>> {
    std::iter::from_fn(move || {
        if bytes.is_empty() {
            return None;
        }
        Some(next(&mut bytes))
    })
}

fn next<'a>(bytes: &mut &'a [u8]) -> Option<(u32, Wire<'a>)> {
    let key = decode_varint(bytes).ok()?;
    let number = u32::try_from(key >> 3).ok()?;
    let wire = match key & 7 {
        0 => Wire::Varint(decode_varint(bytes).ok()?),
        1 => Wire::Fixed64(u64::from_le_bytes(take(bytes, 8)?.try_into().ok()?)),
        2 => {
            let len = usize::try_from(decode_varint(bytes).ok()?).ok()?;
            Wire::Len(take(bytes, len)?)
        }
        5 => Wire::Fixed32(u32::from_le_bytes(take(bytes, 4)?.try_into().ok()?)),
        _ => return None,
    };
    Some((number, wire))
}

/// Fields 1 and 2 of a message (an `Any`, a map entry, a duration, a wrapper), each written at most
/// once; `None` if either is written twice or the bytes are malformed.
pub(super) fn pair(bytes: &[u8]) -> Option<[Option<Wire<'_>>; 2]> {
    let mut found = [None, None];
    for item in read(bytes) {
        let (number, wire) = item?;
        let slot = number
            .checked_sub(1)
            .and_then(|i| found.get_mut(usize::try_from(i).ok()?));
        if slot.is_some_and(|slot| slot.replace(wire).is_some()) {
            return None;
        }
    }
    Some(found)
}

fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if bytes.len() < n {
        return None;
    }
    let (head, rest) = bytes.split_at(n);
    *bytes = rest;
    Some(head)
}

/// One value, typed.
#[derive(Debug, Clone, Copy)]
pub(super) enum Scalar<'a> {
    I32(i32),
    I64(i64),
    U32(u32),
    U64(u64),
    F32(f32),
    F64(f64),
    Bool(bool),
    Str(&'a str),
    /// Written as base64, as prost-reflect writes bytes.
    Bytes(&'a [u8]),
    Enum(u32, i32),
    Message(u32, &'a [u8]),
}

impl Scalar<'_> {
    /// As prost-reflect judges a field without presence unset.
    fn is_default(&self) -> bool {
        match *self {
            Scalar::I32(n) | Scalar::Enum(_, n) => n == 0,
            Scalar::I64(n) => n == 0,
            Scalar::U32(n) => n == 0,
            Scalar::U64(n) => n == 0,
            Scalar::F32(f) => f == 0.0,
            Scalar::F64(f) => f == 0.0,
            Scalar::Bool(b) => !b,
            Scalar::Str(s) => s.is_empty(),
            Scalar::Bytes(b) => b.is_empty(),
            Scalar::Message(..) => false,
        }
    }
}

/// `wire` read as a single value of type `ty`, as prost decodes it (integers truncated to their width).
pub(super) fn scalar(ty: Ty, wire: Wire<'_>) -> Option<Scalar<'_>> {
    Some(match (ty, wire) {
        (Ty::Int32, Wire::Varint(v)) => Scalar::I32(v as i32),
        (Ty::Int64, Wire::Varint(v)) => Scalar::I64(v as i64),
        (Ty::Uint32, Wire::Varint(v)) => Scalar::U32(v as u32),
        (Ty::Uint64, Wire::Varint(v)) => Scalar::U64(v),
        (Ty::Bool, Wire::Varint(v)) => Scalar::Bool(v != 0),
        (Ty::Enum(e), Wire::Varint(v)) => Scalar::Enum(e, v as i32),
        (Ty::Sint32, Wire::Varint(v)) => {
            let v = v as u32;
            Scalar::I32(((v >> 1) as i32) ^ -((v & 1) as i32))
        }
        (Ty::Sint64, Wire::Varint(v)) => Scalar::I64(((v >> 1) as i64) ^ -((v & 1) as i64)),
        (Ty::Fixed32, Wire::Fixed32(v)) => Scalar::U32(v),
        (Ty::Sfixed32, Wire::Fixed32(v)) => Scalar::I32(v as i32),
        (Ty::Float, Wire::Fixed32(v)) => Scalar::F32(f32::from_bits(v)),
        (Ty::Fixed64, Wire::Fixed64(v)) => Scalar::U64(v),
        (Ty::Sfixed64, Wire::Fixed64(v)) => Scalar::I64(v as i64),
        (Ty::Double, Wire::Fixed64(v)) => Scalar::F64(f64::from_bits(v)),
        (Ty::String, Wire::Len(b)) => Scalar::Str(std::str::from_utf8(b).ok()?),
        (Ty::Bytes, Wire::Len(b)) => Scalar::Bytes(b),
        (Ty::Message(m), Wire::Len(b)) => Scalar::Message(m, b),
        _ => return None,
    })
}

/// The values of a packed list of `ty`: `None` if `ty` cannot be packed or the payload is malformed.
pub(super) fn packed(ty: Ty, mut bytes: &[u8]) -> Option<Vec<Scalar<'_>>> {
    let mut values = Vec::new();
    while !bytes.is_empty() {
        let wire = match ty {
            Ty::Float | Ty::Fixed32 | Ty::Sfixed32 => {
                Wire::Fixed32(u32::from_le_bytes(take(&mut bytes, 4)?.try_into().ok()?))
            }
            Ty::Double | Ty::Fixed64 | Ty::Sfixed64 => {
                Wire::Fixed64(u64::from_le_bytes(take(&mut bytes, 8)?.try_into().ok()?))
            }
            Ty::String | Ty::Bytes | Ty::Message(_) => return None,
            _ => Wire::Varint(decode_varint(&mut bytes).ok()?),
        };
        values.push(scalar(ty, wire)?);
    }
    Some(values)
}

/// One set field: its shape and its values.
pub(super) struct Set<'s, 'a> {
    pub field: &'s FieldShape,
    pub values: Values<'a>,
}

/// A set field's values, as its cardinality has them.
pub(super) enum Values<'a> {
    One(Scalar<'a>),
    /// In the order written.
    List(Vec<Scalar<'a>>),
    /// Key and value (`None`: the type's default), sorted by key, the last of a repeated key kept.
    Map(Vec<(String, Option<Scalar<'a>>)>),
}

/// A message's set fields in the order of `sorted` (by proto name), or `None` where the message is
/// left to prost-reflect (see the module doc).
pub(super) fn fields<'s, 'a>(fields: &'s Fields, bytes: &'a [u8]) -> Option<Vec<Set<'s, 'a>>> {
    let mut found: Vec<(u16, Wire<'a>)> = Vec::new();
    for item in read(bytes) {
        let (number, wire) = item?;
        if let Some(i) = fields.position(number) {
            found.push((i, wire));
        }
    }
    found.sort_by_key(|(i, _)| *i);
    let mut sets: Vec<Set<'s, 'a>> = Vec::new();
    let mut oneofs: Vec<u32> = Vec::new();
    for run in found.chunk_by(|a, b| a.0 == b.0) {
        let field = &fields.sorted[usize::from(run[0].0)];
        let set = match field.card {
            Card::One => one(field, run, &mut oneofs),
            Card::List => list(field, run),
            Card::Map { key, value } => map(field, run, key, value),
        };
        if let Some(set) = set.ok()? {
            sets.push(set);
        }
    }
    Some(sets)
}

type Run<'a> = [(u16, Wire<'a>)];

/// A field encoded as prost never writes it: the message is left to prost-reflect.
struct Unusual;

/// A set field, `None` if its value is its default or it has no values, or [`Unusual`].
type Field<'s, 'a> = Result<Option<Set<'s, 'a>>, Unusual>;

fn usual<T>(value: Option<T>) -> Result<T, Unusual> {
    value.ok_or(Unusual)
}

fn one<'s, 'a>(field: &'s FieldShape, run: &Run<'a>, oneofs: &mut Vec<u32>) -> Field<'s, 'a> {
    let [(_, wire)] = run else { return Err(Unusual) };
    if let Some(o) = field.oneof {
        if oneofs.contains(&o) {
            return Err(Unusual);
        }
        oneofs.push(o);
    }
    let value = usual(scalar(field.ty, *wire))?;
    if !field.presence && value.is_default() {
        return Ok(None);
    }
    Ok(Some(Set {
        field,
        values: Values::One(value),
    }))
}

fn list<'s, 'a>(field: &'s FieldShape, run: &Run<'a>) -> Field<'s, 'a> {
    let mut values = Vec::new();
    for (_, wire) in run {
        match (scalar(field.ty, *wire), wire) {
            (Some(value), _) => values.push(value),
            (None, Wire::Len(bytes)) => values.extend(usual(packed(field.ty, bytes))?),
            (None, _) => return Err(Unusual),
        }
    }
    Ok((!values.is_empty()).then_some(Set {
        field,
        values: Values::List(values),
    }))
}

fn map<'s, 'a>(field: &'s FieldShape, run: &Run<'a>, key_ty: Ty, value_ty: Ty) -> Field<'s, 'a> {
    let mut entries = Vec::with_capacity(run.len());
    for (_, wire) in run {
        let Wire::Len(entry) = wire else { return Err(Unusual) };
        let [key, value] = usual(pair(entry))?;
        let key = key.map(|key| usual(scalar(key_ty, key))).transpose()?;
        let value = value.map(|value| usual(scalar(value_ty, value))).transpose()?;
        entries.push((usual(key_text(key, key_ty))?, value));
    }
    // Sorted as a value's keys; of equal keys the last written wins, as in the decoded map.
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries.reverse();
    entries.dedup_by(|later, earlier| later.0 == earlier.0);
    entries.reverse();
    Ok(Some(Set {
        field,
        values: Values::Map(entries),
    }))
}

/// A map key as JSON writes it; absent, the type's default.
fn key_text(key: Option<Scalar<'_>>, ty: Ty) -> Option<String> {
    Some(match key {
        None => match ty {
            Ty::String => String::new(),
            Ty::Bool => "false".into(),
            _ => "0".into(),
        },
        Some(Scalar::Str(s)) => s.to_string(),
        Some(Scalar::Bool(b)) => b.to_string(),
        Some(Scalar::I32(n)) => n.to_string(),
        Some(Scalar::I64(n)) => n.to_string(),
        Some(Scalar::U32(n)) => n.to_string(),
        Some(Scalar::U64(n)) => n.to_string(),
        Some(_) => return None,
    })
}
