//! An eBPF interpreter for congestion-control programs (Documentation/bpf/standardization/
//! instruction-set.rst), with a memory model of fixed regions.
//!
//! Memory: a pointer is a region number in its upper 32 bits and an offset in the lower, so
//! every access is checked against its region's bounds (and, for the socket view, against
//! the fields a program may write) without a verifier. The regions are allocated when the
//! machine is built: the stack (8 frames of 512 bytes), the arguments (ctx, six u64), the
//! host's views (the socket, an ACK sample), and the object's data sections. A run allocates
//! nothing.
//!
//! Calls: helpers (by number) and kernel functions (by the index the host gave their names
//! at load time) go to the [`Host`]; BPF-to-BPF calls push a frame (r6-r9 and the frame
//! pointer r10 are kept). A run stops after [`MAX_INSNS`] instructions: the kernel's
//! verifier proves that programs end; here an endless one is an error instead.
//!
//! The machine that holds the programs and runs each either here or as machine code from
//! `jit/` (x86-64 Linux) is `machine.rs`: both read this memory model, checks and errors
//! (`errors`), so neither depends on the other.

use crate::insn::{self, Insn};
use crate::read::Error;

/// Bytes of stack per frame (the kernel's MAX_BPF_STACK) and frames (MAX_CALL_FRAMES).
pub const STACK_FRAME: usize = 512;
pub const MAX_FRAMES: usize = 8;
/// Instructions one run may execute.
pub const MAX_INSNS: u64 = 1_000_000;

/// The region of an address, and the address of a region's offset.
pub const fn address(region: u32, offset: u32) -> u64 {
    (region as u64) << 32 | offset as u64
}

/// Region numbers the machine fixes; the host's views and the data follow.
pub const STACK: u32 = 1;
pub const CTX: u32 = 2;
pub const FIRST_FREE: u32 = 3;

pub struct Region {
    pub bytes: Vec<u8>,
    /// Byte ranges a program may write; None: all of it, Some(empty): none.
    pub writable: Option<Vec<(u32, u32)>>,
}

/// The machine's memory: region 0 is never valid (a null pointer faults).
pub struct Memory {
    regions: Vec<Region>,
}

/// The errors a run ends with, the interpreter's and the JIT's alike.
pub(crate) mod errors {
    use super::{Error, MAX_FRAMES, MAX_INSNS};

    pub fn fault(addr: u64, size: usize, what: &str) -> Error {
        Error::new(format!(
            "{what} of {size} bytes at {:#x}:{:#x} is outside the memory the program may use",
            addr >> 32,
            addr as u32
        ))
    }

    pub fn too_long() -> Error {
        Error::new(format!("ran more than {MAX_INSNS} instructions (an endless loop?)"))
    }

    pub fn too_deep() -> Error {
        Error::new(format!("calls nest deeper than {MAX_FRAMES} frames"))
    }

    pub fn atomic_op(op: i32) -> Error {
        Error::new(format!("atomic operation {op:#x} is not supported"))
    }

    pub fn past_end() -> Error {
        Error::new("ran past its last instruction")
    }
}

impl Memory {
    /// The memory of `regions`, region 0 first (the machine builds it, `machine.rs`).
    pub(crate) fn new(regions: Vec<Region>) -> Memory {
        Memory { regions }
    }

    pub(crate) fn regions(&self) -> &[Region] {
        &self.regions
    }

    fn fault(addr: u64, size: usize, what: &str) -> Error {
        errors::fault(addr, size, what)
    }

    #[cfg_attr(not(all(target_arch = "x86_64", target_os = "linux")), allow(dead_code))]
    pub(crate) fn regions_mut(&mut self) -> &mut [Region] {
        &mut self.regions
    }

    #[inline]
    fn slice(&self, addr: u64, size: usize) -> Option<&[u8]> {
        let r = self.regions.get((addr >> 32) as usize)?;
        let off = addr as u32 as usize;
        r.bytes.get(off..off.checked_add(size)?)
    }

    #[inline]
    pub fn load(&self, addr: u64, size: usize) -> Result<u64, Error> {
        let b = self.slice(addr, size).ok_or_else(|| Self::fault(addr, size, "a read"))?;
        let mut v = [0u8; 8];
        v[..size].copy_from_slice(b);
        Ok(u64::from_le_bytes(v))
    }

    #[inline]
    pub fn store(&mut self, addr: u64, size: usize, value: u64) -> Result<(), Error> {
        let region = (addr >> 32) as usize;
        let off = addr as u32;
        let ok = self.regions.get(region).is_some_and(|r| match &r.writable {
            None => true,
            Some(ranges) => ranges.iter().any(|&(s, e)| off >= s && off as u64 + size as u64 <= e as u64),
        });
        let r = self.regions.get_mut(region).filter(|_| ok).ok_or_else(|| Self::fault(addr, size, "a write"))?;
        let off = off as usize;
        let b = r.bytes.get_mut(off..off + size).ok_or_else(|| Self::fault(addr, size, "a write"))?;
        b.copy_from_slice(&value.to_le_bytes()[..size]);
        Ok(())
    }

