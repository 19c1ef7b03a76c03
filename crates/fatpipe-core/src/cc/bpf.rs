//! A congestion control written as a BPF struct_ops program (`struct tcp_congestion_ops`, as
//! the Linux kernel takes it), run in the simulator by fatpipe-bpf's interpreter, or its JIT
//! with `jit = true` (x86-64 Linux): the same object `fatpipe emulate` registers with the
//! kernel. A flow names it `cc = { bpf = "algo.bpf.o" }` (docs/emulation.md, "Writing a BPF
//! congestion control").
//!
//! The program sees the socket through `view.rs`: the core's `CcState` written into the
//! fields of `struct tcp_sock` it reads, relocated by BTF (CO-RE) as the kernel relocates it
//! against vmlinux. The struct_ops hooks map onto this trait: `init`, `ssthresh`,
//! `cong_avoid`, `set_state`, `cwnd_event`, `pkts_acked`, `undo_cwnd`, and `in_ack_event`
//! (on duplicate ACKs and after `pkts_acked`, the kernel's order). The kernel functions a
//! program may call (`tcp_slow_start`, `tcp_cong_avoid_ai`, `tcp_reno_cong_avoid`,
//! `tcp_reno_ssthresh`, `tcp_reno_undo_cwnd`) are the core's own code, so a program that
//! calls them grows the window exactly as the built-in algorithms do.
//!
//! Loading refuses, in one line naming it, what the view or the interpreter does not
//! provide: a field, a kernel function, a helper, a hook (`cong_control`). Cost per call: the
//! view's fields written and three read back, and the program's instructions; nothing is
//! allocated after the flow is built.

pub mod view;

use super::{cong_avoid_ai, slow_start, slow_start_first, AckSample, CaState, CcState, CongestionControl, CwndEvent};
use crate::time::{Time, PS_PER_MS, PS_PER_US};
use fatpipe_bpf::insn::{self, Insn};
use fatpipe_bpf::machine::Machine;
use fatpipe_bpf::vm::{self, Host, Memory, Region};
use fatpipe_bpf::{jit, Error, Object};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::{Arc, OnceLock};

/// The kernel functions a program may call, by the index the interpreter passes back.
pub const KFUNCS: [&str; 5] =
    ["tcp_slow_start", "tcp_cong_avoid_ai", "tcp_reno_cong_avoid", "tcp_reno_ssthresh", "tcp_reno_undo_cwnd"];
/// Helpers the interpreter provides: bpf_ktime_get_ns, bpf_trace_printk (does nothing),
/// bpf_jiffies64.
const HELPER_KTIME_GET_NS: i32 = 5;
const HELPER_TRACE_PRINTK: i32 = 6;
const HELPER_JIFFIES64: i32 = 118;
/// `in_ack_event` flags (Linux enum tcp_ca_ack_event_flags).
const CA_ACK_SLOWPATH: u64 = 1;

/// Regions of the interpreter's memory after the stack and ctx.
const VIEW: u32 = vm::FIRST_FREE;
const SAMPLE: u32 = vm::FIRST_FREE + 1;
const FIRST_DATA: u32 = vm::FIRST_FREE + 2;

/// The operations of `struct tcp_congestion_ops` this file maps, in the trait's terms.
const OPS: [&str; 8] =
    ["init", "ssthresh", "cong_avoid", "set_state", "cwnd_event", "in_ack_event", "pkts_acked", "undo_cwnd"];
/// Operations that say nothing to a simulation of the window (TSO segments, send buffer
/// growth, the socket's end): run in the kernel, not here.
const IGNORED_OPS: [&str; 3] = ["min_tso_segs", "sndbuf_expand", "release"];

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BpfConfig {
    /// Path of the compiled object (clang -O2 -g -target bpf).
    pub object: String,
    /// Values of the program's parameters, its `const volatile` globals, by name
    /// (`fatpipe_bpf::params`: `x` fills `x`, `x_q20` in 2^-20 units, or for `x_ps`, `x_us`).
    pub parameters: Map<String, Value>,
    /// Ticks per second of the jiffies the program reads (bpf_jiffies64, lsndtime); a
    /// program's `kernel_hz` variable, if it has one, is set to it.
    pub kernel_hz: u32,
    /// Run the program as x86-64 machine code (fatpipe_bpf::jit) instead of interpreting it:
    /// the same results (crates/fatpipe-bpf/tests/jit.rs, tests/test_bpf_cc.py), less time.
    pub jit: bool,
    /// The file the scenario named, when `object` was compiled from it (for messages).
    pub source: Option<String>,
    /// The loaded program, shared by every flow that runs it (filled by `validate`).
    #[serde(skip)]
    #[schemars(skip)]
    loaded: Arc<OnceLock<Result<Arc<Prototype>, String>>>,
}

