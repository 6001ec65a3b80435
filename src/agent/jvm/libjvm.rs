//! What the agent reads from libjvm.so itself rather than through JVMTI:
//! its exported symbols, and HotSpot's table of `-XX` flags, found through
//! the `gHotSpotVMStructs` description HotSpot exports for serviceability
//! tools (the same tables the Serviceability Agent reads).

use std::ffi::{CStr, c_char, c_void};

/// The address of `name` in the libjvm.so this process runs, or None. The
/// java launcher loads libjvm globally; a program embedding the JVM may
/// have loaded it locally, which `RTLD_NOLOAD` finds without loading a
/// second copy.
pub fn symbol(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: dlsym and dlopen(RTLD_NOLOAD) with valid C strings only look
    // up objects already loaded; the handle of the latter is released (the
    // library stays loaded: the process runs it).
    let found = unsafe {
        let mut found = libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr());
        if found.is_null() {
            let jvm = libc::dlopen(c"libjvm.so".as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
            if !jvm.is_null() {
                found = libc::dlsym(jvm, name.as_ptr());
                libc::dlclose(jvm);
            }
        }
        found
    };
    (!found.is_null()).then_some(found)
}

/// The value of an exported `uint64_t` (the tables' layout: offsets and
/// strides).
fn exported_u64(name: &CStr) -> Option<usize> {
    // SAFETY: HotSpot exports these names as `uint64_t` variables.
    symbol(name).map(|address| unsafe { *(address as *const u64) } as usize)
}

/// One of HotSpot's exported tables: a pointer to its first entry, the
/// entries `stride` bytes apart, the last one with a null type name.
struct Table {
    first: *const u8,
    stride: usize,
    type_name_offset: usize,
}

impl Table {
    fn find(table: &CStr, stride: &CStr, type_name_offset: &CStr) -> Option<Table> {
        // SAFETY: the exported table symbol is a pointer to the table.
        let first = symbol(table).map(|address| unsafe { *(address as *const *const u8) })?;
        let table = Table {
            first,
            stride: exported_u64(stride)?,
            type_name_offset: exported_u64(type_name_offset)?,
        };
        (!table.first.is_null() && table.stride > 0).then_some(table)
    }

    /// Each entry's address and type name, up to the terminating entry.
    fn entries(self) -> impl Iterator<Item = (*const u8, &'static CStr)> {
        (0..)
            .map(move |index| {
                // SAFETY: entries are `stride` apart up to the terminating
                // one, whose type name is null (the iteration stops there);
                // each name is a static C string of libjvm.
                unsafe {
                    let entry = self.first.add(index * self.stride);
                    let name = *(entry.add(self.type_name_offset) as *const *const c_char);
                    (entry, (!name.is_null()).then(|| CStr::from_ptr(name)))
                }
            })
            .map_while(|(entry, name)| name.map(|name| (entry, name)))
    }
}

/// Where HotSpot keeps its flags: an array of `JVMFlag` records.
struct FlagTable {
    flags: *const u8,
    count: usize,
    size: usize,
    name_offset: usize,
    addr_offset: usize,
}

/// One field of a HotSpot type, as a `gHotSpotVMStructs` entry describes it.
struct StructField {
    type_name: &'static CStr,
    name: &'static CStr,
    is_static: bool,
    /// A nonstatic field's offset in its type.
    offset: usize,
    /// A static field's address (null for a nonstatic one).
    address: *const u8,
}

/// Every field `gHotSpotVMStructs` describes, or None when libjvm does
/// not export the table and its layout.
fn struct_fields() -> Option<impl Iterator<Item = StructField>> {
    let structs = Table::find(
        c"gHotSpotVMStructs",
        c"gHotSpotVMStructEntryArrayStride",
        c"gHotSpotVMStructEntryTypeNameOffset",
    )?;
    let field_name = exported_u64(c"gHotSpotVMStructEntryFieldNameOffset")?;
    let is_static = exported_u64(c"gHotSpotVMStructEntryIsStaticOffset")?;
    let offset = exported_u64(c"gHotSpotVMStructEntryOffsetOffset")?;
    let address = exported_u64(c"gHotSpotVMStructEntryAddressOffset")?;
    Some(structs.entries().filter_map(move |(entry, type_name)| {
        // SAFETY: a VMStructs entry: its field name is a static C string
        // or null, its static flag an `int32_t`, its offset a
        // `uint64_t`, its address a pointer (for static fields, to the
        // field itself).
        unsafe {
            let name = *(entry.add(field_name) as *const *const c_char);
            (!name.is_null()).then(|| StructField {
                type_name,
                name: CStr::from_ptr(name),
                is_static: *(entry.add(is_static) as *const i32) != 0,
                offset: *(entry.add(offset) as *const u64) as usize,
                address: *(entry.add(address) as *const *const u8),
            })
        }
    }))
}

