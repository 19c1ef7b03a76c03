//! Translation of a checked program (vm::check_program) into x86-64, instruction by
//! instruction, with the interpreter's semantics (vm.rs) and the instruction-set
//! specification (Documentation/bpf/standardization/instruction-set.rst, RFC 9669).
//!
//! Registers: r0-r10 live in rbx, rdi, rsi, r8, r9, r10, r12, r13, r14, r15, rbp; r11 holds
//! the run's context (`Ctx`); rax, rcx and rdx are scratch (div, shifts by cl, address
//! checks). r6-r10 sit in registers the System V ABI preserves, so a call into Rust keeps them.
//!
//! Memory: every access computes its address, splits it into region and offset, and checks
//! both against the region table before touching memory; a failed check goes to a stub that
//! records the address and size and leaves through `fault_exit`, where the interpreter's
//! error is built. Calls: helpers and kfuncs through `host_call` (a Rust trampoline); BPF-to-BPF
//! calls are x86 calls (r6-r10 pushed, the frame depth counted in the context), so EXIT is
//! `ret` and the run's entry is itself a call. Termination: if the program has a backward
//! jump or a BPF-to-BPF call, every basic block charges its length to an instruction budget
//! (the interpreter's MAX_INSNS); a program with neither runs at most its own length.

use super::x86::*;
use super::{off, status};
use crate::insn::{self, Insn};
use crate::vm::{self, MAX_FRAMES, STACK, STACK_FRAME};

/// BPF register n lives in x86 register REGS[n].
const REGS: [Reg; 11] = [RBX, RDI, RSI, R8, R9, R10, R12, R13, R14, R15, RBP];
/// The context pointer.
const CTX: Reg = R11;

fn ctx(field: usize) -> Mem {
    mem(CTX, field as i32)
}

/// A way out of the program's code, emitted after it.
enum Stub {
    /// A failed access check: the address (recomputed from the unchanged base register),
    /// its size and whether it was a read or a write.
    Fault { base: Reg, off: i16, size: u32, status: u64 },
    /// An atomic operation the interpreter refuses (after its read).
    Atomic { op: i32 },
    /// The budget spent, the frames exhausted.
    Status(u64),
}

struct Emitter<'a> {
    a: Asm,
    insns: &'a [Insn],
    labels: Vec<Label>,
    stubs: Vec<(Label, Stub)>,
    fault_exit: Label,
    host_call: u64,
}

/// Machine code for `insns`; `host_call` is the trampoline's address.
pub fn emit(insns: &[Insn], host_call: u64) -> Vec<u8> {
    let mut a = Asm::default();
    let labels = (0..insns.len()).map(|_| a.label()).collect();
    let fault_exit = a.label();
    let mut e = Emitter { a, insns, labels, stubs: Vec::new(), fault_exit, host_call };
    e.prologue();
    let costs = block_costs(insns);
    let mut pc = 0;
    while pc < insns.len() {
        e.a.bind(e.labels[pc]);
        if let Some(cost) = costs.as_ref().and_then(|c| c[pc]) {
            let l = e.stub(Stub::Status(status::BUDGET));
            e.a.alu_mem_imm(Alu::Sub, ctx(off::BUDGET), cost as i32);
            e.a.jcc(Cond::B, l);
        }
        e.insn(pc);
        pc += if insns[pc].is_ld_imm64() { 2 } else { 1 };
    }
    // The interpreter stops with an error where a program runs past its end.
    let l = e.stub(Stub::Status(status::PAST_END));
    e.a.jmp(l);
    e.stubs();
    e.a.finish()
}

/// Per instruction that starts a basic block, the instructions (as the interpreter counts
/// them: a 64-bit load is one) up to the next block; None if the program cannot loop.
fn block_costs(insns: &[Insn]) -> Option<Vec<Option<u32>>> {
    let positions: Vec<usize> = {
        let mut v = Vec::new();
        let mut pc = 0;
        while pc < insns.len() {
            v.push(pc);
            pc += if insns[pc].is_ld_imm64() { 2 } else { 1 };
        }
        v
    };
    let mut leader = vec![false; insns.len() + 1];
    leader[0] = true;
    let mut loops = false;
    for &pc in &positions {
        let next = pc + if insns[pc].is_ld_imm64() { 2 } else { 1 };
        if let Some(t) = vm::target(&insns[pc], pc) {
            leader[t] = true;
            loops |= t <= pc || insns[pc].is_call();
        }
        if matches!(insns[pc].class(), insn::JMP | insn::JMP32) {
            leader[next] = true;
        }
    }
    if !loops {
        return None;
    }
    let mut costs = vec![None; insns.len()];
    let mut start = 0;
    for &pc in &positions {
        if leader[pc] {
            start = pc;
            costs[start] = Some(0);
        }
        *costs[start].as_mut().expect("a block has a start") += 1;
    }
    Some(costs)
}

