/* SPDX-License-Identifier: MIT OR GPL-2.0 */
/*
 * fatpipe's congestion controls as BPF struct_ops programs: what every program shares.
 *
 * A program here is compiled once (clang -O2 -g -target bpf) and runs in two places: the
 * Linux kernel, which `fatpipe emulate` registers it with through BPF struct_ops, and
 * fatpipe's simulator, which runs the same object in its eBPF interpreter with a view of
 * the socket. So this header declares only the fields of the kernel's structs that the
 * programs read or write, marked preserve_access_index: the loader moves every access to
 * where the running kernel (or the simulator's view) keeps the field, by name (CO-RE). It
 * includes no kernel or libbpf header: the declarations below are written from the kernel's
 * BTF (bpftool btf dump) and Documentation/bpf.
 *
 * Parameters are `const volatile` globals (FP_PARAM): they live in .rodata, which the loader
 * fills from the scenario before the programs run. Units are in the names: _q20 is a
 * fraction in units of 2^-20, _us microseconds, and a bare name an integer or a 0/1 flag.
 *
 * Per-connection state lives in the socket's icsk_ca_priv (104 bytes), as in the kernel's
 * own modules; FP_PRIV checks that a program's state fits.
 */
#ifndef FATPIPE_CC_H
#define FATPIPE_CC_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef int __s32;
typedef unsigned long long __u64;
typedef long long __s64;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __s32 s32;
typedef __u64 u64;
typedef __s64 s64;
typedef _Bool bool;
#define true 1
#define false 0

#define SEC(name) __attribute__((section(name), used))
#define __ksym __attribute__((section(".ksyms")))
#define __always_inline inline __attribute__((always_inline))
#define FP_PARAM(type, name, ...) const volatile type name = __VA_ARGS__

/* The kernel's structs, the fields fatpipe's programs use (include/linux/tcp.h,
 * include/net/inet_connection_sock.h, include/net/sock.h, include/net/tcp.h). */
struct sock {
	unsigned long sk_pacing_rate;
	__u8 sk_pacing_status; /* enum sk_pacing: 0 none, 1 needed, 2 fq */
} __attribute__((preserve_access_index));

struct inet_connection_sock {
	__u8 icsk_ca_state : 5;
	__u64 icsk_ca_priv[13];
} __attribute__((preserve_access_index));

struct minmax_sample {
	__u32 t;
	__u32 v;
} __attribute__((preserve_access_index));

struct minmax {
	struct minmax_sample s[3];
} __attribute__((preserve_access_index));

/* The last ACK's timestamps (TCP-LP reads them); rcv_tsecr in the sender's own clock. */
struct tcp_options_received {
	__u32 rcv_tsval;
	__u32 rcv_tsecr;
} __attribute__((preserve_access_index));

struct tcp_sock {
	struct inet_connection_sock inet_conn;
	struct tcp_options_received rx_opt;
	__u32 mss_cache;
	__u32 snd_cwnd;
	__u32 snd_cwnd_cnt;
	__u32 snd_ssthresh;
	__u32 prior_cwnd;
	__u32 srtt_us;        /* smoothed RTT << 3, microseconds */
	__u32 mdev_us;        /* RTT mean deviation << 2, microseconds */
	__u32 packets_out;
	__u32 sacked_out;
	__u32 lost_out;
	__u32 retrans_out;
	__u32 max_packets_out;
	__u8 is_cwnd_limited : 1;
	__u32 delivered;      /* segments delivered (cumulatively ACKed or SACKed) */
	__u64 bytes_acked;
	__u32 snd_una;
	__u32 snd_nxt;
	__u32 lsndtime;       /* last data sent, jiffies */
	__u64 tcp_mstamp;     /* time of the event being processed, microseconds */
	struct minmax rtt_min;
} __attribute__((preserve_access_index));

/* What pkts_acked is told (include/net/tcp.h). */
struct ack_sample {
	__u32 pkts_acked;
	__s32 rtt_us;         /* -1: no sample */
	__u32 in_flight;
} __attribute__((preserve_access_index));

struct rate_sample;

/* The operations, in the order of include/net/tcp.h; the loader matches them by name. */
struct tcp_congestion_ops {
	__u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, __u32 ack, __u32 acked);
	void (*set_state)(struct sock *sk, __u8 new_state);
	void (*cwnd_event)(struct sock *sk, int ev);
	void (*in_ack_event)(struct sock *sk, __u32 flags);
	void (*pkts_acked)(struct sock *sk, const struct ack_sample *sample);
	__u32 (*min_tso_segs)(struct sock *sk);
	void (*cong_control)(struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs);
	__u32 (*undo_cwnd)(struct sock *sk);
	__u32 (*sndbuf_expand)(struct sock *sk);
	char name[16];
	__u32 flags;
	void (*init)(struct sock *sk);
	void (*release)(struct sock *sk);
};

