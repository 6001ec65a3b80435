//! A cache of what the agent learnt about methods, keyed by their
//! jmethodIDs (alone or with something else). Such a key outlives its
//! method once the method's class unloads, and HotSpot may give a later
//! method the same identifier; so the cache empties itself whenever
//! classes have unloaded since it was last used. Under class churn it then
//! holds the methods seen since the last unloading, not every method ever
//! seen.

use crate::agent::jvm::class_unloads;
use std::collections::HashMap;
use std::hash::Hash;

/// Facts by a key holding a jmethodID.
#[derive(Debug)]
pub struct MethodCache<K, V> {
    map: HashMap<K, V>,
    /// The unload count when the cache was last used.
    unloads_seen: u64,
}

impl<K, V> Default for MethodCache<K, V> {
    fn default() -> Self {
        Self {
            map: HashMap::new(),
            unloads_seen: 0,
        }
    }
}

impl<K: Eq + Hash, V: Copy> MethodCache<K, V> {
    /// The fact for `key`, learnt by `learn` when not known.
    pub fn get_or_learn(&mut self, key: K, learn: impl FnOnce() -> V) -> V {
        self.forget_if_classes_unloaded(class_unloads::unload_count());
        *self.map.entry(key).or_insert_with(learn)
    }

    /// The fact for `key`, if known.
    pub fn get(&mut self, key: &K) -> Option<V> {
        self.forget_if_classes_unloaded(class_unloads::unload_count());
        self.map.get(key).copied()
    }

    /// Records `value` for `key`.
    pub fn insert(&mut self, key: K, value: V) {
        self.forget_if_classes_unloaded(class_unloads::unload_count());
        self.map.insert(key, value);
    }

    fn forget_if_classes_unloaded(&mut self, unloads: u64) {
        if unloads != self.unloads_seen {
            self.map = HashMap::new();
            self.unloads_seen = unloads;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_once_and_forgets_everything_when_classes_unload() {
        let mut cache: MethodCache<u64, bool> = MethodCache::default();
        cache.forget_if_classes_unloaded(0);
        assert!(cache.map.is_empty());
        cache.map.insert(7, true);
        cache.forget_if_classes_unloaded(0);
        assert_eq!(cache.map.get(&7), Some(&true), "nothing unloaded: kept");
        cache.forget_if_classes_unloaded(3);
        assert!(cache.map.is_empty(), "classes unloaded: emptied");
        cache.map.insert(7, false);
        cache.forget_if_classes_unloaded(3);
        assert_eq!(cache.map.len(), 1);
    }

    #[test]
    fn a_fact_is_learnt_once() {
        let mut cache: MethodCache<(u64, u64), u32> = MethodCache::default();
        assert_eq!(cache.get_or_learn((1, 2), || 5), 5);
        assert_eq!(cache.get_or_learn((1, 2), || panic!("learnt twice")), 5);
        assert_eq!(cache.get(&(1, 2)), Some(5));
        cache.insert((3, 4), 9);
        assert_eq!(cache.get(&(3, 4)), Some(9));
    }
}
