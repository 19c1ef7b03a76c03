//! An eBPF object file as clang writes it, read into what a loader needs: entry programs
//! with their subprograms linked in, the data they address (.rodata, .data, .bss), the
//! kernel functions (kfuncs) they call, their CO-RE relocations, and the `struct_ops` maps
//! (`SEC(".struct_ops")` variables) that name a program for each operation.
//!
//! Both loaders start here: the kernel's (fatpipe-emu), which relocates against vmlinux's
//! BTF and hands the programs to bpf(2), and the interpreter's (`vm.rs`), which relocates
//! against the view a simulator presents.

use crate::btf::{Btf, Kind};
use crate::core::{self, Outcome};
use crate::elf::{self, Elf};
use crate::ext::{self, CoreRelo};
use crate::insn::{self, Insn};
use crate::read::Error;
use std::collections::HashMap;

/// ELF relocation types of eBPF (llvm BPFELFObjectWriter).
const R_BPF_64_64: u32 = 1;
const R_BPF_64_ABS64: u32 = 2;
const R_BPF_64_32: u32 = 10;
const SHF_ALLOC: u64 = 2;

/// A global variable of a data section, from the object's BTF.
#[derive(Clone, Debug)]
pub struct Var {
    pub name: String,
    pub offset: u32,
    pub size: u32,
    /// Its BTF type in the object (for the value's kind: integer, signedness, array).
    pub ty: u32,
}

/// `.rodata`, `.data` or `.bss` (and their named variants): the bytes every program of the
/// object shares. Read-only data is where parameters go: a loader writes them before the
/// programs run (libbpf's `const volatile` convention).
#[derive(Clone, Debug)]
pub struct DataSection {
    pub name: String,
    pub bytes: Vec<u8>,
    pub read_only: bool,
    pub vars: Vec<Var>,
    /// Where the section's bytes lie in the file (None for .bss, which has none).
    pub file_offset: Option<u64>,
}

/// A 64-bit immediate load of an address inside a data section.
#[derive(Clone, Copy, Debug)]
pub struct DataRef {
    pub insn: usize,
    pub section: usize,
    pub offset: u32,
}

#[derive(Clone, Debug)]
pub struct Program {
    /// The function's name (`fp_ssthresh`) and its section (`struct_ops/fp_ssthresh`).
    pub name: String,
    pub section: String,
    /// The program followed by every subprogram it reaches, calls resolved.
    pub insns: Vec<Insn>,
    pub data_refs: Vec<DataRef>,
    /// Calls of kernel functions by name (`tcp_slow_start`).
    pub kfunc_calls: Vec<(usize, String)>,
    pub core_relos: Vec<(usize, CoreRelo)>,
}

/// One `struct_ops` variable: an operations table such as `struct tcp_congestion_ops`.
#[derive(Clone, Debug)]
pub struct StructOps {
    pub var: String,
    /// The struct's name without flavour ("tcp_congestion_ops").
    pub type_name: String,
    /// Operation name -> program index, for the members that name a program.
    pub programs: Vec<(String, usize)>,
    /// Its `name` member, if it has one.
    pub ops_name: Option<String>,
    /// Its `flags` member, if it has one.
    pub flags: u32,
    /// Declared in `.struct_ops.link` (meant to be attached through a link).
    pub link: bool,
}

pub struct Object {
    pub btf: Btf,
    pub license: String,
    pub programs: Vec<Program>,
    pub data: Vec<DataSection>,
    pub struct_ops: Vec<StructOps>,
}

/// A function found in a code section: where it starts and how long it is, in instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct FuncKey {
    section: usize,
    start: usize,
}

struct Func {
    name: String,
    len: usize,
}

/// Per code section: decoded instructions, relocations by instruction, CO-RE by instruction.
struct CodeSection {
    insns: Vec<Insn>,
    relocs: HashMap<usize, elf::Rel>,
    core: Vec<(usize, CoreRelo)>,
}