/// The offset of the nonstatic field `field` in HotSpot's type
/// `type_name` (such as `JavaThread`'s `_osthread`), from the VMStructs
/// table the Serviceability Agent reads; None when the table or the
/// field is not there.
pub fn field_offset(type_name: &CStr, field: &CStr) -> Option<usize> {
    struct_fields()?
        .find(|f| !f.is_static && f.type_name == type_name && f.name == field)
        .map(|f| f.offset)
}

/// The `JVMFlag` array, as the VMStructs describe it (JDK 11 and later:
/// static fields `flags` and `numFlags`, fields `_name` and `_addr`).
fn flag_table() -> Option<FlagTable> {
    let (mut flags, mut count, mut name_offset, mut addr_offset) = (None, None, None, None);
    for field in struct_fields()?.filter(|f| f.type_name == c"JVMFlag") {
        match (field.name.to_bytes(), field.is_static) {
            (b"flags", true) if !field.address.is_null() => {
                // SAFETY: the static field `JVMFlag::flags`: a pointer to
                // the array.
                flags = Some(unsafe { *(field.address as *const *const u8) })
            }
            (b"numFlags", true) if !field.address.is_null() => {
                // SAFETY: the static field `JVMFlag::numFlags`: a `size_t`.
                count = Some(unsafe { *(field.address as *const usize) })
            }
            (b"_name", false) => name_offset = Some(field.offset),
            (b"_addr", false) => addr_offset = Some(field.offset),
            _ => {}
        }
    }
    let types = Table::find(
        c"gHotSpotVMTypes",
        c"gHotSpotVMTypeEntryArrayStride",
        c"gHotSpotVMTypeEntryTypeNameOffset",
    )?;
    let size_offset = exported_u64(c"gHotSpotVMTypeEntrySizeOffset")?;
    let size = types
        .entries()
        .find(|(_, name)| *name == c"JVMFlag")
        // SAFETY: a VMTypes entry's size is a `uint64_t`.
        .map(|(entry, _)| unsafe { *(entry.add(size_offset) as *const u64) } as usize)?;
    let table = FlagTable {
        flags: flags?,
        count: count?,
        size,
        name_offset: name_offset?,
        addr_offset: addr_offset?,
    };
    (!table.flags.is_null() && table.size > 0).then_some(table)
}

/// What a search of HotSpot's flag table found for one flag.
enum FlagLookup {
    /// The address of the flag's value (a C++ `bool`, or a `const char*`
    /// for a string flag: the caller knows which it asked for).
    Found(*mut u8),
    /// The table was read and has no such flag (this JVM lacks it).
    Absent,
    /// The table was not found, or the flag has no value address.
    Unknown,
}

/// Looks the flag `name` up in HotSpot's flag table.
fn flag_address(name: &CStr) -> FlagLookup {
    let Some(table) = flag_table() else {
        return FlagLookup::Unknown;
    };
    for index in 0..table.count {
        // SAFETY: `count` records of `size` bytes from `flags`; each
        // record's name is a static C string (null in the terminating
        // record) and its address points at the flag's value.
        unsafe {
            let record = table.flags.add(index * table.size);
            let flag_name = *(record.add(table.name_offset) as *const *const c_char);
            if flag_name.is_null() || CStr::from_ptr(flag_name) != name {
                continue;
            }
            let value_address = *(record.add(table.addr_offset) as *const *mut u8);
            if value_address.is_null() {
                return FlagLookup::Unknown;
            }
            return FlagLookup::Found(value_address);
        }
    }
    FlagLookup::Absent
}

/// Sets the HotSpot `bool` flag `name` (a diagnostic flag such as
/// `DebugNonSafepoints` included: the JVM reads it where it is used, so
/// setting it before the code that reads it runs has the effect of the
/// `-XX` option). False when the flag or the tables are not found.
pub fn set_bool_flag(name: &CStr, value: bool) -> bool {
    match flag_address(name) {
        FlagLookup::Found(address) => {
            // SAFETY: the value address of a flag the caller names as a
            // `bool` one: a C++ `bool`.
            unsafe { (address as *mut bool).write_volatile(value) };
            true
        }
        FlagLookup::Absent | FlagLookup::Unknown => false,
    }
}

