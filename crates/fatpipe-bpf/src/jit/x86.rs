//! A small x86-64 assembler: the instructions the JIT emits, encoded as the Intel SDM
//! (volume 2, chapter 2: REX prefix, ModR/M and SIB bytes) describes them, with labels
//! for forward and backward jumps (always rel32, patched when the code is finished).

/// General-purpose registers by their encoding number.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Reg(pub u8);

pub const RAX: Reg = Reg(0);
pub const RCX: Reg = Reg(1);
pub const RDX: Reg = Reg(2);
pub const RBX: Reg = Reg(3);
pub const RSP: Reg = Reg(4);
pub const RBP: Reg = Reg(5);
pub const RSI: Reg = Reg(6);
pub const RDI: Reg = Reg(7);
pub const R8: Reg = Reg(8);
pub const R9: Reg = Reg(9);
pub const R10: Reg = Reg(10);
pub const R11: Reg = Reg(11);
pub const R12: Reg = Reg(12);
pub const R13: Reg = Reg(13);
pub const R14: Reg = Reg(14);
pub const R15: Reg = Reg(15);

/// A memory operand: [base + index + disp] (scale 1, or 4 with `scale4`).
#[derive(Clone, Copy)]
pub struct Mem {
    pub base: Reg,
    pub index: Option<Reg>,
    pub scale4: bool,
    pub disp: i32,
}

pub fn mem(base: Reg, disp: i32) -> Mem {
    Mem { base, index: None, scale4: false, disp }
}

pub fn mem_index(base: Reg, index: Reg, scale4: bool) -> Mem {
    Mem { base, index: Some(index), scale4, disp: 0 }
}

/// Condition codes (the low nibble of Jcc's 0F 8x opcode).
#[derive(Clone, Copy)]
pub enum Cond {
    B = 0x2,
    Ae = 0x3,
    E = 0x4,
    Ne = 0x5,
    Be = 0x6,
    A = 0x7,
    L = 0xc,
    Ge = 0xd,
    Le = 0xe,
    G = 0xf,
}

/// The ALU operations with the classic encodings: `op r/m, r` is `base + 1`, `op r, r/m`
/// is `base + 3`, and `op r/m, imm32` is 81 /ext.
#[derive(Clone, Copy)]
pub enum Alu {
    Add = 0,
    Or = 1,
    And = 4,
    Sub = 5,
    Xor = 6,
    Cmp = 7,
}

/// Shifts: C1 /ext ib and D3 /ext (by cl).
#[derive(Clone, Copy)]
pub enum Shift {
    Shl = 4,
    Shr = 5,
    Sar = 7,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Label(usize);

#[derive(Default)]
pub struct Asm {
    pub code: Vec<u8>,
    labels: Vec<Option<usize>>,
    fixups: Vec<(usize, Label)>,
}

impl Asm {
    pub fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    pub fn bind(&mut self, l: Label) {
        debug_assert!(self.labels[l.0].is_none(), "a label bound twice");
        self.labels[l.0] = Some(self.code.len());
    }

    /// The code with every jump's displacement filled in.
    pub fn finish(mut self) -> Vec<u8> {
        for &(at, l) in &self.fixups {
            let target = self.labels[l.0].expect("every label used is bound");
            let rel = target as i64 - (at as i64 + 4);
            self.code[at..at + 4].copy_from_slice(&(rel as i32).to_le_bytes());
        }
        self.code
    }

    fn byte(&mut self, b: u8) {
        self.code.push(b);
    }

    fn imm32(&mut self, v: i32) {
        self.code.extend_from_slice(&v.to_le_bytes());
    }

    fn rel32(&mut self, l: Label) {
        self.fixups.push((self.code.len(), l));
        self.imm32(0);
    }

    /// REX (0100WRXB) when needed: W for 64-bit operands, R/X/B for registers 8-15, and
    /// `force` for byte registers spl/bpl/sil/dil (which without REX mean ah/ch/dh/bh).
    fn rex(&mut self, w: bool, reg: u8, index: u8, base: u8, force: bool) {
        let r = 0x40 | (w as u8) << 3 | (reg >> 3) << 2 | (index >> 3) << 1 | (base >> 3);
        if r != 0x40 || force {
            self.byte(r);
        }
    }

