//! A sorted map that is nearly always one entry: a hostname's entries when every route has its own
//! hostname, the units that read one object, the integrity check's owners that read one cluster and
//! virtual hosts that carry one domain. A `BTreeMap` allocates an eleven-slot node for its first entry
//! (a few hundred bytes for one key), and the engine and the check keep one such map per host and per
//! name; this keeps a single entry inline and turns into a `BTreeMap` from the second, so a virtual host
//! of thousands of routes still inserts in logarithmic time. A map that shrinks back to one entry stays
//! a `BTreeMap` (rare, never wrong). It lives in `ir`, the layer both `envoy::check` and `translate` may
//! use.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::mem;

use crate::api::dense::Densify;

#[derive(Debug, Clone, Default)]
pub enum Few<K, V> {
    #[default]
    Empty,
    One(K, V),
    Many(BTreeMap<K, V>),
}

impl<K: Ord, V> Few<K, V> {
    /// Inserts `value` at `key`, returning the value it replaces.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self {
            Few::Empty => {
                *self = Few::One(key, value);
                None
            }
            Few::One(k, v) if *k == key => Some(mem::replace(v, value)),
            Few::One(..) => {
                let Few::One(k, v) = mem::take(self) else {
                    unreachable!()
                };
                *self = Few::Many(BTreeMap::from([(k, v), (key, value)]));
                None
            }
            Few::Many(map) => map.insert(key, value),
        }
    }

    /// The value at `key`, inserting `make()` there first if there is none.
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        if let Few::One(k, _) = self
            && *k != key
        {
            let Few::One(k, v) = mem::take(self) else {
                unreachable!()
            };
            *self = Few::Many(BTreeMap::from([(k, v)]));
        }
        if let Few::Empty = self {
            *self = Few::One(key, make());
            let Few::One(_, v) = self else { unreachable!() };
            return v;
        }
        match self {
            Few::One(_, v) => v,
            Few::Many(map) => map.entry(key).or_insert_with(make),
            Few::Empty => unreachable!("filled above"),
        }
    }

    /// The value at `key`.
    pub fn get<Q: Ord + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        match self {
            Few::One(k, v) if Borrow::<Q>::borrow(k) == key => Some(v),
            Few::Many(map) => map.get(key),
            _ => None,
        }
    }

    /// Removes `key`, returning its value.
    pub fn remove<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        match self {
            Few::One(k, _) if Borrow::<Q>::borrow(&*k) == key => match mem::take(self) {
                Few::One(_, v) => Some(v),
                _ => unreachable!(),
            },
            Few::Many(map) => {
                let out = map.remove(key);
                if map.is_empty() {
                    *self = Few::Empty;
                }
                out
            }
            _ => None,
        }
    }

    /// Keeps only the entries `keep` says to.
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) {
        match self {
            Few::Empty => {}
            Few::One(k, v) => {
                if !keep(k, v) {
                    *self = Few::Empty;
                }
            }
            Few::Many(map) => {
                map.retain(|k, v| keep(k, v));
                if map.is_empty() {
                    *self = Few::Empty;
                }
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        matches!(self, Few::Empty)
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> + Clone {
        let (one, many) = match self {
            Few::Empty => (None, None),
            Few::One(k, v) => (Some((k, v)), None),
            Few::Many(map) => (None, Some(map.iter())),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }

    /// The entries in key order, values mutable.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&K, &mut V)> {
        let (one, many) = match self {
            Few::Empty => (None, None),
            Few::One(k, v) => (Some((&*k, v)), None),
            Few::Many(map) => (None, Some(map.iter_mut())),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> + Clone {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &V> + Clone {
        self.iter().map(|(_, v)| v)
    }
}

impl<K: Ord, V> Densify for Few<K, V> {
    fn densify(&mut self) {
        if let Few::Many(map) = self {
            map.densify();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_entry_is_held_inline() {
        let mut few = Few::default();
        few.insert("a", 1);
        assert!(matches!(few, Few::One("a", 1)));
        assert_eq!(few.insert("a", 2), Some(1));
        assert!(matches!(few, Few::One("a", 2)));
    }

    /// Every sequence of inserts and removes over a few keys leaves the same entries, in the same
    /// order, as a `BTreeMap` given the same sequence, with the same values returned on the way.
    #[test]
    fn behaves_as_a_btreemap() {
        let mut seed = 0x9e37_79b9_u32;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        for _ in 0..200 {
            let (mut few, mut tree) = (Few::default(), BTreeMap::new());
            for step in 0..40 {
                let key = next() % 5;
                let op = next() % 7;
                if op < 2 {
                    assert_eq!(few.remove(&key), tree.remove(&key));
                } else if op == 6 {
                    few.retain(|k, _| *k != key);
                    tree.retain(|k, _| *k != key);
                } else if op == 2 {
                    *few.get_or_insert_with(key, || step) += 100;
                    *tree.entry(key).or_insert(step) += 100;
                } else {
                    assert_eq!(few.insert(key, step), tree.insert(key, step));
                }
                assert_eq!(few.iter().collect::<Vec<_>>(), tree.iter().collect::<Vec<_>>());
                assert_eq!(few.is_empty(), tree.is_empty());
                assert_eq!(few.get(&key), tree.get(&key));
                if tree.len() > 1 {
                    assert!(matches!(few, Few::Many(_)));
                }
            }
            for (_, v) in few.iter_mut() {
                *v += 1;
            }
            for v in tree.values_mut() {
                *v += 1;
            }
            assert_eq!(few.values().collect::<Vec<_>>(), tree.values().collect::<Vec<_>>());
        }
    }

    #[test]
    fn densifying_keeps_every_entry_in_order() {
        let mut few = Few::default();
        few.insert(2, 'b');
        few.insert(1, 'a');
        few.densify();
        assert_eq!(few.keys().copied().collect::<Vec<_>>(), [1, 2]);
    }
}
