//! Registering a BPF congestion control with the kernel through struct_ops, with the bpf(2)
//! system call alone (no libbpf, no bpftool): fatpipe-bpf reads the object and links its
//! programs; here they are relocated against the running kernel's BTF, loaded, gathered in
//! a `tcp_congestion_ops` struct_ops map under a name of our choosing, and registered
//! through a BPF link.
//!
//! The link is what makes a registration safe: the kernel unregisters the algorithm when
//! the last descriptor of its link closes, which happens when the `Registration` drops, on
//! an error, a panic, Ctrl-C, and also when the process is killed outright (SIGKILL closes
//! every descriptor). Nothing can outlive the process that registered it. (A struct_ops map
//! registered without a link, as bpftool 7.1 does, stays until someone unregisters it.)
//!
//! Sockets keep a reference to the algorithm they use, so unregistering while a connection
//! still runs it leaves that connection running; new sockets can no longer choose it.

use fatpipe_bpf::btf::{Btf, Kind};
use fatpipe_bpf::insn::{self, Insn};
use fatpipe_bpf::Object;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::OnceLock;

// bpf(2) commands, map and program types, flags (include/uapi/linux/bpf.h).
const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_BTF_LOAD: libc::c_long = 18;
const BPF_MAP_FREEZE: libc::c_long = 22;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_MAP_TYPE_ARRAY: u32 = 2;
const BPF_MAP_TYPE_STRUCT_OPS: u32 = 26;
const BPF_PROG_TYPE_STRUCT_OPS: u32 = 27;
const BPF_STRUCT_OPS: u32 = 44;
/// Map flags: programs may only read the map; the map is registered through a link.
const BPF_F_RDONLY_PROG: u32 = 1 << 7;
const BPF_F_LINK: u32 = 1 << 13;
/// Linux's TCP_CA_NAME_MAX: a name of at most 15 bytes and its NUL.
pub const TCP_CA_NAME_MAX: usize = 16;
/// The verifier's log on a failed load (it can be long: the last lines say why).
const LOG_BYTES: usize = 1 << 20;

/// The running kernel's BTF, read once per process (about 6 MB).
pub fn vmlinux() -> io::Result<&'static Btf> {
    static BTF: OnceLock<Result<Btf, String>> = OnceLock::new();
    BTF.get_or_init(|| {
        let path = "/sys/kernel/btf/vmlinux";
        let bytes = std::fs::read(path)
            .map_err(|e| format!("{path}: {e} (the kernel needs CONFIG_DEBUG_INFO_BTF for BPF congestion controls)"))?;
        Btf::parse(&bytes).map_err(|e| format!("{path}: {e}"))
    })
    .as_ref()
    .map_err(|e| io::Error::other(e.clone()))
}

fn bpf(cmd: libc::c_long, attr: &mut [u8]) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a bpf_attr-shaped buffer of the length given; every pointer inside
    // it points to memory that outlives the call.
    let ret = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), attr.len() as libc::c_uint) };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn bpf_fd(cmd: libc::c_long, attr: &mut [u8]) -> io::Result<OwnedFd> {
    let fd = bpf(cmd, attr)?;
    // SAFETY: these commands return a new descriptor (O_CLOEXEC) that we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// A zeroed `union bpf_attr` of the size this code knows, written field by field.
struct Attr([u8; 152]);

impl Attr {
    fn new() -> Attr {
        Attr([0; 152])
    }
    fn u32(&mut self, at: usize, v: u32) -> &mut Attr {
        self.0[at..at + 4].copy_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, at: usize, v: u64) -> &mut Attr {
        self.0[at..at + 8].copy_from_slice(&v.to_le_bytes());
        self
    }
    fn ptr<T>(&mut self, at: usize, p: *const T) -> &mut Attr {
        self.u64(at, p as usize as u64)
    }
    fn name(&mut self, at: usize, name: &str) -> &mut Attr {
        let n = name.len().min(15);
        self.0[at..at + n].copy_from_slice(&name.as_bytes()[..n]);
        self
    }
}

fn map_create(
    kind: u32,
    key: u32,
    value: u32,
    flags: u32,
    name: &str,
    extra: impl FnOnce(&mut Attr),
) -> io::Result<OwnedFd> {
    let mut a = Attr::new();
    a.u32(0, kind).u32(4, key).u32(8, value).u32(12, 1).u32(16, flags).name(28, name);
    extra(&mut a);
    bpf_fd(BPF_MAP_CREATE, &mut a.0)
}

fn map_update(map: &OwnedFd, key: u32, value: &[u8]) -> io::Result<()> {
    let mut a = Attr::new();
    a.u32(0, map.as_raw_fd() as u32).ptr(8, &key).ptr(16, value.as_ptr()).u64(24, 0);
    bpf(BPF_MAP_UPDATE_ELEM, &mut a.0).map(drop)
}

/// The smallest valid BTF object (one `int`): a struct_ops map must be created with some
/// BTF (kernel/bpf/syscall.c map_create), though it describes its value by vmlinux's types.
fn minimal_btf() -> io::Result<OwnedFd> {
    let strings = b"\0int\0";
    let mut types = Vec::new();
    for w in [1u32, 1 << 24, 4, 32] {
        types.extend_from_slice(&w.to_le_bytes());
    }
    let mut blob = Vec::new();
    blob.extend_from_slice(&0xeb9fu16.to_le_bytes());
    blob.extend_from_slice(&[1, 0]);
    for w in [24u32, 0, types.len() as u32, types.len() as u32, strings.len() as u32] {
        blob.extend_from_slice(&w.to_le_bytes());
    }
    blob.extend_from_slice(&types);
    blob.extend_from_slice(strings);
    let mut a = Attr::new();
    a.ptr(0, blob.as_ptr()).u32(16, blob.len() as u32);
    bpf_fd(BPF_BTF_LOAD, &mut a.0)
}

/// A congestion control registered in the kernel under `name`; dropping it unregisters it.
pub struct Registration {
    pub name: String,
    // Field order is drop order: the link first (unregisters), then the rest.
    _link: OwnedFd,
    _map: OwnedFd,
    _programs: Vec<OwnedFd>,
    _data: Vec<OwnedFd>,
}

/// Why a registration failed: the object itself (a scenario error: it does not fit this
/// kernel, or the verifier refused it) or the system.
#[derive(Debug)]
pub enum RegisterError {
    Object(String),
    System(String),
}

impl std::fmt::Display for RegisterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegisterError::Object(m) | RegisterError::System(m) => f.write_str(m),
        }
    }
}

