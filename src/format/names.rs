//! JVM signatures to the dotted names HPROF prints. (Being implemented.)

/// `Ljava/lang/String;` -> `java.lang.String`, `[[I` -> `int[][]`,
/// anything unparsable -> `Unknown_class` (reference §2.1).
pub fn signature_to_name(_signature: &str) -> String {
    unimplemented!("signature_to_name")
}
