//! The JIT against the interpreter, instruction by instruction: every ALU and jump operation
//! in both widths, with register and immediate operands over edge values (shifts by the
//! width and more, division and modulo by zero and by -1 at the minimum, immediates that
//! sign-extend), byte swaps, loads and stores of every size at the edges of every kind of
//! region, atomics, calls into the host and between functions, the instruction budget,
//! and random programs. Each case runs the same instructions through `Machine::add` and
//! `Machine::add_compiled` and compares r0, every register (dumped to the stack), every
//! region's bytes, the host calls seen, and the error text.

#![cfg(all(target_arch = "x86_64", target_os = "linux"))]
// Opcodes are written class | operation | source, as the specification composes them, the
// operation 0 (add) included.
#![allow(clippy::identity_op)]

use fatpipe_bpf::insn::*;
use fatpipe_bpf::machine::Machine;
use fatpipe_bpf::vm::{self, Host, Memory, Region};
use fatpipe_bpf::{jit, Error};
use std::sync::Arc;

/// Values at the edges of 8, 16, 32 and 64 bits, signed and not, and shift counts.
const VALS: [u64; 16] = [
    0,
    1,
    2,
    7,
    31,
    32,
    63,
    64,
    0x7f,
    0x8000,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    0x8000_0000_0000_0000,
    u64::MAX,
    0x1234_5678_9abc_def0,
];

#[derive(Default, Debug, PartialEq)]
struct TestHost {
    calls: Vec<(bool, u32, [u64; 5])>,
}

impl Host for TestHost {
    fn helper(&mut self, id: i32, args: [u64; 5], mem: &mut Memory) -> Result<u64, Error> {
        self.calls.push((false, id as u32, args));
        match id {
            99 => Err(Error::new("helper 99 refuses")),
            98 => panic!("helper 98 panics"),
            // Reads through the memory the program sees.
            97 => mem.load(args[0], 8),
            _ => Ok((id as u64).wrapping_mul(1000).wrapping_add(args[0] ^ args[4])),
        }
    }

    fn kfunc(&mut self, index: u32, args: [u64; 5], mem: &mut Memory) -> Result<u64, Error> {
        self.calls.push((true, index, args));
        // Writes the program's memory, as the core's kfuncs write the socket view.
        mem.write_u64(3, 8, args[1]);
        Ok(args[2].wrapping_sub(index as u64))
    }
}

/// Region 3: 64 bytes writable in [8,16), [16,24) and [40,48) only (adjacent ranges: an
/// 8-byte write across 12 is refused); region 4: 32 bytes read-only; region 5: 16 bytes
/// all writable.
fn regions() -> Vec<Region> {
    let fill = |n: usize, seed: u8| (0..n).map(|i| (i as u8).wrapping_mul(37).wrapping_add(seed)).collect();
    vec![
        Region { bytes: fill(64, 3), writable: Some(vec![(8, 16), (16, 24), (40, 48)]) },
        Region { bytes: fill(32, 4), writable: Some(Vec::new()) },
        Region { bytes: fill(16, 5), writable: None },
    ]
}

type Outcome = (Result<u64, String>, Vec<Vec<u8>>, TestHost);

fn run(insns: &[Insn], compiled: bool) -> Outcome {
    let mut m = Machine::new(regions());
    let p = if compiled {
        let code = jit::compile("t", insns).expect("compiles");
        m.add_compiled("t", insns.to_vec(), Arc::new(code)).expect("checked")
    } else {
        m.add("t", insns.to_vec()).expect("checked")
    };
    let mut host = TestHost::default();
    let r = m.run(p, &[0x1111, 0x2222], &mut host).map_err(|e| e.to_string());
    let mem = (1..6).map(|k| m.memory.region(k).to_vec()).collect();
    (r, mem, host)
}

/// Runs both ways and asserts the same outcome; returns it.
fn same(insns: &[Insn]) -> Outcome {
    let a = run(insns, false);
    let b = run(insns, true);
    assert_eq!(a.0, b.0, "r0 or error, program {insns:?}");
    assert_eq!(a.1, b.1, "memory, program {insns:?}");
    assert_eq!(a.2, b.2, "host calls, program {insns:?}");
    a
}

