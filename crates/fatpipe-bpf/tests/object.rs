//! Reading a real object (bpf/reno.bpf.c compiled by clang) and relocating it against a view
//! whose layout differs from the program's declarations. Without clang the tests say so and
//! pass without running (CI installs clang).

use fatpipe_bpf::btf::{Builder, Kind};
use fatpipe_bpf::insn::{self, Insn};
use fatpipe_bpf::Object;
use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// bpf/<file> compiled, or None (and a line saying why) without clang.
fn compiled(file: &str) -> Option<Vec<u8>> {
    // Tests run in parallel: each compiles into a file of its own.
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = std::env::temp_dir().join(format!("fatpipe-bpf-test-{}-{n}-{file}.o", std::process::id()));
    let clang = std::env::var("CLANG").unwrap_or("clang".into());
    let status = Command::new(&clang)
        .args(["-O2", "-g", "-target", "bpf", "-c"])
        .arg(repo().join("bpf").join(file))
        .arg("-o")
        .arg(&out)
        .status();
    match status {
        Err(_) => {
            eprintln!("skipped: {clang} is not installed");
            None
        }
        Ok(s) => {
            assert!(s.success(), "{file} does not compile");
            let bytes = std::fs::read(&out).unwrap();
            let _ = std::fs::remove_file(&out);
            Some(bytes)
        }
    }
}

#[test]
fn reads_programs_operations_parameters_and_kernel_calls() {
    let Some(bytes) = compiled("reno.bpf.c") else { return };
    let o = Object::parse(&bytes).unwrap();
    assert_eq!(o.license, "Dual MIT/GPL");
    let ops = &o.struct_ops[0];
    assert_eq!(ops.type_name, "tcp_congestion_ops");
    assert_eq!(ops.ops_name.as_deref(), Some("fp_reno"));
    let members: Vec<(&str, &str)> =
        ops.programs.iter().map(|(m, i)| (m.as_str(), o.programs[*i].name.as_str())).collect();
    assert_eq!(
        members,
        [("ssthresh", "fp_reno_ssthresh"), ("cong_avoid", "fp_reno_cong_avoid"), ("undo_cwnd", "fp_reno_undo_cwnd")]
    );
    let (_, b) = o.var("b_q20").unwrap();
    assert_eq!(b.size, 8);
    let (_, bc) = o.var("byte_counting").unwrap();
    assert_eq!(bc.size, 4);
    let ca = o.program("fp_reno_cong_avoid").unwrap();
    let kfuncs: Vec<&str> = ca.kfunc_calls.iter().map(|(_, n)| n.as_str()).collect();
    assert!(kfuncs.contains(&"tcp_slow_start") && kfuncs.contains(&"tcp_cong_avoid_ai"), "{kfuncs:?}");
    // Parameters are read-only data the programs address.
    assert!(ca.data_refs.iter().all(|r| o.data[r.section].read_only));
    assert!(!ca.core_relos.is_empty(), "accesses to tcp_sock are relocatable");
}

/// A view of tcp_sock with the fields at other offsets than the program's declaration.
fn view(with_snd_cwnd: bool) -> fatpipe_bpf::btf::Btf {
    let mut b = Builder::new();
    let u8t = b.int("u8", 1, false);
    let u32t = b.int("u32", 4, false);
    let u64t = b.int("u64", 8, false);
    let priv_arr = b.add("", Kind::Array { elem: u64t, len: 13 });
    let icsk = b.structure(
        "inet_connection_sock",
        128,
        &[("icsk_ca_state", u8t, 8 * 8 + 3, 5), ("icsk_ca_priv", priv_arr, 16 * 8, 0)],
    );
    let mut members = vec![
        ("inet_conn", icsk, 0, 0),
        ("snd_ssthresh", u32t, 300 * 8, 0),
        ("snd_cwnd_cnt", u32t, 304 * 8, 0),
        ("prior_cwnd", u32t, 308 * 8, 0),
        ("max_packets_out", u32t, 312 * 8, 0),
        ("is_cwnd_limited", u8t, 316 * 8 + 2, 1),
    ];
    if with_snd_cwnd {
        members.push(("snd_cwnd", u32t, 200 * 8, 0));
    }
    b.structure("tcp_sock", 400, &members);
    b.build()
}

#[test]
fn accesses_move_to_the_targets_offsets_by_name() {
    let Some(bytes) = compiled("reno.bpf.c") else { return };
    let mut o = Object::parse(&bytes).unwrap();
    let missing = o.relocate(&view(true)).unwrap();
    assert!(missing.is_empty(), "{missing:?}");
    // fp_reno_ssthresh reads snd_cwnd: a 4-byte load, now at 200.
    let p = o.program("fp_reno_ssthresh").unwrap();
    let loads: Vec<&Insn> = p.insns.iter().filter(|i| i.class() == insn::LDX && i.mem_size() == Some(4)).collect();
    assert!(loads.iter().any(|i| i.off == 200), "{loads:?}");
    // The bitfield is read from the unit that holds bit 2 of byte 316.
    let ca = o.program("fp_reno_cong_avoid").unwrap();
    assert!(ca.insns.iter().any(|i| i.class() == insn::LDX && i.off == 316), "is_cwnd_limited's byte");
}

#[test]
fn a_field_the_target_lacks_is_named_and_its_access_poisoned() {
    let Some(bytes) = compiled("reno.bpf.c") else { return };
    let mut o = Object::parse(&bytes).unwrap();
    let missing = o.relocate(&view(false)).unwrap();
    assert!(missing.iter().any(|(p, f)| p == "fp_reno_ssthresh" && f == "tcp_sock.snd_cwnd"), "{missing:?}");
    let p = o.program("fp_reno_ssthresh").unwrap();
    assert!(p.insns.iter().any(|i| i.is_call() && i.imm == fatpipe_bpf::core::POISON_HELPER));
}

#[test]
fn parameters_are_written_into_their_variables() {
    let Some(bytes) = compiled("reno.bpf.c") else { return };
    let mut o = Object::parse(&bytes).unwrap();
    o.set_var("b_q20", &(1u64 << 18).to_le_bytes()).unwrap();
    let (sec, v) = o.var("b_q20").map(|(s, v)| (s, v.clone())).unwrap();
    let at = v.offset as usize;
    assert_eq!(&o.data[sec].bytes[at..at + 8], &(1u64 << 18).to_le_bytes());
    assert!(o.set_var("byte_counting", &[0; 8]).unwrap_err().to_string().contains("do not fit"));
    assert!(o.set_var("nothing", &[0]).is_err());
}

#[test]
fn what_is_not_an_object_is_one_line() {
    assert!(Object::parse(b"not an object").is_err());
    let mut elf = vec![0u8; 64];
    elf[..4].copy_from_slice(b"\x7fELF");
    elf[4] = 2;
    elf[5] = 1;
    elf[18] = 62; // x86-64
    let e = Object::parse(&elf).err().unwrap().to_string();
    assert!(e.contains("not an eBPF object"), "{e}");
}