fn object_err(m: impl Into<String>) -> RegisterError {
    RegisterError::Object(m.into())
}

fn system_err(what: &str) -> impl Fn(io::Error) -> RegisterError + '_ {
    move |e| RegisterError::System(format!("{what}: {e}"))
}

/// The last lines of a verifier log that say why a program was refused.
fn log_tail(log: &[u8]) -> String {
    let end = log.iter().position(|&c| c == 0).unwrap_or(log.len());
    let text = String::from_utf8_lossy(&log[..end]);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

/// Loads the `tcp_congestion_ops` of `object` (its data already holding the parameters)
/// into the kernel and registers it as `name` (at most 15 bytes, unique in the kernel).
pub fn register(mut object: Object, name: &str) -> Result<Registration, RegisterError> {
    if name.is_empty() || name.len() >= TCP_CA_NAME_MAX {
        return Err(object_err(format!("algorithm name {name:?} must have 1 to {} bytes", TCP_CA_NAME_MAX - 1)));
    }
    let kernel = vmlinux().map_err(|e| RegisterError::System(e.to_string()))?;
    let ops = object
        .struct_ops
        .iter()
        .find(|o| o.type_name == "tcp_congestion_ops")
        .cloned()
        .ok_or_else(|| object_err("the object has no SEC(\".struct_ops\") struct tcp_congestion_ops"))?;
    let missing = object.relocate(kernel).map_err(|e| object_err(e.to_string()))?;
    let ops_type = kernel
        .find("tcp_congestion_ops", |k| matches!(k, Kind::Struct { .. }))
        .ok_or_else(|| object_err("this kernel has no struct tcp_congestion_ops in its BTF"))?;
    let value_type =
        kernel.find("bpf_struct_ops_tcp_congestion_ops", |k| matches!(k, Kind::Struct { .. })).ok_or_else(|| {
            object_err(
                "this kernel has no BPF struct_ops for TCP congestion control (CONFIG_BPF_JIT, CONFIG_BPF_SYSCALL)",
            )
        })?;
    let members = kernel.members(ops_type).expect("a struct").to_vec();
    // Data sections become one-element array maps; the programs address inside them.
    let mut data_maps = Vec::new();
    for (i, d) in object.data.iter().enumerate() {
        let used = object.programs.iter().any(|p| p.data_refs.iter().any(|r| r.section == i));
        if !used || d.bytes.is_empty() {
            data_maps.push(None);
            continue;
        }
        let flags = if d.read_only { BPF_F_RDONLY_PROG } else { 0 };
        let map = map_create(BPF_MAP_TYPE_ARRAY, 4, d.bytes.len() as u32, flags, &format!("{:.15}", d.name), |_| {})
            .map_err(system_err(&format!("{} map", d.name)))?;
        map_update(&map, 0, &d.bytes).map_err(system_err(&format!("{} contents", d.name)))?;
        if d.read_only {
            let mut a = Attr::new();
            a.u32(0, map.as_raw_fd() as u32);
            bpf(BPF_MAP_FREEZE, &mut a.0).map_err(system_err(&format!("freezing {}", d.name)))?;
        }
        data_maps.push(Some(map));
    }
    let license =
        std::ffi::CString::new(object.license.clone()).map_err(|_| object_err("the license string holds a NUL"))?;
    let mut programs = Vec::new();
    // Program fd per member index of the kernel's tcp_congestion_ops.
    let mut slots: Vec<Option<i32>> = vec![None; members.len()];
    for (member, prog_index) in &ops.programs {
        let index = members
            .iter()
            .position(|m| kernel.str_at(m.name) == member)
            .ok_or_else(|| object_err(format!("this kernel's tcp_congestion_ops has no operation {member:?}")))?;
        let p = &mut object.programs[*prog_index];
        for r in &p.data_refs {
            let Some(map) = &data_maps[r.section] else { unreachable!("used sections have maps") };
            p.insns[r.insn].src = insn::PSEUDO_MAP_VALUE;
            p.insns[r.insn].imm = map.as_raw_fd();
            p.insns[r.insn + 1].imm = r.offset as i32;
        }
        for (at, kfunc) in &p.kfunc_calls {
            let id = kernel
                .find(kfunc, |k| matches!(k, Kind::Func { .. }))
                .ok_or_else(|| object_err(format!("{}: this kernel has no function {kfunc:?} to call", p.name)))?;
            p.insns[*at] = Insn::new(insn::JMP | insn::CALL, 0, insn::PSEUDO_KFUNC_CALL, 0, id as i32);
        }
        let code = insn::encode_all(&p.insns);
        let load = |log: &mut Vec<u8>| {
            let mut a = Attr::new();
            a.u32(0, BPF_PROG_TYPE_STRUCT_OPS)
                .u32(4, p.insns.len() as u32)
                .ptr(8, code.as_ptr())
                .ptr(16, license.as_ptr())
                .name(48, &p.name)
                .u32(68, index as u32)
                .u32(108, ops_type);
            if !log.is_empty() {
                a.u32(24, 1).u32(28, log.len() as u32).ptr(32, log.as_ptr());
            }
            bpf_fd(BPF_PROG_LOAD, &mut a.0)
        };
        let fd = match load(&mut Vec::new()) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => return Err(system_err("loading a BPF program")(e)),
            Err(e) => {
                let mut log = vec![0u8; LOG_BYTES];
                let _ = load(&mut log);
                let why = log_tail(&log);
                let hint = missing
                    .iter()
                    .filter(|(prog, _)| *prog == p.name)
                    .map(|(_, f)| f.as_str())
                    .collect::<Vec<_>>()
                    .join(", ");
                let hint = if hint.is_empty() { String::new() } else { format!(" (this kernel lacks {hint})") };
                return Err(object_err(format!("the kernel refused program {} ({member}): {e}{hint}: {why}", p.name)));
            }
        };
        slots[index] = Some(fd.as_raw_fd());
        programs.push(fd);
    }
    let value_size = kernel.size_of(value_type).map_err(|e| object_err(e.to_string()))? as usize;
    let data_off = kernel
        .members(value_type)
        .and_then(|ms| ms.iter().find(|m| kernel.str_at(m.name) == "data"))
        .map(|m| m.bit_offset as usize / 8)
        .ok_or_else(|| object_err("bpf_struct_ops_tcp_congestion_ops has no data member"))?;
    let mut value = vec![0u8; value_size];
    for (i, m) in members.iter().enumerate() {
        let at = data_off + m.bit_offset as usize / 8;
        match kernel.str_at(m.name) {
            "name" => value[at..at + name.len()].copy_from_slice(name.as_bytes()),
            "flags" => value[at..at + 4].copy_from_slice(&ops.flags.to_le_bytes()),
            _ => {
                if let Some(fd) = slots[i] {
                    value[at..at + 8].copy_from_slice(&(fd as u64).to_le_bytes());
                }
            }
        }
    }
    let btf = minimal_btf().map_err(system_err("loading BTF"))?;
    let map = map_create(BPF_MAP_TYPE_STRUCT_OPS, 4, value_size as u32, BPF_F_LINK, name, |a| {
        a.u32(48, btf.as_raw_fd() as u32).u32(60, value_type);
    })
    .map_err(system_err("creating the struct_ops map"))?;
    map_update(&map, 0, &value).map_err(|e| match e.raw_os_error() {
        Some(libc::EEXIST) => object_err(format!("a congestion control named {name:?} is already registered")),
        Some(libc::EINVAL) => object_err(format!("the kernel refused the operations of {name:?} (is ssthresh, undo_cwnd and cong_avoid or cong_control each given?): {e}")),
        _ => RegisterError::System(format!("filling the struct_ops map: {e}")),
    })?;
    let mut a = Attr::new();
    a.u32(0, map.as_raw_fd() as u32).u32(8, BPF_STRUCT_OPS);
    let link = bpf_fd(BPF_LINK_CREATE, &mut a.0).map_err(|e| match e.raw_os_error() {
        Some(libc::EEXIST) => object_err(format!("a congestion control named {name:?} is already registered")),
        _ => RegisterError::System(format!("registering {name:?}: {e}")),
    })?;
    drop(btf);
    Ok(Registration {
        name: name.to_string(),
        _link: link,
        _map: map,
        _programs: programs,
        _data: data_maps.into_iter().flatten().collect(),
    })
}
