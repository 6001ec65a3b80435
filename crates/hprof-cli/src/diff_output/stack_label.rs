//! Folded stacks shortened for text and Markdown: a stack of a deep
//! program is hundreds of characters, which a pull request or a CI log
//! cannot show on one line. JSON keeps them whole.

/// The most characters a stack takes in text and Markdown output.
pub const STACK_WIDTH: usize = 100;

/// The innermost frames kept whole when a stack is shortened: for a site,
/// the allocating method and the allocated class.
const INNERMOST_KEPT: usize = 2;

/// `folded` (`root;...;leaf`) in at most `width` characters: when longer,
/// its root, `... N frames ...` for the frames in between, and its two
/// innermost entries; names that are still too long keep their end (the
/// class and method) after `...`.
pub fn short_stack(folded: &str, width: usize) -> String {
    if folded.chars().count() <= width {
        return folded.to_owned();
    }
    let frames: Vec<&str> = folded.split(';').collect();
    let inner = INNERMOST_KEPT.min(frames.len() - 1);
    let hidden = frames.len() - 1 - inner;
    let gap = match hidden {
        0 => None,
        1 => Some("... 1 frame ...".to_owned()),
        n => Some(format!("... {n} frames ...")),
    };
    let kept: Vec<&str> = std::iter::once(frames[0])
        .chain(frames[frames.len() - inner..].iter().copied())
        .collect();
    // What is left for the names once the gap and the separators are in.
    let separators = kept.len() - 1 + usize::from(gap.is_some());
    let gap_width = gap.as_ref().map_or(0, |g| g.chars().count());
    let for_names = width.saturating_sub(separators + gap_width);
    let mut names: Vec<String> = kept.iter().map(|&n| n.to_owned()).collect();
    let wanted: usize = names.iter().map(|n| n.chars().count()).sum();
    if wanted > for_names {
        let each = for_names / names.len();
        names = names.iter().map(|n| keep_end(n, each)).collect();
    }
    let mut parts = vec![names[0].clone()];
    parts.extend(gap);
    parts.extend(names.into_iter().skip(1));
    parts.join(";")
}

/// `name` in at most `width` characters: `...` and its end when longer.
fn keep_end(name: &str, width: usize) -> String {
    let length = name.chars().count();
    if length <= width {
        return name.to_owned();
    }
    let tail: String = name.chars().skip(length + 3 - width.max(3)).collect();
    format!("...{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_stacks_stay_whole() {
        assert_eq!(
            short_stack("A.main;A.make;int[]", 100),
            "A.main;A.make;int[]"
        );
    }

    #[test]
    fn deep_stacks_keep_root_and_innermost_frames_within_the_width() {
        let frames: Vec<String> = (0..40)
            .map(|i| format!("com.example.Layer{i}.call"))
            .collect();
        let folded = format!("{};byte[]", frames.join(";"));
        let short = short_stack(&folded, 100);
        assert_eq!(
            short,
            "com.example.Layer0.call;... 38 frames ...;com.example.Layer39.call;byte[]"
        );
        assert!(short.chars().count() <= 100);
    }

    #[test]
    fn long_names_keep_their_end() {
        let long = "x".repeat(300);
        let folded = format!("Root.main;{long}.run;Leaf.spin");
        let short = short_stack(&folded, 60);
        assert!(short.chars().count() <= 60, "{short}");
        assert!(
            short.starts_with("Root.main;...") && short.ends_with(";Leaf.spin"),
            "{short}"
        );
        let one = short_stack(&"y".repeat(500), 40);
        assert_eq!(one.chars().count(), 40);
        assert!(one.starts_with("...y"));
        // Multi-byte names are cut at characters, not bytes.
        let wide = short_stack(&"é".repeat(200), 10);
        assert_eq!(wide, format!("...{}", "é".repeat(7)));
    }
}