/* enum tcp_ca_state and enum tcp_ca_event (include/net/tcp.h, uapi/linux/tcp.h). */
#define TCP_CA_Open 0
#define TCP_CA_Disorder 1
#define TCP_CA_CWR 2
#define TCP_CA_Recovery 3
#define TCP_CA_Loss 4
#define CA_EVENT_TX_START 0
#define CA_EVENT_CWND_RESTART 1
#define CA_EVENT_COMPLETE_CWR 2
#define CA_EVENT_LOSS 3
#define CA_EVENT_ECN_NO_CE 4
#define CA_EVENT_ECN_IS_CE 5
/* in_ack_event flags (enum tcp_ca_ack_event_flags). */
#define CA_ACK_SLOWPATH (1 << 0)
#define CA_ACK_WIN_UPDATE (1 << 1)
#define CA_ACK_ECE (1 << 2)
/* Linux's TCP_INFINITE_SSTHRESH. */
#define TCP_INFINITE_SSTHRESH 0x7fffffff
#define USEC_PER_SEC 1000000ULL

/* The kernel's own congestion-control building blocks, callable from struct_ops programs
 * (kfuncs of net/ipv4/bpf_tcp_ca.c). In the simulator, fatpipe's own implementations. */
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __ksym;
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

/* Helpers (uapi/linux/bpf.h numbers). */
static __u64 (*bpf_ktime_get_ns)(void) = (void *)5;
/* A line of trace: in the kernel to tracing/trace_pipe, in the simulator to stderr when
 * FATPIPE_BPF_TRACE is set (%d, %u, %x and their l and ll forms; at most three values). */
static long (*bpf_trace_printk)(const char *fmt, __u32 fmt_size, ...) = (void *)6;
#define FP_TRACE(fmt, ...) ({                                                                \
	static const char ____fmt[] = fmt;                                                   \
	bpf_trace_printk(____fmt, sizeof(____fmt), ##__VA_ARGS__);                           \
})
/* The kernel's jiffies (tcp_jiffies32 is their low 32 bits): HZ per second. */
static __u64 (*bpf_jiffies64)(void) = (void *)118;

/* A bitfield read that survives the field moving (CO-RE: byte offset, size and shifts). */
#define FP_READ_BITFIELD(s, field) ({                                                        \
	unsigned long long __v = 0;                                                          \
	unsigned int __off = __builtin_preserve_field_info((s)->field, 0);                   \
	unsigned int __sz = __builtin_preserve_field_info((s)->field, 1);                    \
	const void *__p = (const void *)(s) + __off;                                         \
	switch (__sz) {                                                                      \
	case 1: __v = *(const __u8 *)__p; break;                                             \
	case 2: __v = *(const __u16 *)__p; break;                                            \
	case 4: __v = *(const __u32 *)__p; break;                                            \
	case 8: __v = *(const __u64 *)__p; break;                                            \
	}                                                                                    \
	__v <<= __builtin_preserve_field_info((s)->field, 4);                                \
	__v >>= __builtin_preserve_field_info((s)->field, 5);                                \
	__v;                                                                                 \
})

/* A struct_ops program: `FP_OP(u32, name, struct sock *, sk)` declares `name`, which the
 * kernel calls with its arguments in a u64 array (ctx), and opens the body that sees them
 * by name. */
