//! fatpipe-bpf: eBPF congestion-control objects, read and made ready to run.
//!
//! A congestion control written once in C against `struct tcp_congestion_ops` (as the Linux
//! kernel's BPF struct_ops takes it) and compiled by clang runs in two places: the kernel,
//! which fatpipe-emu loads it into, and fatpipe-core's simulator, which runs it in this
//! crate's interpreter. Both start from [`object::Object`]: the ELF file read
//! (`elf.rs`), its types (`btf.rs`), CO-RE relocations (`ext.rs`, `core.rs`) and instructions
//! (`insn.rs`). Programs run in the interpreter (`vm.rs`) or, on x86-64 Linux, compiled by
//! the JIT (`jit/`). No dependencies but libc, for the JIT's executable memory.

pub mod btf;
pub mod core;
pub mod elf;
pub mod ext;
pub mod insn;
pub mod jit;
pub mod machine;
pub mod object;
pub mod params;
pub mod read;
pub mod vm;

pub use object::Object;
pub use read::Error;
