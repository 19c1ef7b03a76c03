//! CO-RE relocation (Compile Once - Run Everywhere, Documentation/bpf/llvm_reloc.rst and
//! libbpf's relo_core.c as a description of the rules): a program compiled against its own
//! declarations of kernel structs (marked `preserve_access_index`) records, for every field
//! access, the path to the field by member index. Relocation follows the same path by
//! member *name* in a target BTF -- the running kernel's, or the view a simulator presents
//! -- and patches each instruction's offset (or size, or constant) to the target's layout.

use crate::btf::{Btf, Kind};
use crate::insn::Insn;
use crate::read::Error;

/// `enum bpf_core_relo_kind` (include/uapi/linux/bpf.h).
pub const FIELD_BYTE_OFFSET: u32 = 0;
pub const FIELD_BYTE_SIZE: u32 = 1;
pub const FIELD_EXISTS: u32 = 2;
pub const FIELD_SIGNED: u32 = 3;
pub const FIELD_LSHIFT_U64: u32 = 4;
pub const FIELD_RSHIFT_U64: u32 = 5;
pub const TYPE_ID_LOCAL: u32 = 6;
pub const TYPE_ID_TARGET: u32 = 7;
pub const TYPE_EXISTS: u32 = 8;
pub const TYPE_SIZE: u32 = 9;
pub const ENUMVAL_EXISTS: u32 = 10;
pub const ENUMVAL_VALUE: u32 = 11;
pub const TYPE_MATCHES: u32 = 12;

/// A call to this helper number marks an instruction whose field the target lacks (libbpf's
/// choice, so that the kernel's verifier names it if the code is reachable).
pub const POISON_HELPER: i32 = 0xbad2310;

/// A field as the relocation found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Field {
    bit_offset: u32,
    /// Type of the field (for its size and signedness).
    ty: u32,
    bitfield_size: u32,
}

/// "The name before ___": libbpf's flavours (`struct tcp_sock___old`) match `tcp_sock`.
pub fn essential_name(name: &str) -> &str {
    name.find("___").map_or(name, |i| &name[..i])
}

/// One access path step of the local type, resolved.
struct Step {
    /// Member name (None: an array index or an anonymous member).
    name: Option<String>,
    array_index: Option<u32>,
}

/// The local path: the steps and the local field.
fn local_path(local: &Btf, root: u32, access: &[u32]) -> Result<(Vec<Step>, Field), Error> {
    let root = local.resolve(root)?;
    let mut cur = root;
    let mut bit_offset = access[0] * local.size_of(root)? * 8;
    let mut bitfield_size = 0;
    let mut steps = Vec::new();
    for &i in &access[1..] {
        let id = local.resolve(cur)?;
        match &local.ty(id)?.kind {
            Kind::Struct { members, .. } | Kind::Union { members, .. } => {
                let m = members.get(i as usize).ok_or_else(|| Error::new("CO-RE: member index out of range"))?;
                bit_offset += m.bit_offset;
                bitfield_size = m.bitfield_size;
                let name = local.str_at(m.name);
                steps.push(Step { name: (!name.is_empty()).then(|| name.to_string()), array_index: None });
                cur = m.ty;
            }
            Kind::Array { elem, .. } => {
                bit_offset += i * local.size_of(*elem)? * 8;
                bitfield_size = 0;
                steps.push(Step { name: None, array_index: Some(i) });
                cur = *elem;
            }
            _ => return Err(Error::new("CO-RE: access path through a type that is neither struct nor array")),
        }
    }
    Ok((steps, Field { bit_offset, ty: cur, bitfield_size }))
}

