//! The interpreter's semantics on hand-written programs: 32- and 64-bit arithmetic (wrapping,
//! zero extension, division by zero), signed and unsigned jumps, calls and their frames, and
//! the memory checks that stand in for the kernel's verifier.

use fatpipe_bpf::insn::{self, Insn};
use fatpipe_bpf::machine::Machine;
use fatpipe_bpf::vm::{self, Host, Memory, Region};
use fatpipe_bpf::Error;

struct NoHost;

impl Host for NoHost {
    fn helper(&mut self, id: i32, args: [u64; 5], _mem: &mut Memory) -> Result<u64, Error> {
        Ok(id as u64 * 1000 + args[0])
    }
    fn kfunc(&mut self, index: u32, args: [u64; 5], mem: &mut Memory) -> Result<u64, Error> {
        // Doubles the u32 its first argument points to.
        let v = mem.load(args[0], 4)?;
        mem.store(args[0], 4, v * 2)?;
        Ok(index as u64)
    }
}

const R0: u8 = 0;
const R1: u8 = 1;
const R2: u8 = 2;
const R6: u8 = 6;
const R10: u8 = 10;

fn alu64_imm(op: u8, dst: u8, imm: i32) -> Insn {
    Insn::new(insn::ALU64 | op, dst, 0, 0, imm)
}
fn alu32_imm(op: u8, dst: u8, imm: i32) -> Insn {
    Insn::new(insn::ALU | op, dst, 0, 0, imm)
}
fn mov64_reg(dst: u8, src: u8) -> Insn {
    Insn::new(insn::ALU64 | 0xb0 | insn::SRC_X, dst, src, 0, 0)
}
/// BPF_ADD is operation 0: the class and source bits alone.
fn add64_reg(dst: u8, src: u8) -> Insn {
    Insn::new(insn::ALU64 | insn::SRC_X, dst, src, 0, 0)
}
fn exit() -> Insn {
    Insn::new(insn::JMP | insn::EXIT, 0, 0, 0, 0)
}

fn run(prog: Vec<Insn>) -> Result<u64, Error> {
    let mut m = Machine::new(vec![Region { bytes: vec![7, 0, 0, 0], writable: Some(Vec::new()) }]);
    let p = m.add("test", prog)?;
    m.run(p, &[], &mut NoHost)
}

#[test]
fn arithmetic_wraps_extends_and_divides_as_ebpf() {
    // 32-bit: 0xffffffff + 2 wraps to 1, and the upper half is zeroed.
    let r = run(vec![alu64_imm(0xb0, R0, -1), alu32_imm(0x00, R0, 2), exit()]).unwrap();
    assert_eq!(r, 1);
    // 64-bit mov of -1 sign-extends; a 32-bit mov zero-extends.
    assert_eq!(run(vec![alu64_imm(0xb0, R0, -1), exit()]).unwrap(), u64::MAX);
    assert_eq!(run(vec![alu32_imm(0xb0, R0, -1), exit()]).unwrap(), u32::MAX as u64);
    // Division by zero gives 0, modulo by zero leaves the dividend.
    assert_eq!(run(vec![alu64_imm(0xb0, R0, 9), alu64_imm(0x30, R0, 0), exit()]).unwrap(), 0);
    assert_eq!(run(vec![alu64_imm(0xb0, R0, 9), alu64_imm(0x90, R0, 0), exit()]).unwrap(), 9);
    // Arithmetic shift keeps the sign; logical does not.
    assert_eq!(run(vec![alu64_imm(0xb0, R0, -16), alu64_imm(0xc0, R0, 2), exit()]).unwrap(), (-4i64) as u64);
    assert_eq!(run(vec![alu64_imm(0xb0, R0, -16), alu64_imm(0x70, R0, 60), exit()]).unwrap(), 15);
}

#[test]
fn jumps_compare_signed_and_unsigned() {
    // r0 = -1; if r0 > 5 (unsigned): r0 = 1 else r0 = 2.
    let prog = |op: u8| {
        vec![
            alu64_imm(0xb0, R0, -1),
            Insn::new(insn::JMP | op, R0, 0, 2, 5),
            alu64_imm(0xb0, R0, 2),
            exit(),
            alu64_imm(0xb0, R0, 1),
            exit(),
        ]
    };
    assert_eq!(run(prog(0x20)).unwrap(), 1, "JGT: 2^64 - 1 > 5");
    assert_eq!(run(prog(0x60)).unwrap(), 2, "JSGT: -1 > 5 is false");
}

