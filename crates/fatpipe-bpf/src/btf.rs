//! BPF Type Format (Documentation/bpf/btf.rst): the types of an object (its `.BTF` section),
//! of the kernel (`/sys/kernel/btf/vmlinux`), or of a view built here (`Builder`), which CO-RE
//! relocation (`core.rs`) matches by name.

use crate::read::{Bytes, Error};
use std::collections::HashMap;

const MAGIC: u16 = 0xeb9f;

/// A member of a struct or union; `bit_offset` from the start of the aggregate,
/// `bitfield_size` 0 for an ordinary member.
#[derive(Clone, Debug)]
pub struct Member {
    pub name: u32,
    pub ty: u32,
    pub bit_offset: u32,
    pub bitfield_size: u32,
}

#[derive(Clone, Debug)]
pub struct SecVar {
    pub ty: u32,
    pub offset: u32,
    pub size: u32,
}

#[derive(Clone, Debug)]
pub enum Kind {
    Void,
    Int { size: u32, bits: u32, signed: bool },
    Ptr(u32),
    Array { elem: u32, len: u32 },
    Struct { size: u32, members: Vec<Member> },
    Union { size: u32, members: Vec<Member> },
    Enum { size: u32, values: Vec<(u32, i64)> },
    Fwd,
    Typedef(u32),
    Volatile(u32),
    Const(u32),
    Restrict(u32),
    Func { proto: u32 },
    FuncProto { ret: u32, params: Vec<(u32, u32)> },
    Var { ty: u32 },
    Datasec { size: u32, vars: Vec<SecVar> },
    Float { size: u32 },
    DeclTag,
    TypeTag(u32),
}

#[derive(Clone, Debug)]
pub struct Type {
    /// Offset of the name in the string table (0: anonymous).
    pub name: u32,
    pub kind: Kind,
}

pub struct Btf {
    types: Vec<Type>,
    strings: Vec<u8>,
    by_name: HashMap<String, Vec<u32>>,
}

impl Btf {
    pub fn parse(data: &[u8]) -> Result<Btf, Error> {
        let b = Bytes(data);
        if b.u16(0)? != MAGIC {
            return Err(Error::new("BTF: bad magic (or a big-endian object)"));
        }
        let hdr_len = b.u32(4)? as usize;
        let (type_off, type_len) = (b.u32(8)? as usize, b.u32(12)? as usize);
        let (str_off, str_len) = (b.u32(16)? as usize, b.u32(20)? as usize);
        let types_bytes = Bytes(b.slice(hdr_len + type_off, type_len)?);
        let strings = b.slice(hdr_len + str_off, str_len)?.to_vec();
        let mut types = vec![Type { name: 0, kind: Kind::Void }];
        let mut o = 0;
        let t = types_bytes;
        while o < type_len {
            let name = t.u32(o)?;
            let info = t.u32(o + 4)?;
            let size_or_type = t.u32(o + 8)?;
            o += 12;
            let vlen = (info & 0xffff) as usize;
            let kind_flag = info >> 31 == 1;
            let kind = match (info >> 24) & 0x1f {
                1 => {
                    let enc = t.u32(o)?;
                    o += 4;
                    Kind::Int { size: size_or_type, bits: enc & 0xff, signed: (enc >> 24) & 1 == 1 }
                }
                2 => Kind::Ptr(size_or_type),
                3 => {
                    let k = Kind::Array { elem: t.u32(o)?, len: t.u32(o + 8)? };
                    o += 12;
                    k
                }
                k @ (4 | 5) => {
                    let mut members = Vec::with_capacity(vlen);
                    for _ in 0..vlen {
                        let off = t.u32(o + 8)?;
                        let (bit_offset, bitfield_size) =
                            if kind_flag { (off & 0xff_ffff, off >> 24) } else { (off, 0) };
                        members.push(Member { name: t.u32(o)?, ty: t.u32(o + 4)?, bit_offset, bitfield_size });
                        o += 12;
                    }
                    if k == 4 {
                        Kind::Struct { size: size_or_type, members }
                    } else {
                        Kind::Union { size: size_or_type, members }
                    }
                }
                6 => {
                    let mut values = Vec::with_capacity(vlen);
                    for _ in 0..vlen {
                        values.push((t.u32(o)?, t.u32(o + 4)? as i32 as i64));
                        o += 8;
                    }
                    Kind::Enum { size: size_or_type, values }
                }
                7 => Kind::Fwd,
                8 => Kind::Typedef(size_or_type),
                9 => Kind::Volatile(size_or_type),
                10 => Kind::Const(size_or_type),
                11 => Kind::Restrict(size_or_type),
                12 => Kind::Func { proto: size_or_type },
                13 => {
                    let mut params = Vec::with_capacity(vlen);
                    for _ in 0..vlen {
                        params.push((t.u32(o)?, t.u32(o + 4)?));
                        o += 8;
                    }
                    Kind::FuncProto { ret: size_or_type, params }
                }
                14 => {
                    o += 4;
                    Kind::Var { ty: size_or_type }
                }
                15 => {
                    let mut vars = Vec::with_capacity(vlen);
                    for _ in 0..vlen {
                        vars.push(SecVar { ty: t.u32(o)?, offset: t.u32(o + 4)?, size: t.u32(o + 8)? });
                        o += 12;
                    }
                    Kind::Datasec { size: size_or_type, vars }
                }
                16 => Kind::Float { size: size_or_type },
                17 => {
                    o += 4;
                    Kind::DeclTag
                }
                18 => Kind::TypeTag(size_or_type),
                19 => {
                    let mut values = Vec::with_capacity(vlen);
                    for _ in 0..vlen {
                        let v = (t.u32(o + 8)? as u64) << 32 | t.u32(o + 4)? as u64;
                        values.push((t.u32(o)?, v as i64));
                        o += 12;
                    }
                    Kind::Enum { size: size_or_type, values }
                }
                k => return Err(Error::new(format!("BTF: unknown type kind {k}"))),
            };
            types.push(Type { name, kind });
        }
        Ok(Btf::from_parts(types, strings))
    }