impl Emitter<'_> {
    fn stub(&mut self, s: Stub) -> Label {
        // One stub per status serves every place that leaves with it.
        if let Stub::Status(st) = s {
            if let Some((l, _)) = self.stubs.iter().find(|(_, x)| matches!(x, Stub::Status(y) if *y == st)) {
                return *l;
            }
        }
        let l = self.a.label();
        self.stubs.push((l, s));
        l
    }

    /// Entry, `extern "C" fn(*mut Ctx)`: saves the callee-saved registers, sets up the BPF
    /// registers as the interpreter starts them, calls the program, stores r0.
    fn prologue(&mut self) {
        let a = &mut self.a;
        for r in [RBX, RBP, R12, R13, R14, R15] {
            a.push(r);
        }
        a.mov_rr(true, CTX, RDI);
        // Six pushes leave rsp 8 off 16-byte alignment; this makes the program's own code
        // (entered by a call) 8 off too, so a host call (push r11, call) is aligned.
        a.alu_ri(Alu::Sub, true, RSP, 8);
        a.store(8, ctx(off::SAVED_RSP), RSP);
        for r in REGS {
            a.alu_rr(Alu::Xor, false, r, r);
        }
        a.load(8, false, REGS[1], ctx(off::R1));
        a.mov_const(REGS[10], vm::address(STACK, STACK_FRAME as u32));
        a.call(self.labels[0]);
        a.store(8, ctx(off::R0), REGS[0]);
        let exit = a.label();
        a.bind(exit);
        a.alu_ri(Alu::Add, true, RSP, 8);
        for r in [R15, R14, R13, R12, RBP, RBX] {
            a.pop(r);
        }
        a.ret();
        let fault_exit = self.fault_exit;
        a.bind(fault_exit);
        a.load(8, false, RSP, ctx(off::SAVED_RSP));
        a.jmp(exit);
    }

    fn stubs(&mut self) {
        for (l, s) in std::mem::take(&mut self.stubs) {
            let a = &mut self.a;
            a.bind(l);
            let st = match s {
                Stub::Fault { base, off: o, size, status } => {
                    a.lea(RAX, mem(base, o as i32));
                    a.store(8, ctx(off::FAULT_ADDR), RAX);
                    a.store_imm(8, ctx(off::FAULT_SIZE), size as i32);
                    status
                }
                Stub::Atomic { op } => {
                    a.store_imm(8, ctx(off::FAULT_ADDR), op);
                    status::ATOMIC_OP
                }
                Stub::Status(st) => st,
            };
            a.store_imm(8, ctx(off::STATUS), st as i32);
            a.jmp(self.fault_exit);
        }
    }

    fn insn(&mut self, pc: usize) {
        let i = self.insns[pc];
        match i.class() {
            insn::ALU | insn::ALU64 => self.alu(&i),
            insn::LD => {
                let v = (self.insns[pc + 1].imm as u32 as u64) << 32 | i.imm as u32 as u64;
                self.a.mov_const(REGS[i.dst as usize], v);
            }
            insn::LDX => {
                let size = i.mem_size().expect("a load");
                self.check(REGS[i.src as usize], i.off, size, status::READ, false);
                let signed = i.code & 0xe0 == insn::MODE_MEMSX;
                self.a.load(size, signed, REGS[i.dst as usize], mem_index(RDX, RAX, false));
            }
            insn::ST => {
                let size = i.mem_size().expect("a store");
                self.check(REGS[i.dst as usize], i.off, size, status::WRITE, true);
                self.a.store_imm(size, mem_index(RDX, RAX, false), i.imm);
            }
            insn::STX if i.code & 0xe0 == insn::MODE_ATOMIC => self.atomic(&i),
            insn::STX => {
                let size = i.mem_size().expect("a store");
                self.check(REGS[i.dst as usize], i.off, size, status::WRITE, true);
                self.a.store(size, mem_index(RDX, RAX, false), REGS[i.src as usize]);
            }
            _ => self.jmp(&i, pc),
        }
    }

    /// Checks an access of `size` bytes at `base + off`: the region exists, the bytes are
    /// inside it, and (`writable`) a writable range holds them all. Leaves the offset in
    /// rax and the region's bytes in rdx. A failed region or bounds check reports
    /// `status` (a read for loads and atomics, which read first; a write for stores).
    fn check(&mut self, base: Reg, o: i16, size: u32, status: u64, writable: bool) {
        let fault = self.stub(Stub::Fault { base, off: o, size, status });
        let a = &mut self.a;
        a.lea(RAX, mem(base, o as i32));
        a.mov_rr(true, RDX, RAX);
        a.shift_imm(Shift::Shr, true, RDX, 32);
        a.alu_r_mem(Alu::Cmp, RDX, ctx(off::NREGIONS));
        a.jcc(Cond::Ae, fault);
        a.shift_imm(Shift::Shl, true, RDX, super::DESC_SHIFT);
        a.alu_r_mem(Alu::Add, RDX, ctx(off::REGIONS));
        a.mov_rr(false, RAX, RAX);
        a.lea(RCX, mem(RAX, size as i32));
        a.alu_r_mem(Alu::Cmp, RCX, mem(RDX, off::DESC_LEN as i32));
        a.jcc(Cond::A, fault);
        if writable {
            let fault = self.stub(Stub::Fault { base, off: o, size, status: status::WRITE });
            let ok = self.a.label();
            let a = &mut self.a;
            // The table gives, per offset, the end of the writable range holding it (0:
            // none); a null table: the whole region is writable.
            a.load(8, false, RCX, mem(RDX, off::DESC_WTABLE as i32));
            a.test_rr(true, RCX, RCX);
            a.jcc(Cond::E, ok);
            a.load(4, false, RCX, mem_index(RCX, RAX, true));
            a.alu_rr(Alu::Sub, true, RCX, RAX);
            a.alu_ri(Alu::Cmp, true, RCX, size as i32);
            a.jcc(Cond::L, fault);
            a.bind(ok);
        }
        self.a.load(8, false, RDX, mem(RDX, off::DESC_BASE as i32));
    }

    fn alu(&mut self, i: &Insn) {
        let w = i.class() == insn::ALU64;
        let op = i.code & 0xf0;
        let d = REGS[i.dst as usize];
        let x = i.code & insn::SRC_X != 0;
        let s = REGS[i.src as usize];
        let a = &mut self.a;
        let simple = match op {
            0x00 => Some(Alu::Add),
            0x10 => Some(Alu::Sub),
            0x40 => Some(Alu::Or),
            0x50 => Some(Alu::And),
            0xa0 => Some(Alu::Xor),
            _ => None,
        };
        if let Some(k) = simple {
            if x {
                a.alu_rr(k, w, d, s);
            } else {
                a.alu_ri(k, w, d, i.imm);
            }
            return;
        }
        match op {
            0x20 if x => a.imul_rr(w, d, s),
            0x20 => a.imul_rri(w, d, d, i.imm),
            0x30 | 0x90 => self.divmod(w, i.off == 1, op == 0x90, d, x.then_some(s), i.imm),
            0x60 | 0x70 | 0xc0 => {
                let k = match op {
                    0x60 => Shift::Shl,
                    0x70 => Shift::Shr,
                    _ => Shift::Sar,
                };
                if !w {
                    // A 32-bit shift by 0 leaves the register as it was; the interpreter
                    // zero-extends in every case.
                    a.mov_rr(false, d, d);
                }
                if x {
                    a.mov_rr(false, RCX, s);
                    a.shift_cl(k, w, d);
                } else {
                    a.shift_imm(k, w, d, (i.imm & if w { 63 } else { 31 }) as u8);
                }
            }
            0x80 => a.neg(w, d),
            0xb0 if x => match (w, i.off) {
                (_, 8) | (_, 16) => a.extend_rr(true, w, i.off as u8, d, s),
                (true, 32) => a.extend_rr(true, true, 32, d, s),
                _ => a.mov_rr(w, d, s),
            },
            0xb0 => {
                let src = if w { i.imm as i64 as u64 } else { i.imm as u32 as u64 };
                a.mov_const(d, vm::alu(0xb0, 0, src, i.off, w));
            }
            0xd0 => {
                let swap = x || w;
                match (i.imm, swap) {
                    (16, false) => a.extend_rr(false, false, 16, d, d),
                    (32, false) => a.mov_rr(false, d, d),
                    (64, false) => {}
                    (16, true) => {
                        a.bswap(false, d);
                        a.shift_imm(Shift::Shr, false, d, 16);
                    }
                    (32, true) => a.bswap(false, d),
                    _ => a.bswap(true, d),
                }
            }
            // Operations the specification does not define leave dst (as 32 bits in ALU).
            _ if !w => a.mov_rr(false, d, d),
            _ => {}
        }
    }

    /// Division and modulo, unsigned or signed (off 1): by zero, dst / 0 = 0 and dst % 0 =
    /// dst; signed by -1, x86's idiv would trap on the minimum, so the quotient is the
    /// negation and the remainder 0 (Rust's wrapping_div and wrapping_rem).
    fn divmod(&mut self, w: bool, signed: bool, modulo: bool, d: Reg, s: Option<Reg>, imm: i32) {
        let (zero, minus_one, done) = (self.a.label(), self.a.label(), self.a.label());
        let a = &mut self.a;
        match s {
            Some(s) => a.mov_rr(w, RCX, s),
            None if w => a.mov_r64_simm(RCX, imm),
            None => a.mov_r32_imm(RCX, imm as u32),
        }
        a.test_rr(w, RCX, RCX);
        a.jcc(Cond::E, zero);
        if signed {
            a.alu_ri(Alu::Cmp, w, RCX, -1);
            a.jcc(Cond::E, minus_one);
        }
        a.mov_rr(w, RAX, d);
        if signed {
            a.sign_extend_rax(w);
        } else {
            a.alu_rr(Alu::Xor, false, RDX, RDX);
        }
        a.div(signed, w, RCX);
        a.mov_rr(w, d, if modulo { RDX } else { RAX });
        a.jmp(done);
        a.bind(minus_one);
        if signed {
            if modulo {
                a.alu_rr(Alu::Xor, false, d, d);
            } else {
                a.neg(w, d);
            }
            a.jmp(done);
        }
        a.bind(zero);
        if !modulo {
            a.alu_rr(Alu::Xor, false, d, d);
        } else if !w {
            a.mov_rr(false, d, d);
        }
        a.bind(done);
    }

    /// BPF_ATOMIC as the interpreter does it: read (checked as a read), the operation, a
    /// write (checked as a write, also when a compare-and-exchange fails).
    fn atomic(&mut self, i: &Insn) {
        const FETCH: i32 = 0x01;
        let size = i.mem_size().expect("a store");
        let (dst, s) = (REGS[i.dst as usize], REGS[i.src as usize]);
        let op = i.imm & !FETCH;
        let known = matches!(op, 0x00 | 0x40 | 0x50 | 0xa0 | 0xe0 | 0xf0);
        self.check(dst, i.off, size, status::READ, known);
        if !known {
            let l = self.stub(Stub::Atomic { op });
            self.a.jmp(l);
            return;
        }
        let a = &mut self.a;
        a.alu_rr(Alu::Add, true, RDX, RAX);
        let at = mem(RDX, 0);
        a.load(size, false, RAX, at);
        let k = match op {
            0x00 => Some(Alu::Add),
            0x40 => Some(Alu::Or),
            0x50 => Some(Alu::And),
            0xa0 => Some(Alu::Xor),
            _ => None,
        };
        match (k, op) {
            (Some(k), _) => {
                a.mov_rr(true, RCX, RAX);
                a.alu_rr(k, true, RCX, s);
                a.store(size, at, RCX);
                if i.imm & FETCH != 0 {
                    a.mov_rr(true, s, RAX);
                }
            }
            (None, 0xe0) => {
                a.store(size, at, s);
                a.mov_rr(true, s, RAX);
            }
            _ => {
                // Compare-and-exchange: the old value against r0 (its low 32 bits below 8
                // bytes); r0 gets the old value.
                let skip = a.label();
                if size == 8 {
                    a.alu_rr(Alu::Cmp, true, RAX, REGS[0]);
                } else {
                    a.mov_rr(false, RCX, REGS[0]);
                    a.alu_rr(Alu::Cmp, true, RAX, RCX);
                }
                a.jcc(Cond::Ne, skip);
                a.store(size, at, s);
                a.bind(skip);
                a.mov_rr(true, REGS[0], RAX);
            }
        }
    }

    fn jmp(&mut self, i: &Insn, pc: usize) {
        let op = i.code & 0xf0;
        let w = i.class() == insn::JMP;
        match op {
            insn::EXIT => self.a.ret(),
            insn::CALL if w => match i.src {
                insn::PSEUDO_CALL => self.bpf_call(vm::target(i, pc).expect("a call")),
                insn::PSEUDO_KFUNC_CALL => self.host(1, i.imm),
                _ => self.host(0, i.imm),
            },
            insn::JA => {
                let t = vm::target(i, pc).expect("a jump");
                self.a.jmp(self.labels[t]);
            }
            _ => {
                let cond = match op {
                    0x10 => Cond::E,
                    0x20 => Cond::A,
                    0x30 => Cond::Ae,
                    0x40 | 0x50 => Cond::Ne,
                    0x60 => Cond::G,
                    0x70 => Cond::Ge,
                    0xa0 => Cond::B,
                    0xb0 => Cond::Be,
                    0xc0 => Cond::L,
                    0xd0 => Cond::Le,
                    // Never taken (the interpreter's `jump` is false for them).
                    _ => return,
                };
                let d = REGS[i.dst as usize];
                let x = i.code & insn::SRC_X != 0;
                let a = &mut self.a;
                match (op == 0x40, x) {
                    (true, true) => a.test_rr(w, d, REGS[i.src as usize]),
                    (true, false) => a.test_ri(w, d, i.imm),
                    (false, true) => a.alu_rr(Alu::Cmp, w, d, REGS[i.src as usize]),
                    (false, false) => a.alu_ri(Alu::Cmp, w, d, i.imm),
                }
                let t = vm::target(i, pc).expect("a jump");
                a.jcc(cond, self.labels[t]);
            }
        }
    }

    /// A BPF-to-BPF call: a new frame (r6-r9 and r10 kept, r10 at the next 512 bytes of the
    /// stack region), at most MAX_FRAMES deep.
    fn bpf_call(&mut self, t: usize) {
        let deep = self.stub(Stub::Status(status::DEPTH));
        let a = &mut self.a;
        a.load(8, false, RAX, ctx(off::DEPTH));
        a.alu_ri(Alu::Add, true, RAX, 1);
        a.alu_ri(Alu::Cmp, true, RAX, MAX_FRAMES as i32);
        a.jcc(Cond::Ae, deep);
        a.store(8, ctx(off::DEPTH), RAX);
        for r in &REGS[6..=10] {
            a.push(*r);
        }
        a.mov_rr(true, REGS[10], RAX);
        a.alu_ri(Alu::Add, true, REGS[10], 1);
        a.imul_rri(true, REGS[10], REGS[10], STACK_FRAME as i32);
        a.mov_const(RCX, vm::address(STACK, 0));
        a.alu_rr(Alu::Or, true, REGS[10], RCX);
        a.call(self.labels[t]);
        for r in REGS[6..=10].iter().rev() {
            a.pop(*r);
        }
        a.add_mem_one(ctx(off::DEPTH), false);
    }

    /// A helper (kind 0) or kfunc (kind 1) through the trampoline: r1-r5 into the context,
    /// r0 from its return, r1-r5 cleared after (as the interpreter clears them).
    fn host(&mut self, kind: u32, imm: i32) {
        let a = &mut self.a;
        for k in 0..5 {
            a.store(8, ctx(off::ARGS + 8 * k), REGS[1 + k]);
        }
        a.mov_rr(true, RDI, CTX);
        a.mov_r32_imm(RSI, kind);
        a.mov_r32_imm(RDX, imm as u32);
        a.push(CTX);
        a.mov_r64_imm64(RAX, self.host_call);
        a.call_reg(RAX);
        a.pop(CTX);
        a.alu_mem_imm(Alu::Cmp, ctx(off::STATUS), 0);
        a.jcc(Cond::Ne, self.fault_exit);
        a.mov_rr(true, REGS[0], RAX);
        for r in &REGS[1..=5] {
            a.alu_rr(Alu::Xor, false, *r, *r);
        }
    }
}
