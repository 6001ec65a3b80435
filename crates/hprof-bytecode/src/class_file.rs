//! The class-file structure: header, pool, members and attributes as slices
//! of the input. Only methods and their `Code` attributes are looked into;
//! everything else is carried to the output byte for byte.

use super::BciError;
use super::bytes::Reader;
use super::constant_pool::ConstantPool;

/// `ACC_STATIC` (on a method).
pub(crate) const ACC_STATIC: u16 = 0x0008;

/// The oldest class-file version handled: Java 1.1 (45).
pub(crate) const MIN_MAJOR: u16 = 45;
/// The newest class-file version handled: Java 25 (69).
pub(crate) const MAX_MAJOR: u16 = 69;

/// One attribute, undecoded.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Attribute<'a> {
    /// Index of the attribute's name in the constant pool.
    pub name_index: u16,
    /// The attribute's body (after the length).
    pub info: &'a [u8],
}

/// One `method_info`.
#[derive(Clone, Debug)]
pub(crate) struct Method<'a> {
    /// `access_flags`.
    pub access_flags: u16,
    /// Index of the method's name.
    pub name_index: u16,
    /// Index of the method's descriptor.
    pub descriptor_index: u16,
    /// The method's attributes, in class-file order.
    pub attributes: Vec<Attribute<'a>>,
}

/// A parsed class file.
#[derive(Clone, Debug)]
pub(crate) struct ClassFile<'a> {
    /// `major_version`.
    pub major: u16,
    /// `magic`, `minor_version` and `major_version`, as read.
    pub header: &'a [u8],
    /// The constant pool, growable.
    pub pool: ConstantPool<'a>,
    /// `this_class`.
    pub this_class: u16,
    /// From `access_flags` up to the methods: flags, this and super class,
    /// interfaces and fields, as read.
    pub before_methods: &'a [u8],
    /// The methods.
    pub methods: Vec<Method<'a>>,
    /// `attributes_count` and the class attributes, as read.
    pub after_methods: &'a [u8],
}

/// Reads `attributes_count` attributes.
pub(crate) fn read_attributes<'a>(r: &mut Reader<'a>) -> Result<Vec<Attribute<'a>>, BciError> {
    let count = r.u16()?;
    let mut attributes = Vec::with_capacity(usize::from(count));
    for _ in 0..count {
        let name_index = r.u16()?;
        let len = r.u32()?;
        let info = r.bytes(len as usize)?;
        attributes.push(Attribute { name_index, info });
    }
    Ok(attributes)
}

/// Fails unless `r` has read everything, which comes `after` something.
fn expect_end(r: &Reader<'_>, after: &str) -> Result<(), BciError> {
    if r.at_end() {
        Ok(())
    } else {
        Err(BciError::Malformed {
            offset: r.pos(),
            what: format!("bytes after {after}"),
        })
    }
}

/// Skips a `fields_count`-style table of members (fields or methods),
/// returning nothing: fields are copied as bytes.
fn skip_members(r: &mut Reader<'_>) -> Result<(), BciError> {
    let count = r.u16()?;
    for _ in 0..count {
        r.bytes(6)?;
        read_attributes(r)?;
    }
    Ok(())
}

impl<'a> ClassFile<'a> {
    /// The class's own internal name (`java/lang/String`), copied.
    pub(crate) fn this_name(&self) -> Result<Vec<u8>, BciError> {
        self.pool
            .class_name(self.this_class)
            .map(<[u8]>::to_vec)
            .map_err(|what| BciError::Malformed { offset: 0, what })
    }

    /// Parses `bytes`, checking the magic number, the version range and that
    /// nothing trails the class attributes.
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<ClassFile<'a>, BciError> {
        let mut r = Reader::new(bytes);
        let magic = r.u32()?;
        if magic != 0xcafe_babe {
            return Err(BciError::BadMagic(magic));
        }
        let minor = r.u16()?;
        let major = r.u16()?;
        if !(MIN_MAJOR..=MAX_MAJOR).contains(&major) {
            return Err(BciError::UnsupportedVersion { major, minor });
        }
        let header = &bytes[..8];
        let pool = ConstantPool::parse(&mut r)?;

        let members_start = r.pos();
        r.u16()?; // access_flags
        let this_class = r.u16()?;
        r.u16()?; // super_class
        let interfaces = r.u16()?;
        r.bytes(2 * usize::from(interfaces))?;
        skip_members(&mut r)?;
        let before_methods = &bytes[members_start..r.pos()];

        let method_count = r.u16()?;
        let mut methods = Vec::with_capacity(usize::from(method_count));
        for _ in 0..method_count {
            let access_flags = r.u16()?;
            let name_index = r.u16()?;
            let descriptor_index = r.u16()?;
            let attributes = read_attributes(&mut r)?;
            methods.push(Method {
                access_flags,
                name_index,
                descriptor_index,
                attributes,
            });
        }

        let attributes_start = r.pos();
        read_attributes(&mut r)?;
        expect_end(&r, "the class attributes")?;
        Ok(ClassFile {
            major,
            header,
            pool,
            this_class,
            before_methods,
            methods,
            after_methods: &bytes[attributes_start..],
        })
    }
}

/// One `exception_table` row of a `Code` attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Handler {
    /// First covered offset.
    pub start: u16,
    /// First offset no longer covered.
    pub end: u16,
    /// Where the handler's code starts.
    pub handler: u16,
    /// The caught class (0: any).
    pub catch_type: u16,
}

/// A decoded `Code` attribute (its sub-attributes still undecoded).
#[derive(Clone, Debug)]
pub(crate) struct CodeAttribute<'a> {
    /// `max_stack`.
    pub max_stack: u16,
    /// `max_locals`.
    pub max_locals: u16,
    /// The byte code.
    pub code: &'a [u8],
    /// The exception table.
    pub handlers: Vec<Handler>,
    /// LineNumberTable, StackMapTable and the others.
    pub attributes: Vec<Attribute<'a>>,
}

impl<'a> CodeAttribute<'a> {
    /// Parses the body of a `Code` attribute.
    pub(crate) fn parse(info: &'a [u8]) -> Result<CodeAttribute<'a>, BciError> {
        let mut r = Reader::new(info);
        let max_stack = r.u16()?;
        let max_locals = r.u16()?;
        let code_length = r.u32()?;
        let code = r.bytes(code_length as usize)?;
        let handler_count = r.u16()?;
        let mut handlers = Vec::with_capacity(usize::from(handler_count));
        for _ in 0..handler_count {
            handlers.push(Handler {
                start: r.u16()?,
                end: r.u16()?,
                handler: r.u16()?,
                catch_type: r.u16()?,
            });
        }
        let attributes = read_attributes(&mut r)?;
        expect_end(&r, "the Code attribute's attributes")?;
        Ok(CodeAttribute {
            max_stack,
            max_locals,
            code,
            handlers,
            attributes,
        })
    }
}
