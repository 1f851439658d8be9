//! [`Name`]: an object's namespace or name, interned.
//!
//! Every unit of the engine keys its memo by the objects it is about, so one route's namespace and
//! name were held as owned strings a dozen times over: the model's map, the directory cache, the
//! route's place and slot in its Gateway, the statuses, the reference counts, the dependency index,
//! the reads of every unit that looked it up. DHAT of `pier serve` at 10,000 routes counted 1.7 million
//! live blocks of 32 bytes or less (`docs/performance.md`), most of them such copies. A `Name` is
//! one shared string: every key built from the same text, anywhere, points at one allocation, so a
//! copy costs a reference count and 8 bytes where it cost a 24-byte `String` and a heap block.
//!
//! The pointer is thin (`arcstr::ArcStr` keeps the length in the allocation, beside the count): an
//! `Arc<str>` is 16 bytes, and a `Name` sits in nearly every key the engine holds (an `ObjectKey` is
//! two), so the fat pointer alone was several MiB at 10,000 routes (`docs/performance.md`).
//!
//! The table is global and holds only weak interest: it is swept of names nothing else holds each
//! time it has doubled since the last sweep, so a long-running server that sees objects come and go
//! holds only the names still in use (plus at most as many again), at amortized O(1) per new name.
//! Interning is invisible to every caller: a `Name` compares, orders and hashes as its text, so maps
//! keyed by it iterate exactly as they did keyed by `String`, and the translator stays deterministic.

use std::borrow::Borrow;
use std::collections::HashSet;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::ops::Deref;
use std::sync::{LazyLock, Mutex};

use arcstr::ArcStr;

/// A namespace or name, shared with every other `Name` of the same text.
#[derive(Clone)]
pub struct Name(ArcStr);

/// Shards, so the read's and the engine's threads rarely wait on each other.
const SHARDS: usize = 16;
/// A shard is not swept below this many names: sweeping a small table would cost more than it frees.
const SWEEP_FLOOR: usize = 1024;

struct Shard {
    names: HashSet<ArcStr, foldhash::fast::FixedState>,
    /// How many names the shard held after its last sweep: the next sweep comes at twice that.
    kept: usize,
}

static TABLE: LazyLock<Vec<Mutex<Shard>>> = LazyLock::new(|| {
    (0..SHARDS)
        .map(|_| {
            Mutex::new(Shard {
                names: HashSet::default(),
                kept: 0,
            })
        })
        .collect()
});

fn shard_of(text: &str) -> usize {
    (foldhash::fast::FixedState::default().hash_one(text) as usize) % SHARDS
}

impl Name {
    /// The shared `Name` for `text`.
    pub fn new(text: &str) -> Name {
        // A poisoned shard only means another thread panicked while inserting: the set itself is
        // still a set of names.
        let mut shard = TABLE[shard_of(text)].lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = shard.names.get(text) {
            return Name(found.clone());
        }
        if shard.names.len() >= SWEEP_FLOOR.max(2 * shard.kept) {
            // A static name (the empty one) has no count and is never swept.
            shard.names.retain(|n| ArcStr::strong_count(n).is_none_or(|c| c > 1));
            shard.kept = shard.names.len();
        }
        let name = ArcStr::from(text);
        shard.names.insert(name.clone());
        Name(name)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Name {
    fn default() -> Name {
        Name::new("")
    }
}

impl Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Name) -> bool {
        ArcStr::ptr_eq(&self.0, &other.0) || *self.0 == *other.0
    }
}

impl Eq for Name {}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Name) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Name {
    fn cmp(&self, other: &Name) -> std::cmp::Ordering {
        if ArcStr::ptr_eq(&self.0, &other.0) {
            return std::cmp::Ordering::Equal;
        }
        self.0.cmp(&other.0)
    }
}

impl Hash for Name {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.as_str().hash(state)
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<Name> for str {
    fn eq(&self, other: &Name) -> bool {
        self == &*other.0
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == &*other.0
    }
}

impl PartialEq<Name> for String {
    fn eq(&self, other: &Name) -> bool {
        **self == *other.0
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl From<&str> for Name {
    fn from(text: &str) -> Name {
        Name::new(text)
    }
}

impl From<&String> for Name {
    fn from(text: &String) -> Name {
        Name::new(text)
    }
}

impl From<String> for Name {
    fn from(text: String) -> Name {
        Name::new(&text)
    }
}

impl From<&Name> for Name {
    fn from(name: &Name) -> Name {
        name.clone()
    }
}

impl serde::Serialize for Name {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_share_one_allocation_and_compare_as_text() {
        let a = Name::new("team-1");
        let b = Name::from(String::from("team-1"));
        assert!(ArcStr::ptr_eq(&a.0, &b.0));
        assert_eq!(a, b);
        let mut sorted = [Name::new("b"), Name::new("a-long-name"), Name::new(""), Name::new("a")];
        sorted.sort();
        let texts: Vec<&str> = sorted.iter().map(Name::as_str).collect();
        assert_eq!(texts, ["", "a", "a-long-name", "b"], "ordered as strings are");
        assert_eq!(a, "team-1");
        assert_eq!(format!("{a}/{a:?}"), "team-1/\"team-1\"");
    }

    /// A `Name` is one thin pointer, so an `ObjectKey` is two.
    #[test]
    fn a_name_is_one_pointer() {
        assert_eq!(std::mem::size_of::<Name>(), std::mem::size_of::<usize>());
        assert_eq!(std::mem::size_of::<Option<Name>>(), std::mem::size_of::<usize>());
    }

    #[test]
    fn names_nothing_holds_are_swept() {
        let shard = shard_of("swept-0");
        let same_shard: Vec<String> = (0..)
            .map(|i| format!("swept-{i}"))
            .filter(|t| shard_of(t) == shard)
            .take(4 * SWEEP_FLOOR)
            .collect();
        let kept = Name::new(&same_shard[0]);
        for t in &same_shard[1..] {
            drop(Name::new(t));
        }
        let ours = TABLE[shard]
            .lock()
            .unwrap()
            .names
            .iter()
            .filter(|n| n.starts_with("swept-"))
            .count();
        assert!(
            ours <= 3 * SWEEP_FLOOR,
            "the shard was swept: {ours} of {} names left",
            4 * SWEEP_FLOOR
        );
        assert!(
            ArcStr::ptr_eq(&kept.0, &Name::new(&same_shard[0]).0),
            "a name in use survives"
        );
    }
}
