//! The few parts of ELF64 (little-endian, as `clang -target bpf` writes on x86-64) that an
//! eBPF object uses: section headers and names, the symbol table, and REL relocations.
//! Everything is bounds-checked: a truncated or corrupt file is an error, never a panic.

use crate::read::{Bytes, Error};

/// `e_machine` of an eBPF object.
const EM_BPF: u16 = 247;
pub const SHT_PROGBITS: u32 = 1;
pub const SHT_SYMTAB: u32 = 2;
pub const SHT_NOBITS: u32 = 8;
pub const SHT_REL: u32 = 9;
pub const SHF_WRITE: u64 = 1;
pub const SHF_EXECINSTR: u64 = 4;
pub const STT_OBJECT: u8 = 1;
pub const STT_FUNC: u8 = 2;
pub const STT_SECTION: u8 = 3;
pub const STB_LOCAL: u8 = 0;
pub const SHN_UNDEF: u16 = 0;

#[derive(Clone, Debug)]
pub struct Section {
    pub name: String,
    pub kind: u32,
    pub flags: u64,
    pub offset: u64,
    pub size: u64,
    pub link: u32,
    pub info: u32,
}

#[derive(Clone, Debug)]
pub struct Symbol {
    pub name: String,
    pub kind: u8,
    pub binding: u8,
    pub section: u16,
    pub value: u64,
    pub size: u64,
}

/// One REL entry: at `offset` of the section it applies to, `kind` against symbol `symbol`.
#[derive(Clone, Copy, Debug)]
pub struct Rel {
    pub offset: u64,
    pub symbol: u32,
    pub kind: u32,
}

pub struct Elf<'a> {
    data: &'a [u8],
    pub sections: Vec<Section>,
    pub symbols: Vec<Symbol>,
}

impl<'a> Elf<'a> {
    pub fn parse(data: &'a [u8]) -> Result<Elf<'a>, Error> {
        let b = Bytes(data);
        if data.len() < 64 || &data[..4] != b"\x7fELF" {
            return Err(Error::new("not an ELF file"));
        }
        if data[4] != 2 || data[5] != 1 {
            return Err(Error::new("not a 64-bit little-endian ELF file (compile with clang -target bpf on a little-endian host, or -target bpfel)"));
        }
        if b.u16(18)? != EM_BPF {
            return Err(Error::new(format!("not an eBPF object (ELF machine {}, eBPF is {EM_BPF})", b.u16(18)?)));
        }
        let shoff = b.u64(40)? as usize;
        let shentsize = b.u16(58)? as usize;
        let shnum = b.u16(60)? as usize;
        let shstrndx = b.u16(62)? as usize;
        if shentsize < 64 {
            return Err(Error::new("ELF section header size below 64"));
        }
        let mut raw = Vec::with_capacity(shnum);
        for i in 0..shnum {
            let o = shoff.checked_add(i * shentsize).ok_or_else(|| Error::new("ELF section table out of range"))?;
            raw.push((
                b.u32(o)?,
                Section {
                    name: String::new(),
                    kind: b.u32(o + 4)?,
                    flags: b.u64(o + 8)?,
                    offset: b.u64(o + 24)?,
                    size: b.u64(o + 32)?,
                    link: b.u32(o + 40)?,
                    info: b.u32(o + 44)?,
                },
            ));
        }
        let strtab = raw.get(shstrndx).map(|(_, s)| s.clone()).ok_or_else(|| Error::new("no section name table"))?;
        let mut elf = Elf { data, sections: Vec::new(), symbols: Vec::new() };
        let names = elf.section_bytes(&strtab)?;
        for (name_off, mut s) in raw {
            s.name = Bytes(names).cstr(name_off as usize)?.to_string();
            elf.sections.push(s);
        }
        if let Some(symtab) = elf.sections.iter().find(|s| s.kind == SHT_SYMTAB).cloned() {
            let strs = elf.section_bytes(
                elf.sections.get(symtab.link as usize).ok_or_else(|| Error::new("symbol table without strings"))?,
            )?;
            let table = elf.section_bytes(&symtab)?;
            let t = Bytes(table);
            for i in 0..table.len() / 24 {
                let o = i * 24;
                let info = t.u8(o + 4)?;
                elf.symbols.push(Symbol {
                    name: Bytes(strs).cstr(t.u32(o)? as usize)?.to_string(),
                    kind: info & 0xf,
                    binding: info >> 4,
                    section: t.u16(o + 6)?,
                    value: t.u64(o + 8)?,
                    size: t.u64(o + 16)?,
                });
            }
        }
        Ok(elf)
    }

    /// A section's contents (empty for SHT_NOBITS, such as .bss).
    pub fn section_bytes(&self, s: &Section) -> Result<&'a [u8], Error> {
        if s.kind == SHT_NOBITS {
            return Ok(&[]);
        }
        let end = s.offset.checked_add(s.size).ok_or_else(|| Error::new("section out of range"))?;
        self.data
            .get(s.offset as usize..end as usize)
            .ok_or_else(|| Error::new(format!("section {} extends past the end of the file", s.name)))
    }

    pub fn section_named(&self, name: &str) -> Option<(usize, &Section)> {
        self.sections.iter().enumerate().find(|(_, s)| s.name == name)
    }

    /// The REL entries that apply to section `target`.
    pub fn relocations_for(&self, target: usize) -> Result<Vec<Rel>, Error> {
        let mut out = Vec::new();
        for s in self.sections.iter().filter(|s| s.kind == SHT_REL && s.info as usize == target) {
            let t = Bytes(self.section_bytes(s)?);
            for i in 0..s.size as usize / 16 {
                let info = t.u64(i * 16 + 8)?;
                out.push(Rel { offset: t.u64(i * 16)?, symbol: (info >> 32) as u32, kind: info as u32 });
            }
        }
        Ok(out)
    }
}
