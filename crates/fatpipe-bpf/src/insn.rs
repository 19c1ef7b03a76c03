//! eBPF instructions (Documentation/bpf/standardization/instruction-set.rst): 8 bytes each,
//! `code`, destination and source registers, a 16-bit offset and a 32-bit immediate; a
//! 64-bit load of an immediate takes two.

// Instruction classes (code & 0x07).
pub const LD: u8 = 0x00;
pub const LDX: u8 = 0x01;
pub const ST: u8 = 0x02;
pub const STX: u8 = 0x03;
pub const ALU: u8 = 0x04;
pub const JMP: u8 = 0x05;
pub const JMP32: u8 = 0x06;
pub const ALU64: u8 = 0x07;
/// Source operand: a register (else the immediate).
pub const SRC_X: u8 = 0x08;
// Memory access sizes (code & 0x18) and modes (code & 0xe0).
pub const SIZE_W: u8 = 0x00;
pub const SIZE_H: u8 = 0x08;
pub const SIZE_B: u8 = 0x10;
pub const SIZE_DW: u8 = 0x18;
pub const MODE_IMM: u8 = 0x00;
pub const MODE_MEM: u8 = 0x60;
pub const MODE_MEMSX: u8 = 0x80;
pub const MODE_ATOMIC: u8 = 0xc0;
// Jump operations (code & 0xf0).
pub const JA: u8 = 0x00;
pub const CALL: u8 = 0x80;
pub const EXIT: u8 = 0x90;
/// `src_reg` of a call: a BPF-to-BPF call (imm: relative instruction offset) or a kernel
/// function (imm: its BTF id); 0 is a helper (imm: its number).
pub const PSEUDO_CALL: u8 = 1;
pub const PSEUDO_KFUNC_CALL: u8 = 2;
/// `src_reg` of a 64-bit immediate load: a map's fd, or an address inside a map's value.
pub const PSEUDO_MAP_FD: u8 = 1;
pub const PSEUDO_MAP_VALUE: u8 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Insn {
    pub code: u8,
    pub dst: u8,
    pub src: u8,
    pub off: i16,
    pub imm: i32,
}

impl Insn {
    pub fn new(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
        Insn { code, dst, src, off, imm }
    }

    pub fn decode(b: &[u8]) -> Insn {
        Insn {
            code: b[0],
            dst: b[1] & 0x0f,
            src: b[1] >> 4,
            off: i16::from_le_bytes([b[2], b[3]]),
            imm: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }

    pub fn encode(&self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0] = self.code;
        b[1] = (self.src << 4) | (self.dst & 0x0f);
        b[2..4].copy_from_slice(&self.off.to_le_bytes());
        b[4..8].copy_from_slice(&self.imm.to_le_bytes());
        b
    }

    pub fn class(&self) -> u8 {
        self.code & 0x07
    }

    pub fn is_ld_imm64(&self) -> bool {
        self.code == LD | SIZE_DW | MODE_IMM
    }

    pub fn is_call(&self) -> bool {
        self.code == JMP | CALL
    }

    /// Bytes a load or store moves.
    pub fn mem_size(&self) -> Option<u32> {
        matches!(self.class(), LDX | ST | STX).then(|| match self.code & 0x18 {
            SIZE_W => 4,
            SIZE_H => 2,
            SIZE_B => 1,
            _ => 8,
        })
    }

    pub fn set_mem_size(&mut self, bytes: u32) -> Option<()> {
        let size = match bytes {
            1 => SIZE_B,
            2 => SIZE_H,
            4 => SIZE_W,
            8 => SIZE_DW,
            _ => return None,
        };
        self.code = (self.code & !0x18) | size;
        Some(())
    }
}

pub fn decode_all(bytes: &[u8]) -> Vec<Insn> {
    bytes.chunks_exact(8).map(Insn::decode).collect()
}

pub fn encode_all(insns: &[Insn]) -> Vec<u8> {
    insns.iter().flat_map(|i| i.encode()).collect()
}
