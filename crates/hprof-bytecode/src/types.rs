//! Verification types (the StackMapTable's `verification_type_info`) and the
//! descriptor parsing that produces them.

use super::constant_pool::ConstantPool;
use std::rc::Rc;

/// A verification type. Long and Double stand for both of their slots, as in
/// the StackMapTable (the simulator expands them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum VType {
    /// `Top`: unusable, or nothing known.
    Top,
    /// `Integer` (also boolean, byte, char, short).
    Integer,
    /// `Float`.
    Float,
    /// `Double` (two slots).
    Double,
    /// `Long` (two slots).
    Long,
    /// `Null`.
    Null,
    /// `UninitializedThis`: `this` in a constructor before `super()`/`this()`.
    UninitializedThis,
    /// `Object`, by `CONSTANT_Class` index.
    Object(u16),
    /// An object type known by internal name (or array descriptor) only,
    /// from a descriptor; given a `CONSTANT_Class` when it is written.
    Named(Rc<[u8]>),
    /// `Uninitialized`: made by the `new` at this *original* code offset
    /// (remapped when written).
    Uninitialized(u32),
}

impl VType {
    /// True for Long and Double, which take two local or stack slots.
    pub(crate) fn is_wide(&self) -> bool {
        matches!(self, VType::Long | VType::Double)
    }

    /// The internal name (or array descriptor) of an object type.
    pub(crate) fn class_name<'p>(&'p self, pool: &'p ConstantPool<'_>) -> Result<&'p [u8], String> {
        match self {
            VType::Object(index) => pool.class_name(*index),
            VType::Named(name) => Ok(name),
            other => Err(format!("{other:?} is not a class type")),
        }
    }
}

/// Parses one field type at the start of `descriptor`, returning it (`None`
/// for `V`, which only a return type may be) and the rest.
fn parse_field_type(descriptor: &[u8]) -> Result<(Option<VType>, &[u8]), String> {
    let bad = || format!("bad descriptor {:?}", String::from_utf8_lossy(descriptor));
    let (&first, rest) = descriptor.split_first().ok_or_else(bad)?;
    let single = |t| Ok((t, rest));
    match first {
        b'B' | b'C' | b'I' | b'S' | b'Z' => single(Some(VType::Integer)),
        b'F' => single(Some(VType::Float)),
        b'J' => single(Some(VType::Long)),
        b'D' => single(Some(VType::Double)),
        b'V' => single(None),
        b'L' => {
            let end = rest.iter().position(|&b| b == b';').ok_or_else(bad)?;
            if end == 0 {
                return Err(bad());
            }
            Ok((Some(VType::Named(Rc::from(&rest[..end]))), &rest[end + 1..]))
        }
        b'[' => {
            let dims = descriptor.iter().take_while(|&&b| b == b'[').count();
            let (element, after) = parse_field_type(&descriptor[dims..])?;
            if element.is_none() {
                return Err(bad());
            }
            let len = descriptor.len() - after.len();
            Ok((Some(VType::Named(Rc::from(&descriptor[..len]))), after))
        }
        _ => Err(bad()),
    }
}

/// The type of a field descriptor (`I`, `Ljava/lang/String;`, `[J`, …).
pub(crate) fn field_type(descriptor: &[u8]) -> Result<VType, String> {
    match parse_field_type(descriptor)? {
        (Some(t), []) => Ok(t),
        _ => Err(format!(
            "bad field descriptor {:?}",
            String::from_utf8_lossy(descriptor)
        )),
    }
}

/// Argument types and return type (`None` for void) of a method descriptor.
pub(crate) fn method_type(descriptor: &[u8]) -> Result<(Vec<VType>, Option<VType>), String> {
    let bad = || {
        format!(
            "bad method descriptor {:?}",
            String::from_utf8_lossy(descriptor)
        )
    };
    let mut rest = descriptor.strip_prefix(b"(").ok_or_else(bad)?;
    let mut args = Vec::new();
    while rest.first() != Some(&b')') {
        let (t, after) = parse_field_type(rest)?;
        args.push(t.ok_or_else(bad)?);
        rest = after;
    }
    let (ret, after) = parse_field_type(&rest[1..])?;
    if !after.is_empty() {
        return Err(bad());
    }
    Ok((args, ret))
}

/// The locals of a method's implicit first frame: `this` (uninitialised in
/// a constructor other than `Object`'s) then the arguments.
pub(crate) fn initial_locals(
    pool: &ConstantPool<'_>,
    this_class: u16,
    is_static: bool,
    name: &[u8],
    descriptor: &[u8],
) -> Result<Vec<VType>, String> {
    let mut locals = Vec::new();
    if !is_static {
        let is_object = pool.class_name(this_class)? == b"java/lang/Object";
        locals.push(if name == b"<init>" && !is_object {
            VType::UninitializedThis
        } else {
            VType::Object(this_class)
        });
    }
    locals.extend(method_type(descriptor)?.0);
    Ok(locals)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(s: &str) -> VType {
        VType::Named(Rc::from(s.as_bytes()))
    }

    #[test]
    fn parses_method_descriptors() {
        let (args, ret) =
            method_type(b"(IJ[[Ljava/lang/String;Ljava/util/List;D[Z)Ljava/lang/Object;").unwrap();
        assert_eq!(
            args,
            [
                VType::Integer,
                VType::Long,
                named("[[Ljava/lang/String;"),
                named("java/util/List"),
                VType::Double,
                named("[Z"),
            ]
        );
        assert_eq!(ret, Some(named("java/lang/Object")));
        assert_eq!(method_type(b"()V").unwrap(), (vec![], None));
        for bad in [
            &b"(V)V"[..],
            b"(I",
            b"()",
            b"(L;)V",
            b"()VV",
            b"(Q)V",
            b"([)V",
        ] {
            assert!(
                method_type(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn parses_field_descriptors() {
        assert_eq!(field_type(b"Z").unwrap(), VType::Integer);
        assert_eq!(field_type(b"[J").unwrap(), named("[J"));
        assert!(field_type(b"V").is_err());
        assert!(field_type(b"II").is_err());
    }
}