    pub fn region(&self, id: u32) -> &[u8] {
        &self.regions[id as usize].bytes
    }

    pub fn region_mut(&mut self, id: u32) -> &mut [u8] {
        &mut self.regions[id as usize].bytes
    }

    pub fn read_u32(&self, region: u32, offset: usize) -> u32 {
        let b = &self.regions[region as usize].bytes[offset..offset + 4];
        u32::from_le_bytes(b.try_into().expect("4 bytes"))
    }

    pub fn write_u32(&mut self, region: u32, offset: usize, v: u32) {
        self.regions[region as usize].bytes[offset..offset + 4].copy_from_slice(&v.to_le_bytes());
    }

    pub fn write_u64(&mut self, region: u32, offset: usize, v: u64) {
        self.regions[region as usize].bytes[offset..offset + 8].copy_from_slice(&v.to_le_bytes());
    }
}

/// What the machine asks of its host: helpers by number, kernel functions by index.
pub trait Host {
    fn helper(&mut self, id: i32, args: [u64; 5], mem: &mut Memory) -> Result<u64, Error>;
    fn kfunc(&mut self, index: u32, args: [u64; 5], mem: &mut Memory) -> Result<u64, Error>;
}

/// Checks that every instruction of `insns` is one this interpreter executes, with its jumps
/// and calls inside the program.
pub fn check_program(name: &str, insns: &[Insn]) -> Result<(), Error> {
    let mut pc = 0;
    // The second halves of 64-bit loads: no jump or call may land there.
    let mut halves = vec![false; insns.len()];
    while pc < insns.len() {
        let i = &insns[pc];
        check(i, pc, insns.len()).map_err(|e| Error::new(format!("{name}: instruction {pc}: {e}")))?;
        if i.is_ld_imm64() {
            halves[pc + 1] = true;
            pc += 2;
        } else {
            pc += 1;
        }
    }
    pc = 0;
    while pc < insns.len() {
        let i = &insns[pc];
        if let Some(t) = target(i, pc).filter(|&t| halves[t]) {
            return Err(Error::new(format!(
                "{name}: instruction {pc}: a jump into the second half of the 64-bit load at {}",
                t - 1
            )));
        }
        pc += if i.is_ld_imm64() { 2 } else { 1 };
    }
    Ok(())
}

/// Where jump or call `i` at `pc` goes (checked to be inside the program).
pub(crate) fn target(i: &Insn, pc: usize) -> Option<usize> {
    use insn::*;
    if !matches!(i.class(), JMP | JMP32) {
        return None;
    }
    let op = i.code & 0xf0;
    let rel = match op {
        EXIT => return None,
        CALL if i.class() == JMP => {
            if i.src != PSEUDO_CALL {
                return None;
            }
            i.imm as i64
        }
        JA if i.class() == JMP32 => i.imm as i64,
        _ => i.off as i64,
    };
    Some((pc as i64 + rel + 1) as usize)
}

/// What the interpreter cannot execute, found before running.
fn check(i: &Insn, pc: usize, len: usize) -> Result<(), String> {
    use insn::*;
    let code = i.code;
    match i.class() {
        LD => {
            if !i.is_ld_imm64() {
                return Err(format!("legacy packet load {code:#04x} is not supported"));
            }
            if pc + 1 >= len {
                return Err("a 64-bit load without its second half".into());
            }
            if i.src != 0 {
                return Err("a map reference the loader did not resolve".into());
            }
        }
        LDX | ST | STX => {
            let mode = code & 0xe0;
            if !(mode == MODE_MEM
                || (mode == MODE_MEMSX && i.class() == LDX)
                || (mode == MODE_ATOMIC && i.class() == STX))
            {
                return Err(format!("memory access mode {mode:#04x} is not supported"));
            }
        }
        JMP | JMP32 => {
            let op = code & 0xf0;
            if op == CALL && i.class() == JMP {
                if i.src == PSEUDO_CALL {
                    let target = pc as i64 + i.imm as i64 + 1;
                    if target < 0 || target as usize >= len {
                        return Err("a call outside the program".into());
                    }
                }
            } else if op != EXIT {
                let target = pc as i64 + if op == JA && i.class() == JMP32 { i.imm as i64 } else { i.off as i64 } + 1;
                if target < 0 || target as usize >= len {
                    return Err("a jump outside the program".into());
                }
            }
        }
        _ => {}
    }
    if i.dst > 10 || i.src > 10 {
        return Err("a register beyond r10".into());
    }
    Ok(())
}

