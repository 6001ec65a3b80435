//! JVM signatures to the dotted names HPROF prints.

/// `Ljava/lang/String;` -> `java.lang.String`, `[[I` -> `int[][]`,
/// anything unparsable -> `Unknown_class` (HPROF's `signature_to_name`).
///
/// Follows the original agent's rules exactly: only the first character
/// decides, text after a complete element is ignored (`Lx;junk` -> `x`),
/// `$` is kept, and a method signature prints as `()` (`Unknown_method` when
/// its `)` is missing).
pub fn signature_to_name(signature: &str) -> String {
    // Arrays are counted rather than recursed into: `[` repeated a million
    // times must not exhaust the stack.
    let element = signature.trim_start_matches('[');
    let dimensions = signature.len() - element.len();
    let mut name = element_name(element);
    name.push_str(&"[]".repeat(dimensions));
    name
}

/// The name of a non-array signature.
fn element_name(signature: &str) -> String {
    let Some(first) = signature.chars().next() else {
        return "Unknown_class".to_string();
    };
    let rest = &signature[first.len_utf8()..];
    let name = match first {
        'L' => match rest.find(';') {
            Some(end) => return rest[..end].replace('/', "."),
            None => "Unknown_class",
        },
        '(' if rest.contains(')') => "()",
        '(' => "Unknown_method",
        'B' => "byte",
        'C' => "char",
        'E' => "enum",
        'F' => "float",
        'D' => "double",
        'I' => "int",
        'J' => "long",
        'S' => "short",
        'V' => "void",
        'Z' => "boolean",
        _ => "Unknown_class",
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::signature_to_name as name;

    #[test]
    fn classes_become_dotted() {
        assert_eq!(name("Ljava/lang/String;"), "java.lang.String");
        assert_eq!(
            name("Lonitama/ai/Searcher$MoveGenerator;"),
            "onitama.ai.Searcher$MoveGenerator"
        );
        assert_eq!(name("LNoPackage;"), "NoPackage");
        assert_eq!(name("Ljava/lang/String;trailing"), "java.lang.String");
    }

    #[test]
    fn arrays_get_one_suffix_per_dimension() {
        assert_eq!(name("[[I"), "int[][]");
        assert_eq!(name("[B"), "byte[]");
        assert_eq!(name("[Ljava/lang/Object;"), "java.lang.Object[]");
        assert_eq!(name("[[[Ljava/lang/String;"), "java.lang.String[][][]");
        assert_eq!(name("["), "Unknown_class[]");
        assert_eq!(
            name(&"[".repeat(100_000)).len(),
            "Unknown_class".len() + 200_000
        );
    }

    #[test]
    fn primitives_and_specials() {
        let expected = [
            ("B", "byte"),
            ("C", "char"),
            ("F", "float"),
            ("D", "double"),
            ("I", "int"),
            ("J", "long"),
            ("S", "short"),
            ("V", "void"),
            ("Z", "boolean"),
            ("E", "enum"),
            ("(I)V", "()"),
            ("()Ljava/lang/String;", "()"),
        ];
        for (sig, dotted) in expected {
            assert_eq!(name(sig), dotted, "signature {sig}");
        }
    }

    #[test]
    fn unparsable_signatures() {
        assert_eq!(name(""), "Unknown_class");
        assert_eq!(name("Ljava/lang/String"), "Unknown_class");
        assert_eq!(name("X"), "Unknown_class");
        assert_eq!(name("java.lang.String"), "Unknown_class");
        assert_eq!(name("é"), "Unknown_class");
        assert_eq!(name("(I"), "Unknown_method");
    }
}