    fn from_parts(types: Vec<Type>, strings: Vec<u8>) -> Btf {
        let mut btf = Btf { types, strings, by_name: HashMap::new() };
        let mut by_name: HashMap<String, Vec<u32>> = HashMap::new();
        for (id, t) in btf.types.iter().enumerate() {
            if t.name != 0 {
                by_name.entry(btf.str_at(t.name).to_string()).or_default().push(id as u32);
            }
        }
        btf.by_name = by_name;
        btf
    }

    pub fn len(&self) -> usize {
        self.types.len()
    }

    pub fn is_empty(&self) -> bool {
        self.types.len() <= 1
    }

    pub fn ty(&self, id: u32) -> Result<&Type, Error> {
        self.types.get(id as usize).ok_or_else(|| Error::new(format!("BTF: no type {id}")))
    }

    /// The string at `off` of the string table ("" if out of range).
    pub fn str_at(&self, off: u32) -> &str {
        Bytes(&self.strings).cstr(off as usize).unwrap_or("")
    }

    pub fn name(&self, id: u32) -> &str {
        self.types.get(id as usize).map_or("", |t| self.str_at(t.name))
    }

    /// Types named `name` exactly.
    pub fn named(&self, name: &str) -> &[u32] {
        self.by_name.get(name).map_or(&[], |v| v.as_slice())
    }

    /// The first type named `name` that `pick` accepts.
    pub fn find(&self, name: &str, pick: impl Fn(&Kind) -> bool) -> Option<u32> {
        self.named(name).iter().copied().find(|&id| pick(&self.types[id as usize].kind))
    }

    /// Follows typedefs and qualifiers (const, volatile, restrict, type tags) to the type
    /// they name.
    pub fn resolve(&self, mut id: u32) -> Result<u32, Error> {
        for _ in 0..64 {
            match self.ty(id)?.kind {
                Kind::Typedef(t) | Kind::Volatile(t) | Kind::Const(t) | Kind::Restrict(t) | Kind::TypeTag(t) => id = t,
                _ => return Ok(id),
            }
        }
        Err(Error::new("BTF: a chain of typedefs too long"))
    }

    /// Size in bytes of a type.
    pub fn size_of(&self, id: u32) -> Result<u32, Error> {
        let id = self.resolve(id)?;
        Ok(match &self.ty(id)?.kind {
            Kind::Int { size, .. }
            | Kind::Struct { size, .. }
            | Kind::Union { size, .. }
            | Kind::Enum { size, .. }
            | Kind::Datasec { size, .. }
            | Kind::Float { size } => *size,
            Kind::Ptr(_) => 8,
            Kind::Array { elem, len } => self.size_of(*elem)?.saturating_mul(*len),
            Kind::Var { ty } => self.size_of(*ty)?,
            k => return Err(Error::new(format!("BTF: type {id} ({k:?}) has no size"))),
        })
    }

    /// Members of a struct or union (None for other kinds).
    pub fn members(&self, id: u32) -> Option<&[Member]> {
        match &self.types.get(id as usize)?.kind {
            Kind::Struct { members, .. } | Kind::Union { members, .. } => Some(members),
            _ => None,
        }
    }
}

/// Builds a BTF in memory: the types a view presents to programs (`vm` relocates programs
/// against it exactly as the kernel's loader relocates them against vmlinux).
#[derive(Default)]
pub struct Builder {
    types: Vec<Type>,
    strings: Vec<u8>,
}

impl Builder {
    pub fn new() -> Builder {
        Builder { types: vec![Type { name: 0, kind: Kind::Void }], strings: vec![0] }
    }

    fn string(&mut self, s: &str) -> u32 {
        if s.is_empty() {
            return 0;
        }
        let off = self.strings.len() as u32;
        self.strings.extend_from_slice(s.as_bytes());
        self.strings.push(0);
        off
    }

    pub fn add(&mut self, name: &str, kind: Kind) -> u32 {
        let name = self.string(name);
        self.types.push(Type { name, kind });
        (self.types.len() - 1) as u32
    }

    pub fn int(&mut self, name: &str, size: u32, signed: bool) -> u32 {
        self.add(name, Kind::Int { size, bits: size * 8, signed })
    }

    /// A struct of `size` bytes with members (name, type, byte offset); a member of type
    /// `(type, bits)` with bits > 0 is a bitfield at that bit offset instead.
    pub fn structure(&mut self, name: &str, size: u32, members: &[(&str, u32, u32, u32)]) -> u32 {
        let members = members
            .iter()
            .map(|&(m, ty, bit_offset, bits)| Member { name: self.string(m), ty, bit_offset, bitfield_size: bits })
            .collect();
        self.add(name, Kind::Struct { size, members })
    }

    pub fn build(self) -> Btf {
        Btf::from_parts(self.types, self.strings)
    }
}
