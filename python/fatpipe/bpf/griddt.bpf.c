// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * GridDT 3.1 (document 004, sections 3.2 and 4.3) as fatpipe's cc/griddt.rs runs it:
 * - congestion avoidance adds add = mssval x rttval segments per RTT, mssval = mss_ref / MSS
 *   when the MSS is smaller (else 1), rttval = (minRTT / rtt_ref)^2 when minRTT is longer
 *   (else 1), in integers; spread over the RTT as one segment per cwnd / add acknowledged;
 * - a loss detected by duplicate ACKs: ssthresh = cwnd - cwnd / cwnd_decr, at least 2; after
 *   a timeout half the window at the signal;
 * - growth per ACK, or per acknowledged segment with byte_counting.
 */
#include "fatpipe_cc.h"

char _license[] SEC("license") = "Dual MIT/GPL";

FP_PARAM(__u32, mss_ref_bytes, 1500);
FP_PARAM(__u64, rtt_ref_us, 10000);
FP_PARAM(__u32, cwnd_decr, 2);
FP_PARAM(__u32, byte_counting, 0);

struct griddt {
	__u32 cwnd_at_signal;
};
FP_PRIV(struct griddt)

static __always_inline __u32 additive_increase(struct tcp_sock *tp)
{
	__u32 mss = tp->mss_cache;
	__u32 mssval = mss >= mss_ref_bytes || mss == 0 ? 1 : mss_ref_bytes / mss;
	__u32 rttval = 1;
	__u32 min_rtt = fp_min_rtt_us(tp);
	if (min_rtt != ~0U && min_rtt > rtt_ref_us && rtt_ref_us > 0) {
		__u64 ratio = min_rtt / rtt_ref_us;
		rttval = fp_min64(ratio * ratio, 0xffffffffULL);
	}
	return fp_min64((__u64)mssval * rttval, 0xffffffffULL);
}

FP_OP(void, fp_gdt_init, struct sock *, sk)
{
	priv(sk)->cwnd_at_signal = 0;
}

FP_OP(__u32, fp_gdt_ssthresh, struct sock *, sk)
{
	__u32 cwnd = tcp_sk(sk)->snd_cwnd;
	priv(sk)->cwnd_at_signal = cwnd;
	return fp_max(cwnd - cwnd / fp_max(cwnd_decr, 1), 2);
}

FP_OP(void, fp_gdt_cong_avoid, struct sock *, sk, __u32, ack, __u32, acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 left = fp_slow_start_first(tp, byte_counting ? acked : 1);
	if (!left)
		return;
	__u32 add = fp_max(additive_increase(tp), 1);
	tcp_cong_avoid_ai(tp, fp_max(tp->snd_cwnd / add, 1), left);
}

FP_OP(void, fp_gdt_set_state, struct sock *, sk, __u8, new_state)
{
	if (fp_core_transition(sk, new_state) && new_state == TCP_CA_Loss)
		tcp_sk(sk)->snd_ssthresh = fp_max(priv(sk)->cwnd_at_signal / 2, 2);
}

FP_RENO_UNDO_CWND(fp_gdt_undo_cwnd)

SEC(".struct_ops")
struct tcp_congestion_ops fp_griddt = {
	.init = (void *)fp_gdt_init,
	.ssthresh = (void *)fp_gdt_ssthresh,
	.cong_avoid = (void *)fp_gdt_cong_avoid,
	.set_state = (void *)fp_gdt_set_state,
	.undo_cwnd = (void *)fp_gdt_undo_cwnd,
	.name = "fp_griddt",
};
