//! `hprof-rs collapse`: folded stacks (`root;...;leaf count`), the input of
//! flame graph tools.

use super::profile::{Profile, Weighted, What};
use std::collections::BTreeMap;

/// Drawn for a trace with no frames (HPROF's `<empty>` trace).
pub const EMPTY_TRACE: &str = "[empty trace]";

/// The frames of a stack root first, the allocated class (if any) as the leaf.
pub fn root_first(stack: &Weighted) -> Vec<&str> {
    let mut frames: Vec<&str> = stack.frames.iter().rev().map(String::as_str).collect();
    if frames.is_empty() {
        frames.push(EMPTY_TRACE);
    }
    if let Some(class) = &stack.class {
        frames.push(class);
    }
    frames
}

/// One folded key per distinct stack with the summed cost, sorted by key.
/// Stacks with no cost are left out (flame graph tools skip them anyway).
pub fn folded(profile: &Profile, what: What) -> BTreeMap<String, u64> {
    let mut lines = BTreeMap::new();
    for stack in profile.stacks(what) {
        if stack.value > 0 {
            let sum = lines.entry(root_first(&stack).join(";")).or_default();
            // Counts read from a damaged file may be near u64::MAX.
            *sum = u64::saturating_add(*sum, stack.value);
        }
    }
    lines
}

/// The folded lines as text, one `stack count` a line.
pub fn folded_text(profile: &Profile, what: What) -> String {
    folded(profile, what)
        .iter()
        .map(|(stack, count)| format!("{stack} {count}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Site;

    #[test]
    fn sites_fold_root_first_with_the_class_as_leaf_and_merge_equal_stacks() {
        let site = |bytes| Site {
            frames: vec!["A.make".into(), "A.main".into()],
            trace: 300001,
            class: "int[]".into(),
            live_bytes: 0,
            live_objects: 0,
            allocated_bytes: bytes,
            allocated_objects: 1,
        };
        let profile = Profile {
            sites: Some(vec![site(80), site(20)]),
            ..Profile::default()
        };
        assert_eq!(
            folded_text(&profile, What::Alloc),
            "A.main;A.make;int[] 100\n"
        );
        assert_eq!(
            folded_text(&profile, What::AllocObjects),
            "A.main;A.make;int[] 2\n"
        );
        assert_eq!(folded_text(&profile, What::Live), "");
    }
}