/// Finds member `name` in struct/union `id`, looking through anonymous members as C does;
/// returns its bit offset and the member.
fn find_member(btf: &Btf, id: u32, name: &str, depth: u32) -> Option<(u32, crate::btf::Member)> {
    let members = btf.members(btf.resolve(id).ok()?)?;
    for m in members {
        let mname = btf.str_at(m.name);
        if mname == name {
            return Some((m.bit_offset, m.clone()));
        }
        if mname.is_empty() && depth < 8 {
            if let Some((off, found)) = find_member(btf, m.ty, name, depth + 1) {
                return Some((m.bit_offset + off, found));
            }
        }
    }
    None
}

/// Follows the local path in target type `root`; None when a member is missing.
fn target_field(target: &Btf, root: u32, access0: u32, steps: &[Step]) -> Result<Option<Field>, Error> {
    let root = target.resolve(root)?;
    let mut cur = root;
    let mut bit_offset = access0 * target.size_of(root)? * 8;
    let mut bitfield_size = 0;
    for step in steps {
        let id = target.resolve(cur)?;
        if let Some(i) = step.array_index {
            let Kind::Array { elem, len } = target.ty(id)?.kind else { return Ok(None) };
            if len != 0 && i >= len {
                return Ok(None);
            }
            bit_offset += i * target.size_of(elem)? * 8;
            bitfield_size = 0;
            cur = elem;
            continue;
        }
        let Some(name) = &step.name else {
            // An anonymous member: the next named step is looked up through it.
            continue;
        };
        let Some((off, m)) = find_member(target, id, name, 0) else { return Ok(None) };
        bit_offset += off;
        bitfield_size = m.bitfield_size;
        cur = m.ty;
    }
    Ok(Some(Field { bit_offset, ty: cur, bitfield_size }))
}

/// Byte offset and size of the load that holds the field (a bitfield's containing unit).
fn load_unit(btf: &Btf, f: Field) -> Result<(u32, u32), Error> {
    let size = btf.size_of(f.ty)?;
    if f.bitfield_size == 0 {
        return Ok((f.bit_offset / 8, size));
    }
    let mut sz = size.max(1);
    let mut off = f.bit_offset / 8 / sz * sz;
    while f.bit_offset + f.bitfield_size - off * 8 > sz * 8 {
        if sz >= 8 {
            return Err(Error::new("CO-RE: a bitfield spans more than 8 bytes"));
        }
        sz *= 2;
        off = f.bit_offset / 8 / sz * sz;
    }
    Ok((off, sz))
}

fn is_signed(btf: &Btf, ty: u32) -> Result<bool, Error> {
    Ok(match &btf.ty(btf.resolve(ty)?)?.kind {
        Kind::Int { signed, .. } => *signed,
        Kind::Enum { values, .. } => values.iter().any(|&(_, v)| v < 0),
        _ => false,
    })
}

/// The value an instruction needs for a field relocation of `kind`.
fn field_value(btf: &Btf, f: Field, kind: u32) -> Result<u64, Error> {
    let (off, sz) = load_unit(btf, f)?;
    Ok(match kind {
        FIELD_BYTE_OFFSET => off as u64,
        FIELD_BYTE_SIZE => sz as u64,
        FIELD_EXISTS => 1,
        FIELD_SIGNED => is_signed(btf, f.ty)? as u64,
        FIELD_LSHIFT_U64 => {
            if f.bitfield_size == 0 {
                64 - sz as u64 * 8
            } else {
                64 - (f.bit_offset + f.bitfield_size - off * 8) as u64
            }
        }
        FIELD_RSHIFT_U64 => 64 - if f.bitfield_size == 0 { sz * 8 } else { f.bitfield_size } as u64,
        _ => unreachable!("field kinds only"),
    })
}

/// What relocation decided for one instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Patched,
    /// The target lacks the field or type: the instruction now calls `POISON_HELPER`. The
    /// string names it ("tcp_sock.snd_cwnd").
    Missing(String),
}