/// A program relocated against the view, its parameters written: what every flow's
/// interpreter starts from.
#[derive(Debug)]
pub struct Prototype {
    programs: Vec<(String, Vec<Insn>)>,
    /// The programs compiled, in the same order, when the flow asks for the JIT (shared by
    /// every flow: the code holds no flow's addresses).
    compiled: Vec<Arc<jit::Code>>,
    /// Program index per operation of `OPS`.
    ops: [Option<usize>; OPS.len()],
    data: Vec<(Vec<u8>, bool)>,
    /// The struct_ops name the object gives itself.
    pub name: String,
}

impl BpfConfig {
    /// Loads the object (once: later calls and flows share it); the error is one line.
    pub fn validate(&self) -> Result<(), String> {
        self.prototype().map(drop)
    }

    fn prototype(&self) -> Result<Arc<Prototype>, String> {
        self.loaded.get_or_init(|| load(self).map(Arc::new)).clone()
    }
}

fn load(cfg: &BpfConfig) -> Result<Prototype, String> {
    if cfg.jit && !jit::AVAILABLE {
        return Err(format!("jit = true: {}; allowed here: false", jit::unavailable()));
    }
    let bytes = std::fs::read(&cfg.object).map_err(|e| format!("object: {}: {e}", cfg.object))?;
    // Messages name the file the user wrote (a .c compiled into `object`).
    let path = cfg.source.as_ref().unwrap_or(&cfg.object);
    let mut object = Object::parse(&bytes).map_err(|e| format!("object: {path}: {e}"))?;
    if object.var("kernel_hz").is_some() {
        fatpipe_bpf::params::write_int(&mut object, "kernel_hz", cfg.kernel_hz as u64)
            .map_err(|e| format!("object: {path}: {e}"))?;
    }
    fatpipe_bpf::params::fill(&mut object, &cfg.parameters, &["kernel_hz"], "the program")
        .map_err(|e| format!("parameters.{e}"))?;
    let missing = object.relocate(&view::btf()).map_err(|e| format!("object: {path}: {e}"))?;
    if let Some((program, field)) = missing.first() {
        return Err(format!(
            "object: {path}: {program} reads {field}, which fatpipe's view of the socket does not provide (it provides {})",
            view::provided()
        ));
    }
    let ops = object
        .struct_ops
        .iter()
        .find(|o| o.type_name == "tcp_congestion_ops")
        .ok_or_else(|| format!("object: {path}: no SEC(\".struct_ops\") struct tcp_congestion_ops"))?;
    let mut slots = [None; OPS.len()];
    for (member, program) in &ops.programs {
        match OPS.iter().position(|o| o == member) {
            Some(k) => slots[k] = Some(*program),
            None if IGNORED_OPS.contains(&member.as_str()) => {}
            None => {
                return Err(format!(
                    "object: {path}: operation {member} is not supported by fatpipe's simulator (it runs {})",
                    OPS.join(", ")
                ))
            }
        }
    }
    for required in ["ssthresh", "cong_avoid", "undo_cwnd"] {
        if slots[OPS.iter().position(|o| *o == required).expect("listed")].is_none() {
            return Err(format!(
                "object: {path}: {} has no {required} (the kernel requires ssthresh, cong_avoid and undo_cwnd)",
                ops.var
            ));
        }
    }
    let mut programs = Vec::new();
    let mut index_of = vec![None; object.programs.len()];
    for (k, slot) in slots.iter_mut().enumerate() {
        let Some(p) = *slot else { continue };
        if index_of[p].is_none() {
            index_of[p] = Some(programs.len());
            programs.push(
                resolve(&object, p)
                    .map_err(|e| format!("object: {path}: {} ({}): {e}", object.programs[p].name, OPS[k]))?,
            );
        }
        *slot = index_of[p];
    }
    let compiled = if cfg.jit {
        programs
            .iter()
            .map(|(name, insns)| jit::compile(name, insns).map(Arc::new))
            .collect::<Result<_, _>>()
            .map_err(|e| format!("object: {path}: {e}"))?
    } else {
        Vec::new()
    };
    Ok(Prototype {
        programs,
        compiled,
        ops: slots,
        data: object.data.iter().map(|d| (d.bytes.clone(), d.read_only)).collect(),
        name: ops.ops_name.clone().unwrap_or_default(),
    })
}