impl Object {
    pub fn parse(data: &[u8]) -> Result<Object, Error> {
        let elf = Elf::parse(data)?;
        let btf_section = elf
            .section_named(".BTF")
            .ok_or_else(|| Error::new("the object has no BTF (.BTF section): compile with clang -g"))?;
        let btf = Btf::parse(elf.section_bytes(btf_section.1)?)?;
        let license = match elf.section_named("license") {
            Some((_, s)) => crate::read::Bytes(elf.section_bytes(s)?).cstr(0)?.to_string(),
            None => String::new(),
        };
        let mut core_by_section: HashMap<String, Vec<CoreRelo>> = HashMap::new();
        if let Some((_, s)) = elf.section_named(".BTF.ext") {
            for (name, relos) in ext::core_relos(elf.section_bytes(s)?, |off| btf.str_at(off).to_string())? {
                core_by_section.entry(name).or_default().extend(relos);
            }
        }
        // Data sections and their variables.
        let mut data = Vec::new();
        let mut data_index = HashMap::new();
        for (i, s) in elf.sections.iter().enumerate() {
            let is_data =
                [".rodata", ".data", ".bss"].iter().any(|p| s.name == *p || s.name.starts_with(&format!("{p}.")));
            if !is_data || s.flags & SHF_ALLOC == 0 {
                continue;
            }
            let bytes =
                if s.kind == elf::SHT_NOBITS { vec![0; s.size as usize] } else { elf.section_bytes(s)?.to_vec() };
            let mut vars = Vec::new();
            if let Some(sec) = btf.find(&s.name, |k| matches!(k, Kind::Datasec { .. })) {
                if let Kind::Datasec { vars: sv, .. } = &btf.ty(sec)?.kind {
                    for v in sv {
                        let ty = match btf.ty(v.ty)?.kind {
                            Kind::Var { ty } => ty,
                            _ => continue,
                        };
                        vars.push(Var { name: btf.name(v.ty).to_string(), offset: v.offset, size: v.size, ty });
                    }
                }
            }
            // clang leaves the offsets of variables in BTF at 0 for some sections; the
            // symbol table has them.
            for v in &mut vars {
                if let Some(sym) = elf.symbols.iter().find(|y| y.name == v.name && y.section as usize == i) {
                    v.offset = sym.value as u32;
                    v.size = sym.size as u32;
                }
            }
            data_index.insert(i, data.len());
            let file_offset = (s.kind != elf::SHT_NOBITS).then_some(s.offset);
            data.push(DataSection {
                name: s.name.clone(),
                bytes,
                read_only: s.flags & elf::SHF_WRITE == 0,
                vars,
                file_offset,
            });
        }
        // Code sections.
        let mut code: HashMap<usize, CodeSection> = HashMap::new();
        for (i, s) in elf.sections.iter().enumerate() {
            if s.kind != elf::SHT_PROGBITS || s.flags & elf::SHF_EXECINSTR == 0 || s.size == 0 {
                continue;
            }
            let insns = insn::decode_all(elf.section_bytes(s)?);
            let relocs = elf.relocations_for(i)?.into_iter().map(|r| (r.offset as usize / 8, r)).collect();
            let core = core_by_section
                .remove(&s.name)
                .unwrap_or_default()
                .into_iter()
                .map(|r| (r.insn_off as usize / 8, r))
                .collect();
            code.insert(i, CodeSection { insns, relocs, core });
        }
        let mut funcs: HashMap<FuncKey, Func> = HashMap::new();
        for sym in &elf.symbols {
            if sym.kind == elf::STT_FUNC && code.contains_key(&(sym.section as usize)) {
                let key = FuncKey { section: sym.section as usize, start: sym.value as usize / 8 };
                funcs.insert(key, Func { name: sym.name.clone(), len: sym.size as usize / 8 });
            }
        }
        let linker = Linker { elf: &elf, code: &code, funcs: &funcs, data_index: &data_index };
        let mut programs = Vec::new();
        let mut entries: Vec<(&FuncKey, &Func)> =
            funcs.iter().filter(|(k, _)| elf.sections[k.section].name != ".text").collect();
        entries.sort_by_key(|(k, _)| (k.section, k.start));
        let mut program_at = HashMap::new();
        for (key, func) in entries {
            program_at.insert(*key, programs.len());
            programs.push(linker.link(*key, &func.name)?);
        }
        let struct_ops = read_struct_ops(&elf, &btf, &program_at)?;
        Ok(Object { btf, license, programs, data, struct_ops })
    }

    pub fn program(&self, name: &str) -> Option<&Program> {
        self.programs.iter().find(|p| p.name == name)
    }

    /// The data section `name` and the variable `var` in it.
    pub fn var(&self, var: &str) -> Option<(usize, &Var)> {
        self.data.iter().enumerate().find_map(|(i, d)| d.vars.iter().find(|v| v.name == var).map(|v| (i, v)))
    }

