//! Stack traces, numbered from 300000; 300000 itself is the empty trace.

use rustc_hash::FxHashMap;

/// Serial of the empty ("system") trace, which always exists.
pub const EMPTY_TRACE_SERIAL: u32 = 300_000;

/// What makes two traces the same: their frames (innermost first), the
/// thread when `thread=y`, and the JVM phase when taken outside the live phase.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct TraceKey {
    pub frames: Vec<u64>,
    pub thread_serial: Option<u32>,
    pub phase: Option<&'static str>,
}

/// One trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEntry {
    pub serial: u32,
    pub key: TraceKey,
    /// A serial reserved for a trace that exists outside this table (see
    /// [`TraceTable::reserve`]): it is never printed from here.
    pub reserved: bool,
}

/// Traces by key.
#[derive(Debug)]
pub struct TraceTable {
    entries: Vec<TraceEntry>,
    /// (Fx: hashed at every walk's intern, a key of up to `depth` frames.)
    by_key: FxHashMap<TraceKey, usize>,
}

impl Default for TraceTable {
    fn default() -> Self {
        let mut table = Self {
            entries: Vec::new(),
            by_key: FxHashMap::default(),
        };
        table.intern(TraceKey::default());
        table
    }
}

impl TraceTable {
    /// The serial of the trace with `key`, creating it if new.
    pub fn intern(&mut self, key: TraceKey) -> u32 {
        if let Some(&i) = self.by_key.get(&key) {
            return self.entries[i].serial;
        }
        let serial = EMPTY_TRACE_SERIAL + self.entries.len() as u32;
        self.by_key.insert(key.clone(), self.entries.len());
        self.entries.push(TraceEntry {
            serial,
            key,
            reserved: false,
        });
        serial
    }

    /// A serial for a trace that exists outside this table (the stack
    /// traces inside a JVM-made heap dump carry their own frames): it is
    /// never interned or printed by this table.
    pub fn reserve(&mut self) -> u32 {
        let serial = EMPTY_TRACE_SERIAL + self.entries.len() as u32;
        let key = TraceKey {
            frames: Vec::new(),
            thread_serial: None,
            phase: Some("reserved"),
        };
        self.entries.push(TraceEntry {
            serial,
            key,
            reserved: true,
        });
        serial
    }

    /// The trace with `serial`.
    pub fn get(&self, serial: u32) -> Option<&TraceEntry> {
        let index = serial.checked_sub(EMPTY_TRACE_SERIAL)? as usize;
        self.entries.get(index)
    }

    /// Every trace, in serial order.
    pub fn iter(&self) -> impl Iterator<Item = &TraceEntry> {
        self.entries.iter()
    }

    /// Number of traces, the empty one included.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Always false: the empty trace exists from the start.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_trace_is_300000_and_keys_decide_identity() {
        let mut traces = TraceTable::default();
        assert_eq!(traces.intern(TraceKey::default()), 300_000);
        let a = TraceKey {
            frames: vec![1, 2],
            ..Default::default()
        };
        let a_thread = TraceKey {
            frames: vec![1, 2],
            thread_serial: Some(200_001),
            phase: None,
        };
        assert_eq!(traces.intern(a.clone()), 300_001);
        assert_eq!(traces.intern(a_thread), 300_002);
        assert_eq!(traces.intern(a), 300_001);
    }

    #[test]
    fn reserved_serials_follow_on_and_are_never_found_by_key() {
        let mut traces = TraceTable::default();
        let s = traces.intern(TraceKey {
            frames: vec![8],
            ..Default::default()
        });
        let reserved = traces.reserve();
        assert_eq!(reserved, s + 1);
        let flags: Vec<bool> = traces.iter().map(|t| t.reserved).collect();
        assert_eq!(flags, [false, false, true]);
        assert_eq!(
            traces.intern(TraceKey::default()),
            300_000,
            "and never found by key"
        );
    }
}
