//! The flame graph's data: stacks merged into a tree (root first), then cut
//! to a bounded size so a report of any profile stays small enough to open:
//! frames deeper than [`MAX_DEPTH`] are merged into one `[N deeper frames]`
//! node as the stack is added, children below [`MIN_SHARE`] of the total
//! are merged into one `[N smaller frames]` node, and the share is raised
//! until the tree has at most [`MAX_NODES`] nodes. Values are kept whole:
//! every node's value is the sum of what was merged into it.
//!
//! The depth bound also bounds every walk of the tree: building, cutting,
//! dropping and writing it out recurse once per level, here and in the
//! page's script, which a stack of 100,000 frames would overflow (and whose
//! 100,000 rows no one could read).

use serde::ser::{Serialize, SerializeSeq, Serializer};
use std::collections::HashMap;

/// The smallest share of the total a frame keeps its own node for.
pub const MIN_SHARE: f64 = 0.0005;
/// The most nodes one flame graph holds.
pub const MAX_NODES: usize = 20_000;
/// The most frames of a stack, from the root, that keep their own node.
pub const MAX_DEPTH: usize = 1000;

/// A tree being built: each node's value in the profile drawn (`value`)
/// and, for a differential graph, in the base profile (`base`).
#[derive(Default)]
pub struct Tree {
    value: u64,
    base: u64,
    children: HashMap<String, Tree>,
}

impl Tree {
    /// Adds a stack (root first) with its value and base value; its frames
    /// past [`MAX_DEPTH`] become one `[N deeper frames]` node.
    pub fn add(&mut self, stack: &[&str], value: u64, base: u64) {
        let kept = &stack[..stack.len().min(MAX_DEPTH)];
        let deeper = (stack.len() > MAX_DEPTH)
            .then(|| format!("[{} deeper frames]", stack.len() - MAX_DEPTH));
        let mut node = self;
        node.value = node.value.saturating_add(value);
        node.base = node.base.saturating_add(base);
        for frame in kept.iter().copied().chain(deeper.as_deref()) {
            // Looked up before it is copied: most frames are already there.
            if !node.children.contains_key(frame) {
                node.children.insert(frame.to_owned(), Tree::default());
            }
            node = node.children.get_mut(frame).expect("inserted above");
            node.value = node.value.saturating_add(value);
            node.base = node.base.saturating_add(base);
        }
    }

    pub fn total(&self) -> u64 {
        self.value
    }

    /// The tree cut to at most [`MAX_NODES`] nodes, names as indices into
    /// `names`.
    pub fn bounded(&self, names: &mut Names) -> (Node, f64) {
        let weight = self.value.max(self.base).max(1) as f64;
        let mut share = MIN_SHARE;
        loop {
            let min = (weight * share).ceil() as u64;
            let (node, count) = self.cut("all", min, names);
            if count <= MAX_NODES || share >= 1.0 {
                return (node, share);
            }
            share *= 2.0;
        }
    }

    /// This node and the children of at least `min`; the others merged.
    fn cut(&self, name: &str, min: u64, names: &mut Names) -> (Node, usize) {
        let mut kept: Vec<(&String, &Tree)> = self
            .children
            .iter()
            .filter(|(_, c)| c.value.max(c.base) >= min)
            .collect();
        // Widest first, then by name, so the page is the same every run.
        kept.sort_by(|a, b| b.1.value.cmp(&a.1.value).then(a.0.cmp(b.0)));
        let mut count = 1;
        let mut children = Vec::with_capacity(kept.len() + 1);
        for (child_name, child) in &kept {
            let (node, n) = child.cut(child_name, min, names);
            count += n;
            children.push(node);
        }
        let small = self.children.len() - kept.len();
        if small > 0 {
            let (mut value, mut base) = (0u64, 0u64);
            for child in self.children.values() {
                if child.value.max(child.base) < min {
                    value = value.saturating_add(child.value);
                    base = base.saturating_add(child.base);
                }
            }
            let label = format!("[{small} smaller frames]");
            children.push(Node::leaf(names.index(&label), value, base));
            count += 1;
        }
        let node = Node {
            name: names.index(name),
            value: self.value,
            base: self.base,
            children,
        };
        (node, count)
    }
}

