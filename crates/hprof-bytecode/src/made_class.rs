//! Writes the small classes the agent makes from nothing (the context
//! accessor, the early gate): static fields without attributes, static
//! methods with a `Code` attribute each (and, if asked, one annotation), no
//! stack maps.

use super::bytes::{Reader, put_u16, put_u32};
use super::constant_pool::ConstantPool;

/// A constant pool with no entries, as a class file holds it.
static EMPTY_POOL: [u8; 2] = [0, 1];

/// The pool of a made class named `name` (internal form), with its own
/// class and `java/lang/Object` (its superclass) in it: (pool, this,
/// object).
pub(crate) fn made_pool(name: &str) -> Result<(ConstantPool<'static>, u16, u16), String> {
    let mut pool = ConstantPool::parse(&mut Reader::new(&EMPTY_POOL)).map_err(|e| e.to_string())?;
    let this = pool.add_class(name.as_bytes())?;
    let object = pool.add_class(b"java/lang/Object")?;
    Ok((pool, this, object))
}

/// A static field of the made class `class`: the reference its code uses,
/// and the (access, name, descriptor) entry the class declares.
pub(crate) fn made_field(
    pool: &mut ConstantPool<'_>,
    class: &str,
    (name, descriptor): (&str, &str),
    access: u16,
) -> Result<(u16, (u16, u16, u16)), String> {
    let reference = pool.add_field_ref(class.as_bytes(), name.as_bytes(), descriptor.as_bytes())?;
    let entry = (
        access,
        pool.add_utf8(name.as_bytes())?,
        pool.add_utf8(descriptor.as_bytes())?,
    );
    Ok((reference, entry))
}

/// A method of a made class (pool indexes of its name and descriptor).
pub(crate) struct MadeMethod {
    pub name: u16,
    pub descriptor: u16,
    pub code: Vec<u8>,
    pub max_stack: u16,
    pub max_locals: u16,
}

/// The parts of a made class, by pool index; fields are (name, descriptor).
pub(crate) struct MadeClass<'p, 'a> {
    pub version: u16,
    pub pool: &'p ConstantPool<'a>,
    pub access: u16,
    pub this: u16,
    pub super_class: u16,
    pub fields: &'p [(u16, u16, u16)],
    pub method_access: u16,
    pub code_name: u16,
    pub methods: &'p [MadeMethod],
    /// (name of `RuntimeVisibleAnnotations`, type of the annotation) put on every method.
    pub method_annotation: Option<(u16, u16)>,
}

/// `ACC_PUBLIC | ACC_FINAL | ACC_SUPER | ACC_SYNTHETIC`: every made class.
const HELPER_CLASS_ACCESS: u16 = 0x0001 | 0x0010 | 0x0020 | 0x1000;
/// `ACC_PUBLIC | ACC_STATIC`: every method of a made class.
const HELPER_METHOD_ACCESS: u16 = 0x0001 | 0x0008;

impl<'p, 'a> MadeClass<'p, 'a> {
    /// A made class: public, final and synthetic, of class-file `version`,
    /// extending `java/lang/Object` (`classes`: this class and Object, as
    /// [`made_pool`] gives them), its methods public and static.
    pub(crate) fn helper(
        version: u16,
        pool: &'p ConstantPool<'a>,
        classes: (u16, u16),
        fields: &'p [(u16, u16, u16)],
        code_name: u16,
        methods: &'p [MadeMethod],
        method_annotation: Option<(u16, u16)>,
    ) -> Self {
        Self {
            version,
            pool,
            access: HELPER_CLASS_ACCESS,
            this: classes.0,
            super_class: classes.1,
            fields,
            method_access: HELPER_METHOD_ACCESS,
            code_name,
            methods,
            method_annotation,
        }
    }

    /// The class file; fields are (access, name, descriptor).
    pub(crate) fn write(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(1024);
        put_u32(&mut out, 0xCAFE_BABE);
        put_u16(&mut out, 0);
        put_u16(&mut out, self.version);
        self.pool.write(&mut out);
        put_u16(&mut out, self.access);
        put_u16(&mut out, self.this);
        put_u16(&mut out, self.super_class);
        put_u16(&mut out, 0); // interfaces
        put_u16(&mut out, self.fields.len() as u16);
        for &(access, name, descriptor) in self.fields {
            put_u16(&mut out, access);
            put_u16(&mut out, name);
            put_u16(&mut out, descriptor);
            put_u16(&mut out, 0); // attributes
        }
        put_u16(&mut out, self.methods.len() as u16);
        for method in self.methods {
            put_u16(&mut out, self.method_access);
            put_u16(&mut out, method.name);
            put_u16(&mut out, method.descriptor);
            put_u16(&mut out, 1 + u16::from(self.method_annotation.is_some()));
            put_u16(&mut out, self.code_name);
            put_u32(&mut out, 12 + method.code.len() as u32);
            put_u16(&mut out, method.max_stack);
            put_u16(&mut out, method.max_locals);
            put_u32(&mut out, method.code.len() as u32);
            out.extend_from_slice(&method.code);
            put_u16(&mut out, 0); // exception table
            put_u16(&mut out, 0); // attributes
            if let Some((name, annotation)) = self.method_annotation {
                put_u16(&mut out, name);
                put_u32(&mut out, 6);
                put_u16(&mut out, 1);
                put_u16(&mut out, annotation);
                put_u16(&mut out, 0);
            }
        }
        put_u16(&mut out, 0); // class attributes
        out
    }
}
