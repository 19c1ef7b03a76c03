//! An x86-64 JIT for the interpreter's programs (vm.rs): the same instructions, memory model
//! and errors, compiled once to machine code (`emit.rs`, through the assembler `x86.rs`)
//! and run from executable memory (`exec.rs`, W^X). x86-64 Linux only: elsewhere
//! [`compile`] says so and programs stay interpreted.
//!
//! A run passes the compiled code a context (`Ctx`): the region table (per region its
//! bytes, length and, when only some ranges are writable, a table giving for each offset
//! the end of the writable range that holds it), the instruction budget, the frame depth,
//! r1, the arguments of a host call, and where a fault is recorded. Faults leave the code
//! with a status; the error is then built by the same functions the interpreter uses, so
//! both say the same thing.
//!
//! One difference, in a program that breaks the limits only: the interpreter counts
//! instructions one by one, the JIT per basic block (charged at the block's start), so a
//! program that both exhausts MAX_INSNS and faults in the same block reports the budget
//! where the interpreter reports the fault. Programs the kernel's verifier accepts do neither.

// Without the JIT the context and region table are defined but not used.
#![cfg_attr(not(all(target_arch = "x86_64", target_os = "linux")), allow(dead_code))]

use crate::insn::Insn;
use crate::read::Error;
use crate::vm::{Host, Memory, Region};

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod emit;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod exec;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod x86;

/// Whether this build has the JIT.
pub const AVAILABLE: bool = cfg!(all(target_arch = "x86_64", target_os = "linux"));

/// Why there is no JIT here, for messages.
pub fn unavailable() -> String {
    format!(
        "fatpipe's BPF JIT exists only for x86-64 Linux (this build is for {}-{}); programs run in the interpreter here",
        std::env::consts::ARCH,
        std::env::consts::OS
    )
}

/// Statuses a run of compiled code ends with.
mod status {
    pub const OK: u64 = 0;
    pub const READ: u64 = 1;
    pub const WRITE: u64 = 2;
    pub const BUDGET: u64 = 3;
    pub const DEPTH: u64 = 4;
    pub const HOST_ERROR: u64 = 5;
    pub const PANIC: u64 = 6;
    pub const ATOMIC_OP: u64 = 7;
    pub const PAST_END: u64 = 8;
}

/// A region as compiled code sees it (32 bytes: `DESC_SHIFT`).
#[repr(C)]
struct Desc {
    base: *mut u8,
    len: u64,
    /// Per offset, the end of the writable range holding it (0: none), at most `len`;
    /// null: all of the region is writable.
    wtable: *const u32,
    _pad: u64,
}

const DESC_SHIFT: u8 = 5;
const _: () = assert!(std::mem::size_of::<Desc>() == 1 << DESC_SHIFT);

/// What a run passes to the compiled code (the offsets are `off`).
#[repr(C)]
struct Ctx<'a> {
    regions: *const Desc,
    nregions: u64,
    depth: u64,
    saved_rsp: u64,
    budget: u64,
    status: u64,
    fault_addr: u64,
    fault_size: u64,
    r0: u64,
    r1: u64,
    args: [u64; 5],
    host: *mut (dyn Host + 'a),
    mem: *mut Memory,
    error: Option<Error>,
    panic: Option<Box<dyn std::any::Any + Send>>,
}

/// Field offsets for the emitter.
#[allow(dead_code)]
mod off {
    use super::{Ctx, Desc};
    use std::mem::offset_of;
    pub const REGIONS: usize = offset_of!(Ctx, regions);
    pub const NREGIONS: usize = offset_of!(Ctx, nregions);
    pub const DEPTH: usize = offset_of!(Ctx, depth);
    pub const SAVED_RSP: usize = offset_of!(Ctx, saved_rsp);
    pub const BUDGET: usize = offset_of!(Ctx, budget);
    pub const STATUS: usize = offset_of!(Ctx, status);
    pub const FAULT_ADDR: usize = offset_of!(Ctx, fault_addr);
    pub const FAULT_SIZE: usize = offset_of!(Ctx, fault_size);
    pub const R0: usize = offset_of!(Ctx, r0);
    pub const R1: usize = offset_of!(Ctx, r1);
    pub const ARGS: usize = offset_of!(Ctx, args);
    pub const DESC_BASE: usize = offset_of!(Desc, base);
    pub const DESC_LEN: usize = offset_of!(Desc, len);
    pub const DESC_WTABLE: usize = offset_of!(Desc, wtable);
}

/// A compiled program: machine code in executable memory, shareable between machines
/// (it holds no addresses of any machine's memory).
pub struct Code {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    mem: exec::ExecMem,
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    _never: std::convert::Infallible,
}

impl std::fmt::Debug for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("jit::Code")
    }
}

