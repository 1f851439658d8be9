//! A map whose entries are held by a count of holders: the engine's way of knowing when the last route
//! that used a cluster, a secret or a Backend lets go of it.

use std::collections::BTreeMap;

#[derive(Debug, Clone)]
pub struct Counted<K, V> {
    map: BTreeMap<K, (usize, V)>,
}

impl<K, V> Default for Counted<K, V> {
    fn default() -> Self {
        Self { map: BTreeMap::new() }
    }
}

impl<K: Ord, V> crate::api::dense::Densify for Counted<K, V> {
    fn densify(&mut self) {
        self.map.densify();
    }
}

impl<K: Ord + Clone, V> Counted<K, V> {
    /// One more holder of `key`; the value becomes `value`. Holders of one key agree on it once an
    /// update is done (they read the same objects, so they are redone together); the newest is the one
    /// they will agree on.
    pub fn add(&mut self, key: &K, value: V) {
        match self.map.get_mut(key) {
            Some(slot) => *slot = (slot.0 + 1, value),
            None => {
                self.map.insert(key.clone(), (1, value));
            }
        }
    }

    /// One holder fewer; true if that was the last.
    pub fn remove(&mut self, key: &K) -> bool {
        let Some(slot) = self.map.get_mut(key) else {
            return false;
        };
        slot.0 -= 1;
        if slot.0 == 0 {
            self.map.remove(key);
            return true;
        }
        false
    }

    pub fn get<Q: Ord + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: std::borrow::Borrow<Q>,
    {
        self.map.get(key).map(|(_, v)| v)
    }

    pub fn contains(&self, key: &K) -> bool {
        self.map.contains_key(key)
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.map.keys()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_lives_as_long_as_its_last_holder() {
        let mut c: Counted<&str, u8> = Counted::default();
        c.add(&"a", 1);
        c.add(&"a", 2);
        assert!(!c.remove(&"a"));
        assert_eq!(c.get(&"a"), Some(&2), "the newest value is kept");
        assert!(c.remove(&"a"));
        assert!(!c.contains(&"a"));
        assert!(!c.remove(&"a"), "removing what is not there is not a last holder");
    }
}