/// Program `p` with its data addresses and kernel functions resolved for the interpreter;
/// refuses helpers it does not provide.
fn resolve(object: &Object, p: usize) -> Result<(String, Vec<Insn>), String> {
    let prog = &object.programs[p];
    let mut insns = prog.insns.clone();
    for r in &prog.data_refs {
        let addr = vm::address(FIRST_DATA + r.section as u32, r.offset);
        insns[r.insn].src = 0;
        insns[r.insn].imm = addr as u32 as i32;
        insns[r.insn + 1].imm = (addr >> 32) as i32;
    }
    for (at, name) in &prog.kfunc_calls {
        let k = KFUNCS.iter().position(|k| k == name).ok_or_else(|| {
            format!("calls kernel function {name}, which fatpipe does not provide (it provides {})", KFUNCS.join(", "))
        })?;
        insns[*at] = Insn::new(insn::JMP | insn::CALL, 0, insn::PSEUDO_KFUNC_CALL, 0, k as i32);
    }
    for i in &insns {
        if i.is_call() && i.src == 0 && ![HELPER_KTIME_GET_NS, HELPER_TRACE_PRINTK, HELPER_JIFFIES64].contains(&i.imm) {
            return Err(format!(
                "calls BPF helper {}, which fatpipe's interpreter does not provide (it provides bpf_ktime_get_ns, bpf_trace_printk, bpf_jiffies64)",
                i.imm
            ));
        }
    }
    vm::check_program(&prog.name, &insns).map_err(|e| e.to_string())?;
    Ok((prog.name.clone(), insns))
}

/// Builds the flow's algorithm. `validate` has loaded the program; a program that fails
/// here fails every call instead (the scenario's checks refuse it first).
pub fn build(cfg: &BpfConfig) -> Box<dyn CongestionControl> {
    let proto = cfg.prototype().expect("validated before the simulation is built");
    let mut regions = vec![
        Region { bytes: vec![0; view::TCP_SOCK_BYTES], writable: Some(view::WRITABLE.to_vec()) },
        Region { bytes: vec![0; view::ACK_SAMPLE_BYTES], writable: Some(Vec::new()) },
    ];
    for (bytes, read_only) in &proto.data {
        regions.push(Region { bytes: bytes.clone(), writable: if *read_only { Some(Vec::new()) } else { None } });
    }
    let mut machine = Machine::new(regions);
    for (k, (name, insns)) in proto.programs.iter().enumerate() {
        match proto.compiled.get(k) {
            Some(code) => machine.add_compiled(name, insns.clone(), code.clone()),
            None => machine.add(name, insns.clone()),
        }
        .expect("checked when loaded");
    }
    Box::new(BpfCc {
        name: proto.name.clone(),
        machine,
        ops: proto.ops,
        ca_state: CaState::Open,
        prior_cwnd: 0,
        hz: cfg.kernel_hz as u64,
        dupack_at: None,
    })
}

/// A program's fault while the simulation runs: what `BpfCc` unwinds with.
#[derive(Debug)]
pub struct BpfFault(pub String);

pub struct BpfCc {
    /// The struct_ops name the object gives itself, for messages.
    name: String,
    machine: Machine,
    ops: [Option<usize>; OPS.len()],
    /// The loss-recovery state as the program last heard of it (icsk_ca_state).
    ca_state: CaState,
    /// cwnd before the last reduction (tcp_sock.prior_cwnd), as undo_cwnd last gave it.
    prior_cwnd: u32,
    hz: u64,
    /// When the last duplicate ACK was reported to in_ack_event: the same ACK's pkts_acked
    /// does not report it again.
    dupack_at: Option<Time>,
}

/// The interpreter's view of the core while a program runs: the kernel functions and helpers.
struct Kernel<'a> {
    s: &'a mut CcState,
    hz: u64,
}