/// A human name for the accessed field: the root's name and the member names.
fn field_label(local: &Btf, root: u32, steps: &[Step]) -> String {
    let mut s = essential_name(local.name(local.resolve(root).unwrap_or(root))).to_string();
    for step in steps {
        match (&step.name, step.array_index) {
            (Some(n), _) => {
                s.push('.');
                s.push_str(n);
            }
            (None, Some(i)) => s.push_str(&format!("[{i}]")),
            _ => {}
        }
    }
    s
}

/// Target types that may stand for local type `root`: same essential name and kind family.
fn candidates(local: &Btf, target: &Btf, root: u32) -> Result<Vec<u32>, Error> {
    let root = local.resolve(root)?;
    let name = essential_name(local.name(root));
    let local_kind = std::mem::discriminant(&local.ty(root)?.kind);
    Ok(target
        .named(name)
        .iter()
        .copied()
        .filter(|&id| target.ty(id).is_ok_and(|t| std::mem::discriminant(&t.kind) == local_kind))
        .collect())
}

/// Relocates instruction `insns[at]` for record (`type_id`, `access`, `kind`).
pub fn relocate(
    local: &Btf,
    target: &Btf,
    insns: &mut [Insn],
    at: usize,
    type_id: u32,
    access: &str,
    kind: u32,
) -> Result<Outcome, Error> {
    let path: Vec<u32> = access
        .split(':')
        .map(|x| x.parse::<u32>().map_err(|_| Error::new(format!("CO-RE: bad access string {access:?}"))))
        .collect::<Result<_, _>>()?;
    if path.is_empty() {
        return Err(Error::new("CO-RE: empty access string"));
    }
    // clang and libbpf size a bitfield's load unit differently (the record's alignment, the
    // member type's size), so a bitfield's local value cannot be checked (libbpf neither).
    let mut validate = true;
    let (local_value, target_value, label, local_size, target_size) = match kind {
        FIELD_BYTE_OFFSET..=FIELD_RSHIFT_U64 => {
            let (steps, lf) = local_path(local, type_id, &path)?;
            let label = field_label(local, type_id, &steps);
            let mut found = None;
            for cand in candidates(local, target, type_id)? {
                if let Some(tf) = target_field(target, cand, path[0], &steps)? {
                    let v = field_value(target, tf, kind)?;
                    match found {
                        Some((prev, _)) if prev != v => {
                            return Err(Error::new(format!(
                                "CO-RE: {label} is ambiguous in the target (several types of that name disagree)"
                            )))
                        }
                        _ => found = Some((v, load_unit(target, tf)?.1)),
                    }
                }
            }
            validate = lf.bitfield_size == 0;
            let local_value = if kind == FIELD_EXISTS { 1 } else { field_value(local, lf, kind)? };
            let (tv, tsize) = match found {
                Some(x) => x,
                None if kind == FIELD_EXISTS => (0, 0),
                None => {
                    poison(insns, at);
                    return Ok(Outcome::Missing(label));
                }
            };
            (local_value, tv, label, load_unit(local, lf)?.1, tsize)
        }
        TYPE_EXISTS | TYPE_SIZE | TYPE_MATCHES | TYPE_ID_TARGET | TYPE_ID_LOCAL => {
            let label = essential_name(local.name(local.resolve(type_id)?)).to_string();
            let cands = candidates(local, target, type_id)?;
            let local_value = match kind {
                TYPE_SIZE => local.size_of(type_id)? as u64,
                TYPE_ID_LOCAL | TYPE_ID_TARGET => type_id as u64,
                _ => 1,
            };
            let tv = match (kind, cands.first()) {
                (TYPE_ID_LOCAL, _) => type_id as u64,
                (TYPE_EXISTS | TYPE_MATCHES, c) => c.is_some() as u64,
                (TYPE_SIZE, Some(&c)) => target.size_of(c)? as u64,
                (TYPE_ID_TARGET, Some(&c)) => c as u64,
                _ => {
                    poison(insns, at);
                    return Ok(Outcome::Missing(label));
                }
            };
            (local_value, tv, label, 0, 0)
        }
        ENUMVAL_EXISTS | ENUMVAL_VALUE => {
            let root = local.resolve(type_id)?;
            let Kind::Enum { values, .. } = &local.ty(root)?.kind else {
                return Err(Error::new("CO-RE: enum relocation on a non-enum"));
            };
            let (name_off, lv) =
                *values.get(path[0] as usize).ok_or_else(|| Error::new("CO-RE: enumerator out of range"))?;
            let name = local.str_at(name_off).to_string();
            let label = format!("{}::{name}", essential_name(local.name(root)));
            let mut tv = None;
            for c in candidates(local, target, type_id)? {
                if let Kind::Enum { values, .. } = &target.ty(c)?.kind {
                    if let Some(&(_, v)) =
                        values.iter().find(|&&(n, _)| essential_name(target.str_at(n)) == essential_name(&name))
                    {
                        tv = Some(v);
                    }
                }
            }
            match (kind, tv) {
                (ENUMVAL_EXISTS, v) => (1, v.is_some() as u64, label, 0, 0),
                (_, Some(v)) => (lv as u64, v as u64, label, 0, 0),
                _ => {
                    poison(insns, at);
                    return Ok(Outcome::Missing(label));
                }
            }
        }
        k => return Err(Error::new(format!("CO-RE: relocation kind {k} is not supported"))),
    };
    patch(insns, at, kind, validate.then_some(local_value), target_value, local_size, target_size)
        .map_err(|e| Error::new(format!("CO-RE: {label}: {e}")))?;
    Ok(Outcome::Patched)
}