#define FP_OP(ret, name, ...) FP_OP_N(__VA_ARGS__, 3, 3, 2, 2, 1, 1, 0)(ret, name, __VA_ARGS__)
#define FP_OP_N(a, b, c, d, e, f, n, ...) FP_OP##n
#define FP_OP1(ret, name, t0, a0)                                                            \
	static __always_inline ret name##_body(t0 a0);                                       \
	SEC("struct_ops/" #name) ret name(unsigned long long *ctx)                           \
	{                                                                                    \
		return name##_body((t0)ctx[0]);                                              \
	}                                                                                    \
	static __always_inline ret name##_body(t0 a0)
#define FP_OP2(ret, name, t0, a0, t1, a1)                                                    \
	static __always_inline ret name##_body(t0 a0, t1 a1);                                \
	SEC("struct_ops/" #name) ret name(unsigned long long *ctx)                           \
	{                                                                                    \
		return name##_body((t0)ctx[0], (t1)ctx[1]);                                  \
	}                                                                                    \
	static __always_inline ret name##_body(t0 a0, t1 a1)
#define FP_OP3(ret, name, t0, a0, t1, a1, t2, a2)                                            \
	static __always_inline ret name##_body(t0 a0, t1 a1, t2 a2);                         \
	SEC("struct_ops/" #name) ret name(unsigned long long *ctx)                           \
	{                                                                                    \
		return name##_body((t0)ctx[0], (t1)ctx[1], (t2)ctx[2]);                      \
	}                                                                                    \
	static __always_inline ret name##_body(t0 a0, t1 a1, t2 a2)

/* undo_cwnd as Linux tcp_reno_undo_cwnd, max(cwnd, prior_cwnd): the kernel's own (a kfunc),
 * and fatpipe's default undo. */
#define FP_RENO_UNDO_CWND(name)                                                              \
	FP_OP(__u32, name, struct sock *, sk)                                                \
	{                                                                                    \
		return tcp_reno_undo_cwnd(sk);                                               \
	}

/* The program's per-connection state in icsk_ca_priv. */
#define FP_PRIV(type)                                                                        \
	_Static_assert(sizeof(type) <= 13 * sizeof(__u64), #type " exceeds icsk_ca_priv");   \
	static __always_inline type *priv(struct sock *sk)                                   \
	{                                                                                    \
		return (type *)((struct tcp_sock *)sk)->inet_conn.icsk_ca_priv;              \
	}

static __always_inline struct tcp_sock *tcp_sk(struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline __u32 fp_min(__u32 a, __u32 b) { return a < b ? a : b; }
static __always_inline __u32 fp_max(__u32 a, __u32 b) { return a > b ? a : b; }
static __always_inline __u64 fp_min64(__u64 a, __u64 b) { return a < b ? a : b; }
static __always_inline __u64 fp_max64(__u64 a, __u64 b) { return a > b ? a : b; }

/* Sequence numbers wrap: seq1 before seq2 (include/net/tcp.h before()). */
static __always_inline bool fp_before(__u32 seq1, __u32 seq2) { return (__s32)(seq1 - seq2) < 0; }
static __always_inline bool fp_after(__u32 seq1, __u32 seq2) { return fp_before(seq2, seq1); }

static __always_inline bool fp_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

/* Linux tcp_is_cwnd_limited: cwnd limited sending in the last round trip, or in slow start
 * cwnd is below twice the most sent in it. */
static __always_inline bool fp_cwnd_limited(const struct tcp_sock *tp)
{
	if (FP_READ_BITFIELD(tp, is_cwnd_limited))
		return true;
	if (fp_in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return false;
}

/* Segments in the network (Linux tcp_packets_in_flight). */
static __always_inline __u32 fp_in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

/* The connection's minimum RTT, microseconds (Linux tcp_min_rtt); ~0U before a sample. */
static __always_inline __u32 fp_min_rtt_us(const struct tcp_sock *tp)
{
	return tp->rtt_min.s[0].v;
}

/* The loss-recovery state before the transition set_state announces (the kernel calls
 * set_state before it stores the new one). */
static __always_inline __u8 fp_ca_state(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	return FP_READ_BITFIELD(&tp->inet_conn, icsk_ca_state);
}

/* fatpipe's core knows no Disorder state (SACKs or duplicate ACKs below the recovery
 * threshold): its algorithms see Open there. A program that keeps to its core algorithm
 * ignores the kernel's transitions into Disorder and from Disorder back to Open. */
static __always_inline bool fp_core_transition(struct sock *sk, __u8 new_state)
{
	__u8 old = fp_ca_state(sk);
	if (new_state == TCP_CA_Disorder)
		return false;
	if (new_state == TCP_CA_Open && old <= TCP_CA_Disorder)
		return false;
	return true;
}

/* Linux tcp_reno_cong_avoid's first half, fatpipe's slow_start_first: no growth unless
 * cwnd-limited; in slow start grow by `acked`; returns what is left for congestion
 * avoidance (0: nothing). */
static __always_inline __u32 fp_slow_start_first(struct tcp_sock *tp, __u32 acked)
{
	if (!fp_cwnd_limited(tp))
		return 0;
	if (fp_in_slow_start(tp))
		acked = tcp_slow_start(tp, acked);
	return acked;
}

/* What one ACK told the algorithm, as fatpipe's core tells it (AckSample): the kernel
 * calls pkts_acked on every ACK it processes and in_ack_event after it; the core reports an
 * ACK to pkts_acked only when it acknowledged or delivered something. fp_ack_update (from
 * pkts_acked) works out that ACK's figures and stamps them with the ACK's time, so that
 * cong_avoid, later on the same ACK, can tell them from an older ACK's (fp_ack_current). */
struct fp_ack {
	__u64 stamp_us;       /* tcp_mstamp of the ACK described */
	__u32 una;            /* snd_una after it */
	__u32 delivered;      /* tp->delivered after it */
	__u32 acked_bytes;    /* bytes it newly acknowledged cumulatively */
	__u32 delivered_segs; /* segments it newly delivered (cumulatively or by SACK) */
	__s32 rtt_us;         /* its RTT sample, -1 if none */
	__u32 acked_segs;     /* segments it newly acknowledged cumulatively */
};

static __always_inline void fp_ack_init(struct tcp_sock *tp, struct fp_ack *a)
{
	a->stamp_us = 0;
	a->una = tp->snd_una;
	a->delivered = tp->delivered;
	a->acked_bytes = 0;
	a->delivered_segs = 0;
	a->rtt_us = -1;
	a->acked_segs = 0;
}

/* Returns whether the ACK is one the core reports to pkts_acked. */
static __always_inline bool fp_ack_update(struct tcp_sock *tp, struct fp_ack *a, const struct ack_sample *s)
{
	a->acked_bytes = tp->snd_una - a->una;
	a->delivered_segs = tp->delivered - a->delivered;
	a->una = tp->snd_una;
	a->delivered = tp->delivered;
	a->rtt_us = s->rtt_us;
	a->acked_segs = s->pkts_acked;
	a->stamp_us = tp->tcp_mstamp;
	return a->acked_bytes > 0 || a->delivered_segs > 0;
}

static __always_inline bool fp_ack_current(const struct tcp_sock *tp, const struct fp_ack *a)
{
	return a->stamp_us == tp->tcp_mstamp;
}

/* in_ack_event: whether the ACK is a duplicate in the core's sense (it moved no cumulative
 * ACK and is no window update, with data outstanding). */
static __always_inline bool fp_ack_is_duplicate(struct tcp_sock *tp, struct fp_ack *a, __u32 flags)
{
	bool advanced;
	if (fp_ack_current(tp, a)) {
		advanced = a->acked_bytes > 0;
	} else {
		advanced = tp->snd_una != a->una;
		a->una = tp->snd_una;
	}
	return !advanced && !(flags & CA_ACK_WIN_UPDATE) && tp->packets_out > 0;
}

/* Round trips counted from acknowledged bytes (fatpipe's cc/round.rs): a round ends on the
 * first ACK that covers every byte outstanding when it began. */
struct fp_round {
	__u64 acked_bytes;
	__u64 end_bytes;      /* 0: no round begun */
};

static __always_inline void fp_round_restart(struct fp_round *r)
{
	r->acked_bytes = 0;
	r->end_bytes = 0;
}

/* An ACK of `acked_bytes`: true when it completes a round (the next begins at once). */
static __always_inline bool fp_round_on_ack(struct fp_round *r, const struct tcp_sock *tp, __u64 acked_bytes)
{
	__u64 outstanding = (__u64)fp_in_flight(tp) * tp->mss_cache;
	r->acked_bytes += acked_bytes;
	if (r->end_bytes == 0) {
		/* +1 keeps 0 meaning "none"; the comparison below subtracts it back. */
		r->end_bytes = r->acked_bytes + outstanding + 1;
		return false;
	}
	if (r->acked_bytes + 1 >= r->end_bytes) {
		r->end_bytes = r->acked_bytes + outstanding + 1;
		return true;
	}
	return false;
}

/* Reno's growth (fatpipe's reno.rs with a = 1; Linux tcp_reno_cong_avoid when `acked` is what
 * the ACK delivered): slow start, then one segment per cwnd acknowledged. */
static __always_inline void fp_reno_growth(struct tcp_sock *tp, __u32 acked)
{
	__u32 left = fp_slow_start_first(tp, acked);
	if (left)
		tcp_cong_avoid_ai(tp, tp->snd_cwnd, left);
}

/* x * num >> 20 in 64 bits (a _q20 fraction of x). */
static __always_inline __u64 fp_q20(__u64 x, __u64 num_q20)
{
	return (x * num_q20) >> 20;
}

/* floor(a / b) for 64-bit unsigned, 0 when b is 0. */
static __always_inline __u64 fp_div(__u64 a, __u64 b)
{
	return b ? a / b : 0;
}

#endif