#[inline]
pub(crate) fn alu(op: u8, dst: u64, src: u64, off: i16, wide: bool) -> u64 {
    if wide {
        match op {
            0x00 => dst.wrapping_add(src),
            0x10 => dst.wrapping_sub(src),
            0x20 => dst.wrapping_mul(src),
            0x30 if off == 1 => {
                if src == 0 {
                    0
                } else {
                    (dst as i64).wrapping_div(src as i64) as u64
                }
            }
            0x30 => dst.checked_div(src).unwrap_or(0),
            0x40 => dst | src,
            0x50 => dst & src,
            0x60 => dst.wrapping_shl((src & 63) as u32),
            0x70 => dst.wrapping_shr((src & 63) as u32),
            0x80 => (dst as i64).wrapping_neg() as u64,
            0x90 if off == 1 => {
                if src == 0 {
                    dst
                } else {
                    (dst as i64).wrapping_rem(src as i64) as u64
                }
            }
            0x90 => {
                if src == 0 {
                    dst
                } else {
                    dst % src
                }
            }
            0xa0 => dst ^ src,
            0xb0 => match off {
                8 => src as i8 as i64 as u64,
                16 => src as i16 as i64 as u64,
                32 => src as i32 as i64 as u64,
                _ => src,
            },
            0xc0 => ((dst as i64) >> (src & 63)) as u64,
            _ => dst,
        }
    } else {
        let (d, s) = (dst as u32, src as u32);
        (match op {
            0x00 => d.wrapping_add(s),
            0x10 => d.wrapping_sub(s),
            0x20 => d.wrapping_mul(s),
            0x30 if off == 1 => {
                if s == 0 {
                    0
                } else {
                    (d as i32).wrapping_div(s as i32) as u32
                }
            }
            0x30 => d.checked_div(s).unwrap_or(0),
            0x40 => d | s,
            0x50 => d & s,
            0x60 => d.wrapping_shl(s & 31),
            0x70 => d.wrapping_shr(s & 31),
            0x80 => (d as i32).wrapping_neg() as u32,
            0x90 if off == 1 => {
                if s == 0 {
                    d
                } else {
                    (d as i32).wrapping_rem(s as i32) as u32
                }
            }
            0x90 => {
                if s == 0 {
                    d
                } else {
                    d % s
                }
            }
            0xa0 => d ^ s,
            0xb0 => match off {
                8 => s as i8 as i32 as u32,
                16 => s as i16 as i32 as u32,
                _ => s,
            },
            0xc0 => ((d as i32) >> (s & 31)) as u32,
            _ => d,
        }) as u64
    }
}

#[inline]
fn jump(op: u8, a: u64, b: u64, wide: bool) -> bool {
    let (a, b) = if wide { (a, b) } else { (a as u32 as u64, b as u32 as u64) };
    let (sa, sb) = if wide { (a as i64, b as i64) } else { (a as u32 as i32 as i64, b as u32 as i32 as i64) };
    match op {
        0x10 => a == b,
        0x20 => a > b,
        0x30 => a >= b,
        0x40 => a & b != 0,
        0x50 => a != b,
        0x60 => sa > sb,
        0x70 => sa >= sb,
        0xa0 => a < b,
        0xb0 => a <= b,
        0xc0 => sa < sb,
        0xd0 => sa <= sb,
        _ => false,
    }
}

fn byte_swap(op_src: bool, class: u8, value: u64, width: i32) -> u64 {
    // BPF_END: to little-endian (src 0) is a truncation here; to big-endian swaps; in
    // ALU64 (cpu v4) it always swaps.
    let swap = op_src || class == insn::ALU64;
    match (width, swap) {
        (16, false) => value as u16 as u64,
        (32, false) => value as u32 as u64,
        (64, false) => value,
        (16, true) => (value as u16).swap_bytes() as u64,
        (32, true) => (value as u32).swap_bytes() as u64,
        _ => value.swap_bytes(),
    }
}

struct Frame {
    ret: usize,
    saved: [u64; 4],
    fp: u64,
}