/// `same`, for cases checked only for agreement.
fn agree(insns: &[Insn]) {
    let _ = same(insns);
}

fn i(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn::new(code, dst, src, off, imm)
}

fn ld64(dst: u8, v: u64) -> [Insn; 2] {
    [i(LD | SIZE_DW | MODE_IMM, dst, 0, 0, v as u32 as i32), i(0, 0, 0, 0, (v >> 32) as u32 as i32)]
}

fn exit() -> Insn {
    i(JMP | EXIT, 0, 0, 0, 0)
}

/// Stores r0-r9 to the stack (so a clobbered register shows) and exits.
fn dump() -> Vec<Insn> {
    let mut v: Vec<Insn> = (0..10).map(|r| i(STX | MODE_MEM | SIZE_DW, 10, r, -8 * (r as i16 + 1), 0)).collect();
    v.push(exit());
    v
}

/// r0-r9 set to distinct values.
fn setup() -> Vec<Insn> {
    (0..10u8).flat_map(|r| ld64(r, 0x0101_0101_0101_0101u64.wrapping_mul(r as u64 + 3) ^ 0x8000_0000)).collect()
}

fn program(parts: &[&[Insn]]) -> Vec<Insn> {
    parts.iter().flat_map(|p| p.iter().copied()).collect()
}