    /// Relocates every program's CO-RE accesses against `target`; returns the fields (and
    /// types) the target lacks, each with the program that reaches for it. Instructions
    /// that touch them are poisoned (a call of helper `core::POISON_HELPER`).
    pub fn relocate(&mut self, target: &Btf) -> Result<Vec<(String, String)>, Error> {
        let mut missing = Vec::new();
        for p in &mut self.programs {
            for (at, r) in &p.core_relos {
                let access = self.btf.str_at(r.access).to_string();
                match core::relocate(&self.btf, target, &mut p.insns, *at, r.type_id, &access, r.kind)
                    .map_err(|e| Error::new(format!("{}: {e}", p.name)))?
                {
                    Outcome::Patched => {}
                    Outcome::Missing(label) => missing.push((p.name.clone(), label)),
                }
            }
        }
        Ok(missing)
    }

    /// The object file `elf` (the one this was parsed from) with the data sections' current
    /// bytes, parameters included: an object that carries its parameters.
    pub fn with_data(&self, elf: &[u8]) -> Result<Vec<u8>, Error> {
        let mut out = elf.to_vec();
        for d in &self.data {
            let Some(at) = d.file_offset else {
                if d.bytes.iter().any(|&b| b != 0) {
                    return Err(Error::new(format!("{} has no bytes in the file to carry its values", d.name)));
                }
                continue;
            };
            let range = at as usize..at as usize + d.bytes.len();
            out.get_mut(range)
                .ok_or_else(|| Error::new(format!("{} lies outside the file", d.name)))?
                .copy_from_slice(&d.bytes);
        }
        Ok(out)
    }

    /// Writes `value` (little-endian, at most the variable's size) into variable `var`.
    pub fn set_var(&mut self, var: &str, value: &[u8]) -> Result<(), Error> {
        let (sec, v) = self
            .var(var)
            .map(|(s, v)| (s, v.clone()))
            .ok_or_else(|| Error::new(format!("the object has no global variable {var:?}")))?;
        if value.len() > v.size as usize {
            return Err(Error::new(format!("{var}: {} bytes do not fit its {} bytes", value.len(), v.size)));
        }
        let bytes = &mut self.data[sec].bytes;
        let end = v.offset as usize + value.len();
        if end > bytes.len() {
            return Err(Error::new(format!("{var}: lies outside its section")));
        }
        bytes[v.offset as usize..end].copy_from_slice(value);
        Ok(())
    }
}

struct Linker<'a, 'e> {
    elf: &'a Elf<'e>,
    code: &'a HashMap<usize, CodeSection>,
    funcs: &'a HashMap<FuncKey, Func>,
    data_index: &'a HashMap<usize, usize>,
}

impl Linker<'_, '_> {
    /// The program starting at `entry`, followed by the subprograms it calls (each once).
    fn link(&self, entry: FuncKey, name: &str) -> Result<Program, Error> {
        let section = self.elf.sections[entry.section].name.clone();
        let mut p = Program {
            name: name.to_string(),
            section,
            insns: Vec::new(),
            data_refs: Vec::new(),
            kfunc_calls: Vec::new(),
            core_relos: Vec::new(),
        };
        let mut placed: HashMap<FuncKey, usize> = HashMap::new();
        let mut queue = vec![entry];
        // Calls to patch once every function is placed: (call index, callee).
        let mut calls: Vec<(usize, FuncKey)> = Vec::new();
        while let Some(key) = queue.pop() {
            if placed.contains_key(&key) {
                continue;
            }
            let cs = self.code.get(&key.section).ok_or_else(|| Error::new("a call into a section without code"))?;
            let len = match self.funcs.get(&key) {
                Some(f) if f.len > 0 => f.len,
                _ => cs.insns.len() - key.start,
            };
            let end = key
                .start
                .checked_add(len)
                .filter(|&e| e <= cs.insns.len())
                .ok_or_else(|| Error::new(format!("{name}: a function runs past its section")))?;
            let base = p.insns.len();
            placed.insert(key, base);
            p.insns.extend_from_slice(&cs.insns[key.start..end]);
            for (at, r) in cs.core.iter().filter(|(at, _)| (key.start..end).contains(at)) {
                p.core_relos.push((base + at - key.start, r.clone()));
            }
            let mut i = key.start;
            while i < end {
                let ins = cs.insns[i];
                let at = base + i - key.start;
                if let Some(rel) = cs.relocs.get(&i) {
                    let sym = self
                        .elf
                        .symbols
                        .get(rel.symbol as usize)
                        .ok_or_else(|| Error::new("relocation against a missing symbol"))?;
                    match rel.kind {
                        R_BPF_64_64 if ins.is_ld_imm64() => {
                            if sym.section == elf::SHN_UNDEF {
                                return Err(Error::new(format!(
                                    "{name}: extern variable {:?} is not supported (only kernel functions are)",
                                    sym.name
                                )));
                            }
                            let Some(&section) = self.data_index.get(&(sym.section as usize)) else {
                                let sec = &self.elf.sections[sym.section as usize].name;
                                return Err(Error::new(format!(
                                    "{name}: it addresses section {sec:?}; only .rodata, .data and .bss are supported (no maps: keep per-connection state in the socket's icsk_ca_priv)"
                                )));
                            };
                            let offset = sym.value as i64 + ins.imm as i64;
                            p.data_refs.push(DataRef { insn: at, section, offset: offset as u32 });
                        }
                        R_BPF_64_32 if ins.is_call() => {
                            if sym.section == elf::SHN_UNDEF {
                                p.kfunc_calls.push((at, sym.name.clone()));
                            } else {
                                let callee = FuncKey {
                                    section: sym.section as usize,
                                    start: (sym.value as i64 / 8 + ins.imm as i64 + 1) as usize,
                                };
                                calls.push((at, callee));
                                queue.push(callee);
                            }
                        }
                        k => return Err(Error::new(format!("{name}: unsupported relocation type {k} in code"))),
                    }
                } else if ins.is_call() && ins.src == insn::PSEUDO_CALL {
                    let callee = FuncKey { section: key.section, start: (i as i64 + ins.imm as i64 + 1) as usize };
                    calls.push((at, callee));
                    queue.push(callee);
                }
                i += if ins.is_ld_imm64() { 2 } else { 1 };
            }
        }
        for (at, callee) in calls {
            let target = placed[&callee];
            p.insns[at].src = insn::PSEUDO_CALL;
            p.insns[at].imm = (target as i64 - at as i64 - 1) as i32;
        }
        Ok(p)
    }
}

