//! The machine: the programs of one object over one memory (`vm.rs`), each run by the
//! interpreter or, when added with [`Machine::add_compiled`], as machine code from `jit/`
//! (x86-64 Linux). Kept apart from both so that the interpreter and the JIT share the
//! memory model without depending on each other.

use crate::insn::Insn;
use crate::jit;
use crate::read::Error;
use crate::vm::{address, check_program, execute, Host, Memory, Region, CTX, MAX_FRAMES, STACK_FRAME};
use std::sync::Arc;

/// A program ready to run: instructions with data addresses and kernel function indices
/// filled in.
pub struct Program {
    pub name: String,
    insns: Vec<Insn>,
    code: Option<Arc<jit::Code>>,
}

pub struct Machine {
    pub memory: Memory,
    programs: Vec<Program>,
    /// The regions as compiled code sees them, once a compiled program is added.
    jit_regions: Option<jit::Regions>,
}

impl Machine {
    /// A machine with the stack and ctx regions; `regions` follow from [`FIRST_FREE`] in
    /// order.
    pub fn new(regions: Vec<Region>) -> Machine {
        let mut all = vec![
            Region { bytes: Vec::new(), writable: Some(Vec::new()) },
            Region { bytes: vec![0; STACK_FRAME * MAX_FRAMES], writable: None },
            Region { bytes: vec![0; 6 * 8], writable: Some(Vec::new()) },
        ];
        all.extend(regions);
        Machine { memory: Memory::new(all), programs: Vec::new(), jit_regions: None }
    }

    /// Adds a program; returns its index for [`Machine::run`]. Every instruction is checked
    /// for what this machine can execute.
    pub fn add(&mut self, name: &str, insns: Vec<Insn>) -> Result<usize, Error> {
        check_program(name, &insns)?;
        self.programs.push(Program { name: name.to_string(), insns, code: None });
        Ok(self.programs.len() - 1)
    }

    /// Adds a program with its machine code (`jit::compile` of the same instructions); it
    /// runs compiled.
    pub fn add_compiled(&mut self, name: &str, insns: Vec<Insn>, code: Arc<jit::Code>) -> Result<usize, Error> {
        check_program(name, &insns)?;
        if self.jit_regions.is_none() {
            self.jit_regions = Some(jit::Regions::new(self.memory.regions()));
        }
        self.programs.push(Program { name: name.to_string(), insns, code: Some(code) });
        Ok(self.programs.len() - 1)
    }

    /// Runs program `index` with `args` in r1.. (the first also stored in ctx as the
    /// kernel passes struct_ops arguments); returns r0.
    pub fn run(&mut self, index: usize, args: &[u64], host: &mut dyn Host) -> Result<u64, Error> {
        let ctx = address(CTX, 0);
        for (i, a) in args.iter().enumerate() {
            self.memory.region_mut(CTX)[i * 8..i * 8 + 8].copy_from_slice(&a.to_le_bytes());
        }
        let program = &self.programs[index];
        match (&program.code, &mut self.jit_regions) {
            (Some(code), Some(regions)) => jit::run(code, &mut self.memory, regions, host, ctx),
            _ => execute(&program.insns, &mut self.memory, host, ctx),
        }
        .map_err(|e| Error::new(format!("{}: {e}", program.name)))
    }
}