impl Kernel<'_> {
    /// The window fields as the program has left them so far.
    fn pull(&mut self, mem: &Memory) {
        view::read_back(mem.region(VIEW), self.s);
    }

    fn push(&self, mem: &mut Memory) {
        mem.write_u32(VIEW, view::SND_CWND, self.s.cwnd);
        mem.write_u32(VIEW, view::SND_CWND_CNT, self.s.cwnd_cnt);
        mem.write_u32(VIEW, view::SND_SSTHRESH, self.s.ssthresh);
    }
}

impl Host for Kernel<'_> {
    fn helper(&mut self, id: i32, args: [u64; 5], mem: &mut Memory) -> Result<u64, Error> {
        Ok(match id {
            HELPER_KTIME_GET_NS => self.s.now / 1000,
            HELPER_JIFFIES64 => view::jiffies(self.s.now, self.hz),
            HELPER_TRACE_PRINTK if trace_enabled() => {
                let line = trace_line(mem, args)?;
                eprintln!("{:.6} {line}", self.s.now as f64 / 1e12);
                0
            }
            _ => 0,
        })
    }

    fn kfunc(&mut self, index: u32, args: [u64; 5], mem: &mut Memory) -> Result<u64, Error> {
        self.pull(mem);
        let s = &mut *self.s;
        let ret = match index {
            // tcp_slow_start(tp, acked): the core's, with Limited Slow Start if the flow has it.
            0 => slow_start(s, args[1] as u32) as u64,
            // tcp_cong_avoid_ai(tp, w, acked)
            1 => {
                cong_avoid_ai(s, args[1] as u32, args[2] as u32);
                0
            }
            // tcp_reno_cong_avoid(sk, ack, acked)
            2 => {
                if let Some(left) = slow_start_first(s, args[2] as u32) {
                    cong_avoid_ai(s, s.cwnd, left);
                }
                0
            }
            // tcp_reno_ssthresh(sk)
            3 => (s.cwnd >> 1).max(2) as u64,
            // tcp_reno_undo_cwnd(sk)
            _ => s.cwnd.max(mem.read_u32(VIEW, view::PRIOR_CWND)) as u64,
        };
        self.push(mem);
        Ok(ret)
    }
}

/// bpf_trace_printk's lines go to stderr, with the simulated time, when FATPIPE_BPF_TRACE
/// is set (in the kernel they go to /sys/kernel/tracing/trace_pipe): the same program traced
/// in both.
fn trace_enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("FATPIPE_BPF_TRACE").is_some())
}