/// Appends `items` to the comma-separated string flag `name` (such as
/// `DisableIntrinsic`), keeping what the command line put there. The JVM
/// reads such flags when its compilers start, after the agent loads: set
/// from `Agent_OnLoad` they act as the `-XX` option would. The new value
/// is never freed (the JVM may hold it for its whole life). False when
/// the flag or the tables are not found.
pub fn append_to_string_flag(name: &CStr, items: &str) -> bool {
    let FlagLookup::Found(address) = flag_address(name) else {
        return false;
    };
    let slot = address as *mut *const c_char;
    // SAFETY: the value address of a flag the caller names as a string
    // one: a `const char*`, null or a C string the JVM owns.
    let old = unsafe { slot.read_volatile() };
    let old = if old.is_null() {
        String::new()
    } else {
        // SAFETY: a non-null string flag value is a C string.
        unsafe { CStr::from_ptr(old) }
            .to_string_lossy()
            .into_owned()
    };
    let joined = if old.trim().is_empty() {
        items.to_owned()
    } else {
        format!("{old},{items}")
    };
    let Ok(value) = std::ffi::CString::new(joined) else {
        return false;
    };
    // SAFETY: as above; the leaked string lives as long as the process.
    unsafe { slot.write_volatile(value.into_raw()) };
    true
}

/// What the flag table says of one `bool` flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoolFlag {
    Value(bool),
    /// This JVM has no such flag (a feature of another JDK).
    Absent,
    /// The flag table cannot be read.
    Unreadable,
}

/// The value of the HotSpot `bool` flag `name`.
pub fn bool_flag(name: &CStr) -> BoolFlag {
    match flag_address(name) {
        // SAFETY: the value address of a flag the caller names as a `bool`
        // one: a C++ `bool`.
        FlagLookup::Found(address) => {
            BoolFlag::Value(unsafe { (address as *const bool).read_volatile() })
        }
        FlagLookup::Absent => BoolFlag::Absent,
        FlagLookup::Unknown => BoolFlag::Unreadable,
    }
}

/// Whether the JVM checks native code's JNI use (`-Xcheck:jni`, HotSpot's
/// `CheckJNICalls`).
pub fn checks_jni() -> BoolFlag {
    bool_flag(c"CheckJNICalls")
}

/// The value of the HotSpot `intx` flag `name` (such as `ThreadStackSize`,
/// in KiB), or None when the flag or the tables are not found.
pub fn intx_flag(name: &CStr) -> Option<i64> {
    word_flag(name).map(|word| word as isize as i64)
}

/// The value of the HotSpot flag `name` of C type `int`, or of type `intx`
/// when its value fits in an `int` (`ObjectAlignmentInBytes` is one or the
/// other by JDK): an `intx`'s first four bytes are then its value on a
/// little-endian machine (x86-64, AArch64). None when the flag or the
/// tables are not found.
pub fn int_flag(name: &CStr) -> Option<i32> {
    match flag_address(name) {
        // SAFETY: the value address of a flag the caller names as an `int`
        // or `intx` one: at least four readable bytes.
        FlagLookup::Found(address) => Some(unsafe { (address as *const i32).read_unaligned() }),
        FlagLookup::Absent | FlagLookup::Unknown => None,
    }
}

/// The value of the HotSpot `uintx` flag `name` (such as
/// `TLABRefillWasteFraction`), or None when the flag or the tables are not
/// found.
pub fn uintx_flag(name: &CStr) -> Option<u64> {
    word_flag(name).map(|word| word as u64)
}

/// Sets the HotSpot `uintx` flag `name`, read by the JVM where it is used
/// (as for [`set_bool_flag`]). False when the flag or the tables are not
/// found.
pub fn set_uintx_flag(name: &CStr, value: u64) -> bool {
    match flag_address(name) {
        FlagLookup::Found(address) => {
            // SAFETY: the value address of a flag the caller names as a
            // `uintx` one: a pointer-sized unsigned integer.
            unsafe { (address as *mut usize).write_volatile(value as usize) };
            true
        }
        FlagLookup::Absent | FlagLookup::Unknown => false,
    }
}

/// The pointer-sized value of the flag `name` (an `intx` or a `uintx` one:
/// the caller knows which it asked for).
fn word_flag(name: &CStr) -> Option<usize> {
    match flag_address(name) {
        // SAFETY: the value address of a flag the caller names as a
        // pointer-sized integer one.
        FlagLookup::Found(address) => Some(unsafe { (address as *const usize).read_volatile() }),
        FlagLookup::Absent | FlagLookup::Unknown => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_jvm_nothing_is_found_and_nothing_is_written() {
        assert!(symbol(c"gHotSpotVMStructs").is_none());
        assert!(!set_bool_flag(c"DebugNonSafepoints", true));
        assert_eq!(bool_flag(c"UseCompressedOops"), BoolFlag::Unreadable);
        assert_eq!(intx_flag(c"ThreadStackSize"), None);
        assert_eq!(uintx_flag(c"TLABRefillWasteFraction"), None);
        assert!(!set_uintx_flag(c"TLABRefillWasteFraction", 1));
    }
}
