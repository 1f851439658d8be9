//! What every stream of a fleet would compute alike, computed once and shared while any stream holds
//! it: the mechanism under shared response bodies (`bodies`) and shared merges (`merges`).
//!
//! Entries hold weak references only, so a value lives while a stream holds it and nothing is kept
//! for an idle fleet. A miss is computed under the lock, so the streams of a fan-out wait for one
//! computation rather than each making its own. The memo belongs to the value it derives from (a view,
//! a snapshot): copying that value starts an empty memo, and a memo never makes two values differ.

use std::sync::{Arc, Mutex, Weak};

/// Up to `MAX` live values by key; beyond that a value is computed for its caller alone.
pub struct WeakMemo<K, V, const MAX: usize>(Mutex<Vec<(K, Weak<V>)>>);

impl<K, V, const MAX: usize> WeakMemo<K, V, MAX> {
    /// The value whose key `is`: shared if someone still holds it, else `compute`d and kept (under
    /// `key()`) while held.
    pub fn get(&self, is: impl Fn(&K) -> bool, key: impl FnOnce() -> K, compute: impl FnOnce() -> Arc<V>) -> Arc<V> {
        let mut entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(value) = entries.iter().find(|(k, _)| is(k)).and_then(|(_, w)| w.upgrade()) {
            return value;
        }
        let value = compute();
        entries.retain(|(k, w)| !is(k) && w.strong_count() > 0);
        if entries.len() < MAX {
            entries.push((key(), Arc::downgrade(&value)));
        }
        value
    }

    /// Entries kept, live or not yet pruned.
    pub fn len(&self) -> usize {
        self.0.lock().map_or(0, |v| v.len())
    }
}

impl<K, V, const MAX: usize> Default for WeakMemo<K, V, MAX> {
    fn default() -> Self {
        WeakMemo(Mutex::new(Vec::new()))
    }
}

impl<K, V, const MAX: usize> Clone for WeakMemo<K, V, MAX> {
    /// A copy of the value the memo derives from starts with nothing memoized.
    fn clone(&self) -> Self {
        WeakMemo::default()
    }
}

impl<K, V, const MAX: usize> PartialEq for WeakMemo<K, V, MAX> {
    /// Derived from its owner's content: never makes two owners differ.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<K, V, const MAX: usize> std::fmt::Debug for WeakMemo<K, V, MAX> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WeakMemo({})", self.len())
    }
}