/// bpf_trace_printk(fmt, fmt_size, a, b, c): the format with %d, %u, %x (and their l, ll
/// forms) filled in from the three arguments.
fn trace_line(mem: &Memory, args: [u64; 5]) -> Result<String, Error> {
    let len = (args[1] as usize).min(256);
    let mut fmt = Vec::with_capacity(len);
    for i in 0..len as u64 {
        let c = mem.load(args[0] + i, 1)? as u8;
        if c == 0 {
            break;
        }
        fmt.push(c);
    }
    let fmt = String::from_utf8_lossy(&fmt);
    let mut out = String::new();
    let mut values = args[2..5].iter();
    let mut chars = fmt.trim_end_matches('\n').chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut long = 0;
        while chars.peek() == Some(&'l') {
            chars.next();
            long += 1;
        }
        let v = values.next().copied().unwrap_or(0);
        match chars.next() {
            Some('d') | Some('i') => {
                out.push_str(&if long > 0 { (v as i64).to_string() } else { (v as i32).to_string() })
            }
            Some('u') => out.push_str(&if long > 0 { v.to_string() } else { (v as u32).to_string() }),
            Some('x') => out.push_str(&format!("{v:x}")),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    Ok(out)
}

impl BpfCc {
    /// Runs operation `op` (an index of OPS) with the socket and `args`; returns r0.
    fn call(&mut self, op: usize, s: &mut CcState, args: &[u64]) -> Option<u64> {
        let p = self.ops[op]?;
        view::fill(self.machine.memory.region_mut(VIEW), s, self.ca_state, self.prior_cwnd, self.hz);
        let mut all = [vm::address(VIEW, 0); 4];
        all[1..1 + args.len()].copy_from_slice(args);
        let mut host = Kernel { s, hz: self.hz };
        let r0 = match self.machine.run(p, &all[..1 + args.len()], &mut host) {
            Ok(r0) => r0,
            // The program broke a rule the kernel's verifier enforces: nothing sensible can
            // follow, and going on would give results no kernel could. The run ends with
            // the fault (`BpfFault`: unwound without a panic message; the binding catches
            // it and says it in one line).
            Err(e) => std::panic::resume_unwind(Box::new(BpfFault(format!(
                "BPF congestion control {}: {e} (the kernel's verifier refuses such a program)",
                self.name
            )))),
        };
        view::read_back(self.machine.memory.region(VIEW), s);
        Some(r0)
    }

    fn write_sample(&mut self, s: &CcState, ack: &AckSample) {
        let m = &mut self.machine.memory;
        m.write_u32(SAMPLE, view::ACK_PKTS_ACKED, ack.acked_segments);
        m.write_u32(
            SAMPLE,
            view::ACK_RTT_US,
            ack.rtt.map_or(-1, |r| (r / PS_PER_US).min(i32::MAX as u64) as i32) as u32,
        );
        m.write_u32(SAMPLE, view::ACK_IN_FLIGHT, s.in_flight_segments.saturating_mul(s.mss_bytes));
        // tp->rx_opt keeps the last ACK's timestamps, in the 1000 Hz clock's ticks (TCP_TS_HZ).
        if let Some((ts_val, ts_ecr)) = ack.timestamps {
            m.write_u32(VIEW, view::RCV_TSVAL, (ts_val / PS_PER_MS) as u32);
            m.write_u32(VIEW, view::RCV_TSECR, (ts_ecr / PS_PER_MS) as u32);
        }
    }
}

const INIT: usize = 0;
const SSTHRESH: usize = 1;
const CONG_AVOID: usize = 2;
const SET_STATE: usize = 3;
const CWND_EVENT: usize = 4;
const IN_ACK_EVENT: usize = 5;
const PKTS_ACKED: usize = 6;
const UNDO_CWND: usize = 7;

/// Linux's numbers of the events (enum tcp_ca_event).
fn event_number(ev: CwndEvent) -> u64 {
    match ev {
        CwndEvent::TxStart => 0,
        CwndEvent::CwndRestart => 1,
        CwndEvent::CompleteCwr => 2,
        CwndEvent::Loss => 3,
        CwndEvent::EcnNoCe => 4,
        CwndEvent::EcnIsCe => 5,
    }
}

impl CongestionControl for BpfCc {
    fn name(&self) -> &'static str {
        "bpf"
    }

    fn init(&mut self, s: &mut CcState) {
        self.call(INIT, s, &[]);
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        // The trait lends the state read-only here; the kernel's ssthresh may not write the
        // window either (only its return value counts).
        let mut copy = s.clone();
        let r0 = self.call(SSTHRESH, &mut copy, &[]).expect("required at load");
        // Linux keeps cwnd at the reduction's start (tcp_init_cwnd_reduction: prior_cwnd).
        self.prior_cwnd = s.cwnd;
        r0 as u32
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        self.call(CONG_AVOID, s, &[s.snd_una as u32 as u64, ack.delivered_segments as u64]);
    }

    fn set_state(&mut self, s: &mut CcState, new: CaState) {
        self.call(SET_STATE, s, &[view::ca_state_number(new) as u64]);
        self.ca_state = new;
    }

    fn cwnd_event(&mut self, s: &mut CcState, ev: CwndEvent) {
        self.call(CWND_EVENT, s, &[event_number(ev)]);
    }

    fn pkts_acked(&mut self, s: &mut CcState, ack: &AckSample) {
        self.write_sample(s, ack);
        self.call(PKTS_ACKED, s, &[vm::address(SAMPLE, 0)]);
        // The kernel's in_ack_event follows pkts_acked on every ACK; a duplicate ACK was
        // reported already (`duplicate_ack`).
        if self.dupack_at != Some(s.now) {
            self.call(IN_ACK_EVENT, s, &[0]);
        }
    }

    fn undo_cwnd(&mut self, s: &CcState, prior_cwnd: u32) -> u32 {
        self.prior_cwnd = prior_cwnd;
        let mut copy = s.clone();
        self.call(UNDO_CWND, &mut copy, &[]).expect("required at load") as u32
    }

    fn duplicate_ack(&mut self, s: &CcState) {
        if self.ops[IN_ACK_EVENT].is_none() {
            return;
        }
        self.dupack_at = Some(s.now);
        let mut copy = s.clone();
        self.call(IN_ACK_EVENT, &mut copy, &[CA_ACK_SLOWPATH]);
    }
}
