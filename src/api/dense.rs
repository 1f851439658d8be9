//! Ordered maps rebuilt with full nodes after a bulk load.
//!
//! A `BTreeMap` filled in key order (a first translation inserts routes, clusters and statuses in the
//! order it meets them, which is mostly key order) splits each full node at the middle and never fills
//! the left half again: every node ends six of eleven slots full. At 10,000 routes the engine, the
//! integrity check and the directory cache held 39 MiB of such nodes (DHAT), most of them large
//! values stored inline. Collecting a map from its own sorted entries builds it bottom-up with full
//! nodes instead (the standard library's bulk build): a pass of moves, and two comparisons an entry
//! (it checks that the entries are sorted and distinct).
//!
//! Only after a change large enough that the rebuild costs no more than the change did ([`BULK`]
//! entries or more): the engine at the end of such an update, before the integrity check allocates
//! what it keeps (which reuses the nodes freed here: densifying after publishing instead left 7 MiB
//! more resident at 10,000 routes), the check after checking that many owners, the directory cache as
//! it takes that many files. At 50,000 routes the rebuild did not move readiness. Small updates then
//! split nodes as any B-tree does, and a map under churn settles near two-thirds full.
//!
//! `imbl`'s persistent maps (the model's objects, the directory cache's origins, the statuses and the
//! packed resources a snapshot shares) split the same way and have no bulk build: their leaves ended
//! eight of sixteen entries full. Inserting every other entry first and then the rest fills them: the
//! first pass leaves each leaf half full, and the entries between a leaf's keys are exactly as many as
//! it has room for (60 bytes an entry for a 56-byte entry, against 120 in key order). A rebuilt map
//! shares no node with the map it came from, so only the owner that publishes it rebuilds it, before it
//! does.
//!
//! Here, under every layer, because the model's maps are among them.

use std::collections::{BTreeMap, BTreeSet};

/// How many changes make a bulk load worth densifying after.
pub const BULK: usize = 1024;

/// Rebuilds a sorted collection with full nodes, keeping its contents and order.
pub trait Densify {
    fn densify(&mut self);
}

impl<K: Ord, V> Densify for BTreeMap<K, V> {
    fn densify(&mut self) {
        if self.len() >= 2 {
            *self = std::mem::take(self).into_iter().collect();
        }
    }
}

impl<K: Ord> Densify for BTreeSet<K> {
    fn densify(&mut self) {
        if self.len() >= 2 {
            *self = std::mem::take(self).into_iter().collect();
        }
    }
}

impl<K: Ord + Clone, V: Clone> Densify for imbl::OrdMap<K, V> {
    fn densify(&mut self) {
        if self.len() < 2 {
            return;
        }
        let (mut first, mut then) = (
            Vec::with_capacity(self.len() / 2 + 1),
            Vec::with_capacity(self.len() / 2),
        );
        for (i, entry) in std::mem::take(self).into_iter().enumerate() {
            if i % 2 == 0 {
                first.push(entry)
            } else {
                then.push(entry)
            }
        }
        *self = first.into_iter().chain(then).collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn densifying_keeps_every_entry_in_order() {
        let mut map: BTreeMap<u32, String> = (0..1000).map(|i| (i, i.to_string())).collect();
        map.remove(&500);
        let before: Vec<_> = map.clone().into_iter().collect();
        map.densify();
        assert_eq!(map.into_iter().collect::<Vec<_>>(), before);

        let mut set: BTreeSet<u32> = (0..100).rev().collect();
        set.densify();
        assert_eq!(set.iter().copied().collect::<Vec<_>>(), (0..100).collect::<Vec<_>>());

        let mut persistent: imbl::OrdMap<u32, String> = (0u32..1000).map(|i| (i, i.to_string())).collect();
        persistent.remove(&500);
        let before: Vec<_> = persistent.clone().into_iter().collect();
        persistent.densify();
        assert_eq!(persistent.into_iter().collect::<Vec<_>>(), before);
    }
}