    /// Opcode bytes with a register-direct ModR/M (mod 11).
    fn op_rr(&mut self, w: bool, opcode: &[u8], reg: u8, rm: u8, byte_regs: bool) {
        self.rex(w, reg, 0, rm, byte_regs && (reg & 7 >= 4 || rm & 7 >= 4));
        self.code.extend_from_slice(opcode);
        self.byte(0xc0 | (reg & 7) << 3 | (rm & 7));
    }

    /// Opcode bytes with a memory ModR/M (and SIB and displacement as the operand needs).
    fn op_rm(&mut self, w: bool, opcode: &[u8], reg: u8, m: Mem, byte_reg: bool) {
        let index = m.index.map_or(0, |r| r.0);
        self.rex(w, reg, index, m.base.0, byte_reg && reg >= 4);
        self.code.extend_from_slice(opcode);
        let base = m.base.0 & 7;
        // rbp/r13 as a base need a displacement (mod 00 with them means rip or no base).
        let md = if m.disp == 0 && base != 5 {
            0
        } else if i8::try_from(m.disp).is_ok() {
            1
        } else {
            2
        };
        if m.index.is_some() || base == 4 {
            self.byte(md << 6 | (reg & 7) << 3 | 4);
            let (idx, scale) = match m.index {
                Some(r) => (r.0 & 7, if m.scale4 { 2 } else { 0 }),
                None => (4, 0),
            };
            self.byte(scale << 6 | idx << 3 | base);
        } else {
            self.byte(md << 6 | (reg & 7) << 3 | base);
        }
        match md {
            1 => self.byte(m.disp as i8 as u8),
            2 => self.imm32(m.disp),
            _ => {}
        }
    }

    // Register and immediate arithmetic.

    pub fn alu_rr(&mut self, op: Alu, w: bool, dst: Reg, src: Reg) {
        self.op_rr(w, &[(op as u8) << 3 | 1], src.0, dst.0, false);
    }

    pub fn alu_ri(&mut self, op: Alu, w: bool, dst: Reg, imm: i32) {
        self.op_rr(w, &[0x81], op as u8, dst.0, false);
        self.imm32(imm);
    }

    /// `op r64, [m]`.
    pub fn alu_r_mem(&mut self, op: Alu, dst: Reg, m: Mem) {
        self.op_rm(true, &[(op as u8) << 3 | 3], dst.0, m, false);
    }

    /// `op qword [m], imm32`.
    pub fn alu_mem_imm(&mut self, op: Alu, m: Mem, imm: i32) {
        self.op_rm(true, &[0x81], op as u8, m, false);
        self.imm32(imm);
    }

    pub fn test_rr(&mut self, w: bool, a: Reg, b: Reg) {
        self.op_rr(w, &[0x85], b.0, a.0, false);
    }

    pub fn test_ri(&mut self, w: bool, a: Reg, imm: i32) {
        self.op_rr(w, &[0xf7], 0, a.0, false);
        self.imm32(imm);
    }

    pub fn mov_rr(&mut self, w: bool, dst: Reg, src: Reg) {
        self.op_rr(w, &[0x89], src.0, dst.0, false);
    }

    /// `mov r32, imm32` (zero-extends to 64 bits).
    pub fn mov_r32_imm(&mut self, dst: Reg, imm: u32) {
        self.rex(false, 0, 0, dst.0, false);
        self.byte(0xb8 | (dst.0 & 7));
        self.imm32(imm as i32);
    }

    /// `mov r64, imm32` sign-extended.
    pub fn mov_r64_simm(&mut self, dst: Reg, imm: i32) {
        self.op_rr(true, &[0xc7], 0, dst.0, false);
        self.imm32(imm);
    }

    /// `mov r64, imm64`.
    pub fn mov_r64_imm64(&mut self, dst: Reg, imm: u64) {
        self.rex(true, 0, 0, dst.0, false);
        self.byte(0xb8 | (dst.0 & 7));
        self.code.extend_from_slice(&imm.to_le_bytes());
    }

    /// A 64-bit constant in the fewest bytes: zero, 32-bit zero-extended, sign-extended, or
    /// the full ten-byte form.
    pub fn mov_const(&mut self, dst: Reg, v: u64) {
        if v == 0 {
            self.alu_rr(Alu::Xor, false, dst, dst);
        } else if v <= u32::MAX as u64 {
            self.mov_r32_imm(dst, v as u32);
        } else if v as i64 >= i32::MIN as i64 && (v as i64) < 0 {
            self.mov_r64_simm(dst, v as i64 as i32);
        } else {
            self.mov_r64_imm64(dst, v);
        }
    }