fn poison(insns: &mut [Insn], at: usize) {
    let wide = insns[at].is_ld_imm64();
    insns[at] = Insn::new(crate::insn::JMP | crate::insn::CALL, 0, 0, 0, POISON_HELPER);
    if wide && at + 1 < insns.len() {
        // The second half of a 64-bit load becomes a jump over nothing, so the program
        // stays well formed.
        insns[at + 1] = Insn::new(crate::insn::JMP | crate::insn::JA, 0, 0, 0, 0);
    }
}

fn patch(
    insns: &mut [Insn],
    at: usize,
    kind: u32,
    local: Option<u64>,
    target: u64,
    local_size: u32,
    target_size: u32,
) -> Result<(), String> {
    let check = |current: u64, what: &str| match local {
        Some(l) if l != current => Err(format!("the instruction's {what} is {current}, the local type says {l}")),
        _ => Ok(()),
    };
    let insn = &mut insns[at];
    let class = insn.class();
    if insn.is_ld_imm64() {
        let hi = insns.get(at + 1).map(|i| i.imm).unwrap_or(0);
        let insn = &mut insns[at];
        check((hi as u32 as u64) << 32 | insn.imm as u32 as u64, "value")?;
        insn.imm = target as u32 as i32;
        insns[at + 1].imm = (target >> 32) as u32 as i32;
        return Ok(());
    }
    match class {
        crate::insn::ALU | crate::insn::ALU64 if insn.code & crate::insn::SRC_X == 0 => {
            if local != Some(insn.imm as u32 as u64) {
                check(insn.imm as i64 as u64, "value")?;
            }
            insn.imm = i32::try_from(target).map_err(|_| format!("value {target} does not fit an instruction"))?;
        }
        crate::insn::LDX | crate::insn::ST | crate::insn::STX if kind == FIELD_BYTE_OFFSET => {
            check(insn.off as i64 as u64, "offset")?;
            insn.off = i16::try_from(target).map_err(|_| format!("offset {target} is beyond a 16-bit displacement"))?;
            if target_size != local_size && insn.mem_size() == Some(local_size) {
                insn.set_mem_size(target_size).ok_or("the field's size in the target is no load size")?;
            }
        }
        _ => return Err(format!("instruction {:#04x} cannot take relocation kind {kind}", insn.code)),
    }
    Ok(())
}