/// Compiles `insns` (checked first, as [`crate::machine::Machine::add`] checks them).
pub fn compile(name: &str, insns: &[Insn]) -> Result<Code, Error> {
    crate::vm::check_program(name, insns)?;
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        let host: extern "C" fn(*mut Ctx<'static>, u64, u64) -> u64 = host_call;
        let bytes = emit::emit(insns, host as usize as u64);
        Ok(Code { mem: exec::ExecMem::new(&bytes)? })
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    Err(Error::new(unavailable()))
}

/// A machine's regions as compiled code sees them: built once, the base addresses
/// refreshed at each run.
pub struct Regions {
    descs: Vec<Desc>,
    _tables: Vec<Vec<u32>>,
}

// SAFETY: the pointers are into the owning machine's region bytes (refreshed at each run)
// and into `_tables`, which this value owns; a machine moves between threads whole, and
// nothing reads them through a shared reference (`run` takes `&mut`).
unsafe impl Send for Regions {}
unsafe impl Sync for Regions {}

impl Regions {
    pub fn new(regions: &[Region]) -> Regions {
        let mut tables = Vec::new();
        let descs = regions
            .iter()
            .map(|r| {
                let len = r.bytes.len();
                let wtable = match &r.writable {
                    None => std::ptr::null(),
                    Some(ranges) => {
                        let t: Vec<u32> = (0..len as u32)
                            .map(|o| {
                                let end = ranges.iter().filter(|&&(s, e)| s <= o && o < e).map(|&(_, e)| e).max();
                                end.unwrap_or(0).min(len as u32)
                            })
                            .collect();
                        tables.push(t);
                        tables.last().expect("pushed").as_ptr()
                    }
                };
                Desc { base: std::ptr::null_mut(), len: len as u64, wtable, _pad: 0 }
            })
            .collect();
        Regions { descs, _tables: tables }
    }
}

/// Runs compiled `code` on `mem` with r1 = `r1`; the interpreter's result and errors.
pub fn run(code: &Code, mem: &mut Memory, regions: &mut Regions, host: &mut dyn Host, r1: u64) -> Result<u64, Error> {
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        let _ = (mem, regions, host, r1);
        match code._never {}
    }
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        for (d, r) in regions.descs.iter_mut().zip(mem.regions_mut()) {
            d.base = r.bytes.as_mut_ptr();
        }
        let mut ctx = Ctx {
            regions: regions.descs.as_ptr(),
            nregions: regions.descs.len() as u64,
            depth: 0,
            saved_rsp: 0,
            budget: crate::vm::MAX_INSNS,
            status: status::OK,
            fault_addr: 0,
            fault_size: 0,
            r0: 0,
            r1,
            args: [0; 5],
            host: host as *mut (dyn Host + '_),
            mem: mem as *mut Memory,
            error: None,
            panic: None,
        };
        // SAFETY: the code was emitted by `emit` for this calling convention; it touches
        // memory only through the region table's checked bases and the context.
        let entry: extern "C" fn(*mut Ctx<'_>) = unsafe { std::mem::transmute(code.mem.ptr()) };
        entry(&mut ctx);
        use crate::vm::errors;
        match ctx.status {
            status::OK => Ok(ctx.r0),
            status::READ => Err(errors::fault(ctx.fault_addr, ctx.fault_size as usize, "a read")),
            status::WRITE => Err(errors::fault(ctx.fault_addr, ctx.fault_size as usize, "a write")),
            status::BUDGET => Err(errors::too_long()),
            status::DEPTH => Err(errors::too_deep()),
            status::ATOMIC_OP => Err(errors::atomic_op(ctx.fault_addr as i32)),
            status::PAST_END => Err(errors::past_end()),
            status::PANIC => std::panic::resume_unwind(ctx.panic.take().expect("a panic's payload")),
            _ => Err(ctx.error.take().expect("a host error")),
        }
    }
}

/// The compiled code's way into Rust: a helper (kind 0) or kfunc (kind 1) with the
/// arguments in `ctx.args`. An error or a panic is kept in the context and the code leaves
/// with its status (a panic must not unwind through machine code).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
extern "C" fn host_call(ctx: *mut Ctx<'_>, kind: u64, id: u64) -> u64 {
    // SAFETY: `run` passed its own context, alive for the whole run; nothing else uses it
    // while the host runs.
    let ctx = unsafe { &mut *ctx };
    let args = ctx.args;
    // SAFETY: the host and memory `run` borrowed mutably; the compiled code is suspended.
    let (host, mem) = unsafe { (&mut *ctx.host, &mut *ctx.mem) };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if kind == 0 {
            host.helper(id as u32 as i32, args, mem)
        } else {
            host.kfunc(id as u32, args, mem)
        }
    }));
    match result {
        Ok(Ok(r0)) => r0,
        Ok(Err(e)) => {
            ctx.error = Some(e);
            ctx.status = status::HOST_ERROR;
            0
        }
        Err(payload) => {
            ctx.panic = Some(payload);
            ctx.status = status::PANIC;
            0
        }
    }
}