    pub fn imul_rr(&mut self, w: bool, dst: Reg, src: Reg) {
        self.op_rr(w, &[0x0f, 0xaf], dst.0, src.0, false);
    }

    pub fn imul_rri(&mut self, w: bool, dst: Reg, src: Reg, imm: i32) {
        self.op_rr(w, &[0x69], dst.0, src.0, false);
        self.imm32(imm);
    }

    pub fn shift_cl(&mut self, op: Shift, w: bool, dst: Reg) {
        self.op_rr(w, &[0xd3], op as u8, dst.0, false);
    }

    pub fn shift_imm(&mut self, op: Shift, w: bool, dst: Reg, n: u8) {
        self.op_rr(w, &[0xc1], op as u8, dst.0, false);
        self.byte(n);
    }

    pub fn neg(&mut self, w: bool, dst: Reg) {
        self.op_rr(w, &[0xf7], 3, dst.0, false);
    }

    /// `div` (unsigned) or `idiv` of rdx:rax (edx:eax) by `src`.
    pub fn div(&mut self, signed: bool, w: bool, src: Reg) {
        self.op_rr(w, &[0xf7], if signed { 7 } else { 6 }, src.0, false);
    }

    /// cqo (w) or cdq: rdx:rax = sign-extended rax.
    pub fn sign_extend_rax(&mut self, w: bool) {
        self.rex(w, 0, 0, 0, false);
        self.byte(0x99);
    }

    /// movzx/movsx of a register's low 8 or 16 bits (`bits`), sign-extended or not, into a
    /// 32-bit (w false) or 64-bit destination; `bits` 32 with `signed` is movsxd.
    pub fn extend_rr(&mut self, signed: bool, w: bool, bits: u8, dst: Reg, src: Reg) {
        match (bits, signed) {
            (8, s) => self.op_rr(w, &[0x0f, if s { 0xbe } else { 0xb6 }], dst.0, src.0, true),
            (16, s) => self.op_rr(w, &[0x0f, if s { 0xbf } else { 0xb7 }], dst.0, src.0, false),
            (32, true) => self.op_rr(true, &[0x63], dst.0, src.0, false),
            _ => self.mov_rr(false, dst, src),
        }
    }

    pub fn bswap(&mut self, w: bool, r: Reg) {
        self.rex(w, 0, 0, r.0, false);
        self.byte(0x0f);
        self.byte(0xc8 | (r.0 & 7));
    }

    // Memory.

    pub fn lea(&mut self, dst: Reg, m: Mem) {
        self.op_rm(true, &[0x8d], dst.0, m, false);
    }

    /// A load of `size` bytes into `dst`, zero- or sign-extended to 64 bits.
    pub fn load(&mut self, size: u32, signed: bool, dst: Reg, m: Mem) {
        match (size, signed) {
            (1, false) => self.op_rm(false, &[0x0f, 0xb6], dst.0, m, false),
            (2, false) => self.op_rm(false, &[0x0f, 0xb7], dst.0, m, false),
            (4, false) => self.op_rm(false, &[0x8b], dst.0, m, false),
            (1, true) => self.op_rm(true, &[0x0f, 0xbe], dst.0, m, false),
            (2, true) => self.op_rm(true, &[0x0f, 0xbf], dst.0, m, false),
            (4, true) => self.op_rm(true, &[0x63], dst.0, m, false),
            _ => self.op_rm(true, &[0x8b], dst.0, m, false),
        }
    }

    /// A store of the low `size` bytes of `src`.
    pub fn store(&mut self, size: u32, m: Mem, src: Reg) {
        match size {
            1 => self.op_rm(false, &[0x88], src.0, m, true),
            2 => {
                self.byte(0x66);
                self.op_rm(false, &[0x89], src.0, m, false)
            }
            4 => self.op_rm(false, &[0x89], src.0, m, false),
            _ => self.op_rm(true, &[0x89], src.0, m, false),
        }
    }

    /// A store of the low `size` bytes of `imm` sign-extended to 64 bits.
    pub fn store_imm(&mut self, size: u32, m: Mem, imm: i32) {
        match size {
            1 => {
                self.op_rm(false, &[0xc6], 0, m, false);
                self.byte(imm as u8);
            }
            2 => {
                self.byte(0x66);
                self.op_rm(false, &[0xc7], 0, m, false);
                self.code.extend_from_slice(&(imm as u16).to_le_bytes());
            }
            4 => {
                self.op_rm(false, &[0xc7], 0, m, false);
                self.imm32(imm);
            }
            _ => {
                self.op_rm(true, &[0xc7], 0, m, false);
                self.imm32(imm);
            }
        }
    }

