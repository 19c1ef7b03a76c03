//! `.BTF.ext`: the CO-RE relocation records clang writes for every access to a type marked
//! `preserve_access_index` (or `__builtin_preserve_field_info`), per code section.

use crate::read::{Bytes, Error};

/// One relocation: the instruction at byte `insn_off` of its section accesses the field
/// described by `access` ("0:2:1": index into the root pointer, then member or array
/// indices) of local type `type_id`; `kind` says what the instruction needs (bpf_core_relo_kind).
#[derive(Clone, Debug)]
pub struct CoreRelo {
    pub insn_off: u32,
    pub type_id: u32,
    pub access: u32,
    pub kind: u32,
}

/// The CO-RE records by section name (the name's offset resolved through the object's BTF).
pub fn core_relos(data: &[u8], section_name: impl Fn(u32) -> String) -> Result<Vec<(String, Vec<CoreRelo>)>, Error> {
    let b = Bytes(data);
    if b.u16(0)? != 0xeb9f {
        return Err(Error::new("BTF.ext: bad magic"));
    }
    let hdr_len = b.u32(4)? as usize;
    if hdr_len < 32 {
        return Ok(Vec::new()); // no CO-RE section in this header version
    }
    let (off, len) = (b.u32(24)? as usize, b.u32(28)? as usize);
    let mut out = Vec::new();
    if len == 0 {
        return Ok(out);
    }
    let s = Bytes(b.slice(hdr_len + off, len)?);
    let rec_size = s.u32(0)? as usize;
    if rec_size < 16 {
        return Err(Error::new("BTF.ext: CO-RE record too small"));
    }
    let mut o = 4;
    while o < len {
        let name = section_name(s.u32(o)?);
        let n = s.u32(o + 4)? as usize;
        o += 8;
        let mut relos = Vec::with_capacity(n);
        for _ in 0..n {
            relos.push(CoreRelo {
                insn_off: s.u32(o)?,
                type_id: s.u32(o + 4)?,
                access: s.u32(o + 8)?,
                kind: s.u32(o + 12)?,
            });
            o += rec_size;
        }
        out.push((name, relos));
    }
    Ok(out)
}