#[test]
fn alu_every_operation_width_and_operand_over_edge_values() {
    for class in [ALU, ALU64] {
        for op in (0..16u8).map(|k| k << 4).filter(|&op| op != 0xd0) {
            let offs: &[i16] = match op {
                0x30 | 0x90 => &[0, 1],
                0xb0 => &[0, 8, 16, 32, 1],
                _ => &[0],
            };
            for &o in offs {
                for x in [0, SRC_X] {
                    for &a in &VALS {
                        for &b in &VALS {
                            let code = class | op | x;
                            let imm = b as u32 as i32;
                            let body = [i(code, 3, 4, o, if x == 0 { imm } else { 0 })];
                            agree(&program(&[&setup(), &ld64(3, a), &ld64(4, b), &body, &dump()]));
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn alu_every_register_pair() {
    // Register mapping: each BPF register as dst and src, the same one as both included.
    let ops = [
        (ALU64 | 0x00 | SRC_X, 0),
        (ALU64 | 0x20 | SRC_X, 0),
        (ALU | 0x30 | SRC_X, 0),
        (ALU64 | 0x90 | SRC_X, 1),
        (ALU64 | 0x60 | SRC_X, 0),
        (ALU | 0xc0 | SRC_X, 0),
        (ALU64 | 0xb0 | SRC_X, 8),
        (ALU | 0xb0 | SRC_X, 16),
        (JMP | 0x30 | SRC_X, 1),
    ];
    for (code, o) in ops {
        for d in 0..10 {
            for s in 0..10 {
                agree(&program(&[&setup(), &[i(code, d, s, o, 0), i(ALU64 | 0xb0, 0, 0, 0, 77)], &dump()]));
            }
        }
    }
}

#[test]
fn byte_swaps_every_width() {
    for class in [ALU, ALU64] {
        for x in [0, SRC_X] {
            for width in [16, 32, 64, 0, 8, 48] {
                for &a in &VALS {
                    agree(&program(&[&setup(), &ld64(5, a), &[i(class | 0xd0 | x, 5, 0, 0, width)], &dump()]));
                }
            }
        }
    }
}

#[test]
fn jumps_every_condition_width_and_operand() {
    for class in [JMP, JMP32] {
        for op in [0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0, 0x80] {
            if op == 0x80 && class == JMP {
                continue;
            }
            for x in [0, SRC_X] {
                for &a in &VALS {
                    for &b in &VALS {
                        let body = [
                            i(ALU64 | 0xb0, 0, 0, 0, 1),
                            i(class | op | x, 3, 4, 1, if x == 0 { b as u32 as i32 } else { 0 }),
                            i(ALU64 | 0xb0, 0, 0, 0, 2),
                        ];
                        agree(&program(&[&setup(), &ld64(3, a), &ld64(4, b), &body, &dump()]));
                    }
                }
            }
        }
    }
    // JA in both classes (JMP32's takes its offset from imm), backward and forward.
    let ja = [
        i(ALU64 | 0xb0, 0, 0, 0, 0),
        i(JMP | JA, 0, 0, 2, 0),
        i(ALU64 | 0x00, 0, 0, 0, 100),
        exit(),
        i(ALU64 | 0x00, 0, 0, 0, 1),
        i(JMP | 0x20, 0, 0, 1, 3),
        i(JMP32 | JA, 0, 0, 0, -3),
        exit(),
    ];
    assert_eq!(same(&ja).0, Ok(4));
    let ja = [
        i(ALU64 | 0xb0, 0, 0, 0, 0),
        i(ALU64 | 0x00, 0, 0, 0, 1),
        i(JMP | 0x20, 0, 0, 1, 2),
        i(JMP32 | JA, 0, 0, 0, -3),
        exit(),
    ];
    assert_eq!(same(&ja).0, Ok(3));
}

/// Addresses at and across the edges of each region, the null region and regions that
/// do not exist.
fn addresses() -> Vec<u64> {
    let mut v = Vec::new();
    for region in [0u32, 1, 2, 3, 4, 5, 6, 7, 0xffff_ffff] {
        for off in [
            0u32,
            1,
            4,
            7,
            8,
            9,
            12,
            14,
            15,
            16,
            20,
            23,
            24,
            28,
            31,
            32,
            40,
            44,
            47,
            48,
            56,
            60,
            63,
            64,
            4092,
            4095,
            4096,
            u32::MAX - 3,
            u32::MAX,
        ] {
            v.push(vm::address(region, off));
        }
    }
    v
}

#[test]
fn loads_and_stores_every_size_at_every_edge() {
    for size in [SIZE_B, SIZE_H, SIZE_W, SIZE_DW] {
        for addr in addresses() {
            for o in [0i16, -1, 8, -8] {
                let base = addr.wrapping_sub(o as i64 as u64);
                let cases = [
                    i(LDX | MODE_MEM | size, 5, 2, o, 0),
                    i(LDX | MODE_MEMSX | size, 5, 2, o, 0),
                    i(ST | MODE_MEM | size, 2, 0, o, -2),
                    i(ST | MODE_MEM | size, 2, 0, o, 0x1234_5678),
                    i(STX | MODE_MEM | size, 2, 6, o, 0),
                ];
                for c in cases {
                    agree(&program(&[&setup(), &ld64(2, base), &[c], &dump()]));
                }
            }
        }
    }
}

#[test]
fn a_fault_is_an_error_naming_the_access_not_a_crash() {
    let (r, _, _) = same(&program(&[&ld64(2, vm::address(3, 62)), &[i(LDX | MODE_MEM | SIZE_W, 0, 2, 0, 0), exit()]]));
    assert_eq!(r, Err("t: a read of 4 bytes at 0x3:0x3e is outside the memory the program may use".into()));
    // Writable 8..16 and 16..24, adjacent: an 8-byte write at 12 is in neither.
    let (r, _, _) = same(&program(&[&ld64(2, vm::address(3, 12)), &[i(STX | MODE_MEM | SIZE_DW, 2, 1, 0, 0), exit()]]));
    assert_eq!(r, Err("t: a write of 8 bytes at 0x3:0xc is outside the memory the program may use".into()));
    let (r, _, _) = same(&[i(LDX | MODE_MEM | SIZE_B, 0, 0, 0, 0), exit()]);
    assert_eq!(r, Err("t: a read of 1 bytes at 0x0:0x0 is outside the memory the program may use".into()));
}

#[test]
fn atomics_every_operation_and_size() {
    for size in [SIZE_W, SIZE_DW, SIZE_B, SIZE_H] {
        for op in [0x00, 0x01, 0x40, 0x41, 0x50, 0x51, 0xa0, 0xa1, 0xe0, 0xe1, 0xf0, 0xf1, 0x10, 0x31] {
            for addr in [
                vm::address(3, 8),
                vm::address(3, 20),
                vm::address(3, 12),
                vm::address(4, 0),
                vm::address(3, 62),
                vm::address(5, 8),
            ] {
                for r0 in [0u64, 0x5f5e_5d5c_5b5a_5958, 0x5b5a_5958] {
                    // r0 sometimes equal to the memory (compare-and-exchange succeeds).
                    let probe = [i(LDX | MODE_MEM | SIZE_DW, 0, 2, 0, 0)];
                    let body = [i(STX | MODE_ATOMIC | size, 2, 7, 0, op)];
                    agree(&program(&[&setup(), &ld64(2, addr), &ld64(0, r0), &body, &dump()]));
                    if addr != vm::address(3, 62) {
                        agree(&program(&[&setup(), &ld64(2, addr), &probe, &body, &dump()]));
                    }
                }
            }
        }
    }
}

#[test]
fn host_calls_see_the_arguments_and_clear_r1_to_r5() {
    for call in [i(JMP | CALL, 0, 0, 0, 5), i(JMP | CALL, 0, PSEUDO_KFUNC_CALL, 0, 3), i(JMP | CALL, 0, 0, 0, 97)] {
        let (r, _, host) = same(&program(&[&setup(), &ld64(1, vm::address(3, 0)), &[call], &dump()]));
        assert!(r.is_ok() && host.calls.len() == 1);
    }
    // A host error ends the run with its text.
    let (r, _, _) = same(&program(&[&setup(), &[i(JMP | CALL, 0, 0, 0, 99)], &dump()]));
    assert_eq!(r, Err("t: helper 99 refuses".into()));
    // Helper 97 reading outside the memory: the host's own fault.
    let (r, _, _) = same(&program(&[&setup(), &ld64(1, vm::address(9, 0)), &[i(JMP | CALL, 0, 0, 0, 97)], &dump()]));
    assert!(r.unwrap_err().contains("a read of 8 bytes at 0x9:0x0"));
}

#[test]
fn a_host_panic_unwinds_through_compiled_code_to_the_caller() {
    let prog = program(&[&setup(), &[i(JMP | CALL, 0, 0, 0, 98)], &dump()]);
    for compiled in [false, true] {
        let caught = std::panic::catch_unwind(|| run(&prog, compiled));
        let payload = caught.expect_err("the helper panics");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"helper 98 panics"));
    }
}

#[test]
fn bpf_to_bpf_calls_keep_r6_to_r10_and_nest_at_most_eight_frames() {
    // main: r6 = 7; r1 = 5; call f; r0 += r6; dump. f: r6 = 100; *(r10-8) = r1; r0 = r1 * 2;
    // (r10 is f's own frame: the dump shows main's stack untouched by f.)
    let f = [
        i(ALU64 | 0xb0, 6, 0, 0, 100),
        i(STX | MODE_MEM | SIZE_DW, 10, 1, -8, 0),
        i(ALU64 | 0xb0 | SRC_X, 0, 1, 0, 0),
        i(ALU64 | 0x20, 0, 0, 0, 2),
        exit(),
    ];
    let dump = dump();
    let main = [
        i(ALU64 | 0xb0, 6, 0, 0, 7),
        i(ALU64 | 0xb0, 1, 0, 0, 5),
        i(JMP | CALL, 0, PSEUDO_CALL, 0, 12),
        i(ALU64 | 0x00 | SRC_X, 0, 6, 0, 0),
    ];
    assert_eq!(main.len() + dump.len(), 15);
    let (r, _, _) = same(&program(&[&main, &dump, &f]));
    assert_eq!(r, Ok(17));
    // A function calling itself n times, then r0 = depth reached.
    for n in [5, 6, 7, 8] {
        let rec = [
            i(ALU64 | 0xb0, 1, 0, 0, n),
            i(JMP | CALL, 0, PSEUDO_CALL, 0, 1),
            exit(),
            // f(r1): if r1 == 0 return 0; return f(r1 - 1) + 1
            i(ALU64 | 0xb0, 0, 0, 0, 0),
            i(JMP | 0x10, 1, 0, 3, 0),
            i(ALU64 | 0x10, 1, 0, 0, 1),
            i(JMP | CALL, 0, PSEUDO_CALL, 0, -4),
            i(ALU64 | 0x00, 0, 0, 0, 1),
            exit(),
        ];
        let (r, _, _) = same(&rec);
        if n < 7 {
            assert_eq!(r, Ok(n as u64));
        } else {
            assert_eq!(r, Err("t: calls nest deeper than 8 frames".into()));
        }
    }
}

#[test]
fn the_instruction_budget_ends_a_run_at_the_same_count() {
    // r1 = n; loop: r1 -= 1; if r1 != 0 goto loop; exit: 2n + 2 instructions.
    let looped =
        |n: i32| vec![i(ALU64 | 0xb0, 1, 0, 0, n), i(ALU64 | 0x10, 1, 0, 0, 1), i(JMP | 0x50, 1, 0, -2, 0), exit()];
    let max = vm::MAX_INSNS as i32;
    assert_eq!(same(&looped((max - 2) / 2)).0, Ok(0));
    assert_eq!(
        same(&looped((max - 2) / 2 + 1)).0,
        Err(format!("t: ran more than {max} instructions (an endless loop?)"))
    );
    assert!(same(&[i(JMP | JA, 0, 0, -1, 0)]).0.is_err());
    // Recursion without end: the depth limit first.
    assert!(same(&[i(JMP | CALL, 0, PSEUDO_CALL, 0, -1)]).0.is_err());
}

#[test]
fn running_past_the_end_and_jumps_into_a_64_bit_load_are_errors() {
    assert_eq!(same(&[i(ALU64 | 0xb0, 0, 0, 0, 1)]).0, Err("t: ran past its last instruction".into()));
    let bad = program(&[&[i(JMP | JA, 0, 0, 1, 0)], &ld64(0, 1), &[exit()]]);
    let mut m = Machine::new(regions());
    let e = m.add("t", bad.clone()).unwrap_err().to_string();
    assert_eq!(e, "t: instruction 0: a jump into the second half of the 64-bit load at 1");
    assert_eq!(jit::compile("t", &bad).unwrap_err().to_string(), e);
}

/// xorshift64*: reproducible random programs without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn value(&mut self) -> u64 {
        if self.below(2) == 0 {
            VALS[self.below(VALS.len() as u64) as usize]
        } else {
            self.next() >> self.below(64)
        }
    }
}

#[test]
fn random_programs() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..400 {
        let mut p: Vec<Insn> = (0..10).flat_map(|r| ld64(r, rng.value())).collect();
        let len = 40;
        let mut body = Vec::new();
        for k in 0..len {
            let (d, s) = (rng.below(10) as u8, rng.below(10) as u8);
            let imm = rng.value() as u32 as i32;
            let insn = match rng.below(10) {
                0..=5 => {
                    let class = if rng.below(2) == 0 { ALU } else { ALU64 };
                    let op = (rng.below(14) as u8) << 4;
                    let o = [0, 1, 8, 16, 32][rng.below(5) as usize];
                    let imm = if op == 0xd0 { [16, 32, 64][rng.below(3) as usize] } else { imm };
                    i(class | op | if rng.below(2) == 0 { 0 } else { SRC_X }, d, s, o, imm)
                }
                6 => {
                    let class = if rng.below(2) == 0 { JMP } else { JMP32 };
                    let op = [0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0xa0, 0xb0, 0xc0, 0xd0][rng.below(11) as usize];
                    let ahead = rng.below((len - k) as u64) as i16;
                    i(class | op | if rng.below(2) == 0 { 0 } else { SRC_X }, d, s, ahead, imm)
                }
                7 => i(
                    STX | MODE_MEM | [SIZE_B, SIZE_H, SIZE_W, SIZE_DW][rng.below(4) as usize],
                    10,
                    s,
                    -8 * (11 + rng.below(40) as i16),
                    0,
                ),
                8 => i(
                    LDX | MODE_MEM | [SIZE_B, SIZE_H, SIZE_W, SIZE_DW][rng.below(4) as usize],
                    d,
                    10,
                    -8 * (11 + rng.below(40) as i16),
                    0,
                ),
                _ => i(
                    LDX | MODE_MEMSX | [SIZE_B, SIZE_H, SIZE_W][rng.below(3) as usize],
                    d,
                    10,
                    -8 * (11 + rng.below(40) as i16),
                    0,
                ),
            };
            body.push(insn);
        }
        p.extend(body);
        p.extend(dump());
        agree(&p);
    }
}