    /// `inc`/`dec qword [m]`.
    pub fn add_mem_one(&mut self, m: Mem, up: bool) {
        self.op_rm(true, &[0xff], if up { 0 } else { 1 }, m, false);
    }

    // Control flow and the stack.

    pub fn push(&mut self, r: Reg) {
        self.rex(false, 0, 0, r.0, false);
        self.byte(0x50 | (r.0 & 7));
    }

    pub fn pop(&mut self, r: Reg) {
        self.rex(false, 0, 0, r.0, false);
        self.byte(0x58 | (r.0 & 7));
    }

    pub fn jmp(&mut self, l: Label) {
        self.byte(0xe9);
        self.rel32(l);
    }

    pub fn jcc(&mut self, c: Cond, l: Label) {
        self.byte(0x0f);
        self.byte(0x80 | c as u8);
        self.rel32(l);
    }

    pub fn call(&mut self, l: Label) {
        self.byte(0xe8);
        self.rel32(l);
    }

    /// `call r64`.
    pub fn call_reg(&mut self, r: Reg) {
        self.op_rr(false, &[0xff], 2, r.0, false);
    }

    pub fn ret(&mut self) {
        self.byte(0xc3);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodings checked against the Intel SDM's tables (and GNU as's output for the same
    /// lines): the REX bits, the SIB cases (rsp/r12 as a base, rbp/r13 needing a
    /// displacement) and the byte-register REX.
    #[test]
    fn encodings() {
        type Emit = Box<dyn Fn(&mut Asm)>;
        let cases: Vec<(Emit, &[u8])> = vec![
            (Box::new(|a| a.alu_rr(Alu::Add, true, RBX, R12)), &[0x4c, 0x01, 0xe3]),
            (Box::new(|a| a.alu_ri(Alu::Sub, false, R9, -2)), &[0x41, 0x81, 0xe9, 0xfe, 0xff, 0xff, 0xff]),
            (
                Box::new(|a| a.mov_r64_imm64(R15, 0x1122334455667788)),
                &[0x49, 0xbf, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11],
            ),
            (Box::new(|a| a.load(4, false, RAX, mem(R12, 8))), &[0x41, 0x8b, 0x44, 0x24, 0x08]),
            (Box::new(|a| a.load(8, false, RDX, mem(R13, 0))), &[0x49, 0x8b, 0x55, 0x00]),
            (Box::new(|a| a.load(1, true, R14, mem_index(RDX, RAX, false))), &[0x4c, 0x0f, 0xbe, 0x34, 0x02]),
            (Box::new(|a| a.load(4, false, RCX, mem_index(RCX, RAX, true))), &[0x8b, 0x0c, 0x81]),
            (Box::new(|a| a.store(1, mem_index(RDX, RAX, false), RSI)), &[0x40, 0x88, 0x34, 0x02]),
            (Box::new(|a| a.store(2, mem(RBP, -4), R8)), &[0x66, 0x44, 0x89, 0x45, 0xfc]),
            (
                Box::new(|a| a.store_imm(8, mem(R11, 0x100), -1)),
                &[0x49, 0xc7, 0x83, 0x00, 0x01, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff],
            ),
            (Box::new(|a| a.shift_cl(Shift::Sar, true, RDI)), &[0x48, 0xd3, 0xff]),
            (Box::new(|a| a.extend_rr(true, true, 32, R10, RSI)), &[0x4c, 0x63, 0xd6]),
            (Box::new(|a| a.extend_rr(false, false, 8, RBX, RDI)), &[0x40, 0x0f, 0xb6, 0xdf]),
            (Box::new(|a| a.bswap(true, R9)), &[0x49, 0x0f, 0xc9]),
            (Box::new(|a| a.div(true, true, RCX)), &[0x48, 0xf7, 0xf9]),
            (Box::new(|a| a.push(R12)), &[0x41, 0x54]),
            (Box::new(|a| a.call_reg(RAX)), &[0xff, 0xd0]),
        ];
        for (emit, want) in cases {
            let mut a = Asm::default();
            emit(&mut a);
            assert_eq!(a.finish(), want);
        }
    }
}