pub(crate) fn execute(insns: &[Insn], mem: &mut Memory, host: &mut dyn Host, ctx: u64) -> Result<u64, Error> {
    use insn::*;
    let mut r = [0u64; 11];
    r[1] = ctx;
    r[10] = address(STACK, STACK_FRAME as u32);
    let mut frames: [Option<Frame>; MAX_FRAMES] = Default::default();
    let mut depth = 0usize;
    let mut pc = 0usize;
    let mut count = 0u64;
    loop {
        count += 1;
        if count > MAX_INSNS {
            return Err(errors::too_long());
        }
        let Some(&i) = insns.get(pc) else { return Err(errors::past_end()) };
        pc += 1;
        let class = i.class();
        let (dst, src) = (i.dst as usize, i.src as usize);
        match class {
            ALU | ALU64 => {
                let op = i.code & 0xf0;
                let wide = class == ALU64;
                if op == 0xd0 {
                    r[dst] = byte_swap(i.code & SRC_X != 0, class, r[dst], i.imm);
                    continue;
                }
                let s = if i.code & SRC_X != 0 {
                    r[src]
                } else if wide {
                    i.imm as i64 as u64
                } else {
                    i.imm as u32 as u64
                };
                r[dst] = alu(op, r[dst], s, i.off, wide);
            }
            LD => {
                r[dst] = (insns[pc].imm as u32 as u64) << 32 | i.imm as u32 as u64;
                pc += 1;
            }
            LDX => {
                let size = i.mem_size().expect("a load") as usize;
                let v = mem.load(r[src].wrapping_add(i.off as i64 as u64), size)?;
                r[dst] = if i.code & 0xe0 == MODE_MEMSX {
                    match size {
                        1 => v as i8 as i64 as u64,
                        2 => v as i16 as i64 as u64,
                        4 => v as i32 as i64 as u64,
                        _ => v,
                    }
                } else {
                    v
                };
            }
            ST => {
                let size = i.mem_size().expect("a store") as usize;
                mem.store(r[dst].wrapping_add(i.off as i64 as u64), size, i.imm as i64 as u64)?;
            }
            STX => {
                let size = i.mem_size().expect("a store") as usize;
                let addr = r[dst].wrapping_add(i.off as i64 as u64);
                if i.code & 0xe0 == MODE_ATOMIC {
                    atomic(mem, &mut r, addr, size, src, i.imm)?;
                } else {
                    mem.store(addr, size, r[src])?;
                }
            }
            JMP | JMP32 => {
                let op = i.code & 0xf0;
                let wide = class == JMP;
                match op {
                    JA => pc = (pc as i64 + if wide { i.off as i64 } else { i.imm as i64 }) as usize,
                    CALL if wide => {
                        let args = [r[1], r[2], r[3], r[4], r[5]];
                        match i.src {
                            PSEUDO_CALL => {
                                if depth + 1 >= MAX_FRAMES {
                                    return Err(errors::too_deep());
                                }
                                frames[depth] = Some(Frame { ret: pc, saved: [r[6], r[7], r[8], r[9]], fp: r[10] });
                                depth += 1;
                                r[10] = address(STACK, ((depth + 1) * STACK_FRAME) as u32);
                                pc = (pc as i64 + i.imm as i64) as usize;
                                continue;
                            }
                            PSEUDO_KFUNC_CALL => r[0] = host.kfunc(i.imm as u32, args, mem)?,
                            _ => r[0] = host.helper(i.imm, args, mem)?,
                        }
                        // Calls clobber r1-r5.
                        r[1..6].fill(0);
                    }
                    EXIT => {
                        if depth == 0 {
                            return Ok(r[0]);
                        }
                        depth -= 1;
                        let f = frames[depth].take().expect("a frame");
                        [r[6], r[7], r[8], r[9]] = f.saved;
                        r[10] = f.fp;
                        pc = f.ret;
                    }
                    _ => {
                        let b = if i.code & SRC_X != 0 { r[src] } else { i.imm as i64 as u64 };
                        if jump(op, r[dst], b, wide) {
                            pc = (pc as i64 + i.off as i64) as usize;
                        }
                    }
                }
            }
            _ => return Err(Error::new(format!("instruction {:#04x} at {} is not supported", i.code, pc - 1))),
        }
    }
}

/// BPF_ATOMIC: add, or, and, xor (with BPF_FETCH), exchange, compare-and-exchange.
fn atomic(mem: &mut Memory, r: &mut [u64; 11], addr: u64, size: usize, src: usize, imm: i32) -> Result<(), Error> {
    const FETCH: i32 = 0x01;
    let old = mem.load(addr, size)?;
    let mask = if size == 8 { u64::MAX } else { u32::MAX as u64 };
    let (new, ret) = match imm & !FETCH {
        0x00 => (old.wrapping_add(r[src]), old),
        0x40 => (old | r[src], old),
        0x50 => (old & r[src], old),
        0xa0 => (old ^ r[src], old),
        0xe0 => (r[src], old),
        0xf0 => {
            let new = if old == r[0] & mask { r[src] } else { old };
            mem.store(addr, size, new)?;
            r[0] = old;
            return Ok(());
        }
        op => return Err(errors::atomic_op(op)),
    };
    mem.store(addr, size, new & mask)?;
    if imm & FETCH != 0 || imm & !FETCH == 0xe0 {
        r[src] = ret;
    }
    Ok(())
}