/// Names stored once; nodes refer to them by index.
#[derive(Default, serde::Serialize)]
#[serde(transparent)]
pub struct Names {
    list: Vec<String>,
    #[serde(skip)]
    index: HashMap<String, u32>,
}

impl Names {
    fn index(&mut self, name: &str) -> u32 {
        if let Some(&at) = self.index.get(name) {
            return at;
        }
        self.list.push(name.to_owned());
        let at = self.list.len() as u32 - 1;
        self.index.insert(name.to_owned(), at);
        at
    }
}

/// A node of the bounded tree, written as `[name, value, base, [children]]`.
#[derive(Debug)]
pub struct Node {
    pub name: u32,
    pub value: u64,
    pub base: u64,
    pub children: Vec<Node>,
}

impl Node {
    fn leaf(name: u32, value: u64, base: u64) -> Self {
        Node {
            name,
            value,
            base,
            children: Vec::new(),
        }
    }
}

impl Serialize for Node {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(4))?;
        seq.serialize_element(&self.name)?;
        seq.serialize_element(&self.value)?;
        seq.serialize_element(&self.base)?;
        seq.serialize_element(&self.children)?;
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_children_merge_and_values_stay_whole() {
        let mut tree = Tree::default();
        tree.add(&["main", "hot"], 10_000, 0);
        for i in 0..50 {
            tree.add(&["main", &format!("cold{i}")], 1, 0);
        }
        let mut names = Names::default();
        let (root, _) = tree.bounded(&mut names);
        assert_eq!(root.value, 10_050);
        let main = &root.children[0];
        assert_eq!(main.children.len(), 2);
        assert_eq!(names.list[main.children[0].name as usize], "hot");
        assert_eq!(
            names.list[main.children[1].name as usize],
            "[50 smaller frames]"
        );
        assert_eq!(main.children[1].value, 50);
    }

    #[test]
    fn a_wide_tree_is_cut_to_the_node_limit() {
        // 1500 stacks of 20 frames of their own, each 1/1500 of the total
        // (above MIN_SHARE): 30,000 nodes before the cut.
        let mut tree = Tree::default();
        for i in 0..1500 {
            let stack: Vec<String> = (0..20).map(|d| format!("m{i}.{d}")).collect();
            let stack: Vec<&str> = stack.iter().map(String::as_str).collect();
            tree.add(&stack, 1, 0);
        }
        let mut names = Names::default();
        let (root, share) = tree.bounded(&mut names);
        fn count(n: &Node) -> usize {
            1 + n.children.iter().map(count).sum::<usize>()
        }
        assert!(count(&root) <= MAX_NODES);
        assert!(share > MIN_SHARE);
        assert_eq!(root.value, 1500);
    }

    #[test]
    fn frames_past_the_depth_bound_become_one_node() {
        let frames: Vec<String> = (0..MAX_DEPTH + 5).map(|d| format!("f{d}")).collect();
        let stack: Vec<&str> = frames.iter().map(String::as_str).collect();
        let mut tree = Tree::default();
        tree.add(&stack, 3, 0);
        tree.add(&stack[..MAX_DEPTH], 2, 0);
        let mut names = Names::default();
        let (root, _) = tree.bounded(&mut names);
        let mut node = &root;
        for frame in &frames[..MAX_DEPTH] {
            assert_eq!(node.children.len(), 1, "above {frame}");
            node = &node.children[0];
            assert_eq!(&names.list[node.name as usize], frame);
        }
        assert_eq!(node.value, 5);
        assert_eq!(node.children.len(), 1);
        let deeper = &node.children[0];
        assert_eq!(names.list[deeper.name as usize], "[5 deeper frames]");
        assert_eq!((deeper.value, deeper.children.len()), (3, 0));
    }
}