#[test]
fn calls_keep_the_callers_registers_and_frame() {
    // main: r6 = 40; store 2 on its stack; call f; r0 += r6 + its stack value. f clobbers
    // r6 in its own frame and returns 100.
    let prog = vec![
        alu64_imm(0xb0, R6, 40),
        Insn::new(insn::ST | insn::MODE_MEM | insn::SIZE_DW, R10, 0, -8, 2),
        Insn::new(insn::JMP | insn::CALL, 0, insn::PSEUDO_CALL, 0, 4),
        add64_reg(R0, R6),
        Insn::new(insn::LDX | insn::MODE_MEM | insn::SIZE_DW, R2, R10, -8, 0),
        add64_reg(R0, R2),
        exit(),
        // f:
        alu64_imm(0xb0, R6, 7),
        Insn::new(insn::ST | insn::MODE_MEM | insn::SIZE_DW, R10, 0, -8, 99),
        alu64_imm(0xb0, R0, 100),
        exit(),
    ];
    assert_eq!(run(prog).unwrap(), 142);
}

#[test]
fn helpers_and_kernel_functions_reach_the_host() {
    let data = vm::address(vm::FIRST_FREE, 0);
    let mut m = Machine::new(vec![Region { bytes: vec![21, 0, 0, 0], writable: None }]);
    let p = m
        .add(
            "calls",
            vec![
                Insn::new(insn::LD | insn::SIZE_DW, R1, 0, 0, data as u32 as i32),
                Insn::new(0, 0, 0, 0, (data >> 32) as i32),
                mov64_reg(R6, R1),
                Insn::new(insn::JMP | insn::CALL, 0, insn::PSEUDO_KFUNC_CALL, 0, 3),
                Insn::new(insn::LDX | insn::MODE_MEM | insn::SIZE_W, R0, R6, 0, 0),
                exit(),
            ],
        )
        .unwrap();
    assert_eq!(m.run(p, &[], &mut NoHost).unwrap(), 42, "the kernel function doubled 21");
}

#[test]
fn memory_outside_a_region_or_a_read_only_write_is_an_error_not_a_crash() {
    let read_only = vm::address(vm::FIRST_FREE, 0);
    let store = |at: u64| {
        vec![
            Insn::new(insn::LD | insn::SIZE_DW, R1, 0, 0, at as u32 as i32),
            Insn::new(0, 0, 0, 0, (at >> 32) as i32),
            Insn::new(insn::ST | insn::MODE_MEM | insn::SIZE_W, R1, 0, 0, 1),
            exit(),
        ]
    };
    let e = run(store(read_only)).unwrap_err().to_string();
    assert!(e.contains("a write of 4 bytes"), "{e}");
    let e = run(store(vm::address(vm::FIRST_FREE, 2))).unwrap_err().to_string();
    assert!(e.contains("outside the memory"), "{e}");
    // Null: region 0.
    let e = run(vec![Insn::new(insn::LDX | insn::MODE_MEM | insn::SIZE_W, R0, R0, 0, 0), exit()]).unwrap_err();
    assert!(e.to_string().contains("a read of 4 bytes at 0x0:0x0"), "{e}");
    // The stack ends where the frame pointer is.
    let e = run(vec![Insn::new(insn::STX | insn::MODE_MEM | insn::SIZE_DW, R10, R0, 4096, 0), exit()]).unwrap_err();
    assert!(e.to_string().contains("a write of 8 bytes"), "{e}");
}

#[test]
fn an_endless_loop_ends_with_an_error() {
    let e = run(vec![Insn::new(insn::JMP | insn::JA, 0, 0, -1, 0), exit()]).unwrap_err();
    assert!(e.to_string().contains("ran more than"), "{e}");
}

#[test]
fn jumps_and_calls_outside_the_program_are_refused_before_running() {
    let mut m = Machine::new(Vec::new());
    let e = m.add("bad", vec![Insn::new(insn::JMP | 0x10, R0, 0, 5, 0), exit()]).unwrap_err();
    assert!(e.to_string().contains("a jump outside the program"), "{e}");
    let e = m.add("bad", vec![Insn::new(insn::JMP | insn::CALL, 0, insn::PSEUDO_CALL, 0, 9), exit()]).unwrap_err();
    assert!(e.to_string().contains("a call outside the program"), "{e}");
}