fn read_struct_ops(elf: &Elf, btf: &Btf, program_at: &HashMap<FuncKey, usize>) -> Result<Vec<StructOps>, Error> {
    let mut out = Vec::new();
    for (i, s) in elf.sections.iter().enumerate() {
        if s.name != ".struct_ops" && s.name != ".struct_ops.link" {
            continue;
        }
        let bytes = elf.section_bytes(s)?;
        let Some(sec) = btf.find(&s.name, |k| matches!(k, Kind::Datasec { .. })) else {
            return Err(Error::new(format!("{}: no BTF description of the section", s.name)));
        };
        let Kind::Datasec { vars, .. } = &btf.ty(sec)?.kind else { unreachable!() };
        let relocs = elf.relocations_for(i)?;
        for v in vars {
            let var_name = btf.name(v.ty).to_string();
            let Kind::Var { ty } = btf.ty(v.ty)?.kind else { continue };
            let st = btf.resolve(ty)?;
            let members = btf.members(st).ok_or_else(|| Error::new(format!("{var_name}: not a struct")))?;
            // clang may leave a variable's offset at 0 in BTF; the symbol has it.
            let var_off = elf
                .symbols
                .iter()
                .find(|y| y.name == var_name && y.section as usize == i)
                .map_or(v.offset as u64, |y| y.value);
            let mut ops = StructOps {
                var: var_name.clone(),
                type_name: core::essential_name(btf.name(st)).to_string(),
                programs: Vec::new(),
                ops_name: None,
                flags: 0,
                link: s.name.ends_with(".link"),
            };
            for m in members {
                let mname = btf.str_at(m.name);
                let at = var_off + m.bit_offset as u64 / 8;
                if mname == "name" {
                    let raw = bytes.get(at as usize..(at as usize + btf.size_of(m.ty)? as usize)).unwrap_or(&[]);
                    let end = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
                    ops.ops_name = Some(String::from_utf8_lossy(&raw[..end]).into_owned());
                } else if mname == "flags" {
                    ops.flags = crate::read::Bytes(bytes).u32(at as usize).unwrap_or(0);
                }
                if let Some(r) = relocs.iter().find(|r| r.offset == at && r.kind == R_BPF_64_ABS64) {
                    let sym = &elf.symbols[r.symbol as usize];
                    let key = FuncKey { section: sym.section as usize, start: sym.value as usize / 8 };
                    let prog = *program_at.get(&key).ok_or_else(|| {
                        Error::new(format!(
                            "{var_name}.{mname}: names {:?}, which is not a program in its own section",
                            sym.name
                        ))
                    })?;
                    ops.programs.push((mname.to_string(), prog));
                }
            }
            out.push(ops);
        }
    }
    Ok(out)
}
