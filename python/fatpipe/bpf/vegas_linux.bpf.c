// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * TCP Vegas as Linux tcp_vegas.c runs it, after fatpipe's cc/vegas/linux.rs ("linux"
 * variant; the kernel here is built without the module):
 * - RTTs are whole microseconds plus one; baseRTT is Vegas's own minimum since the start or
 *   the last restart; each round keeps its minimum RTT and a count of samples;
 * - a round ends on the first ACK above the snd_nxt of its start (beg_snd_nxt); the
 *   decision then comes from the round's minimum RTT: diff = cwnd (rtt - baseRTT) /
 *   baseRTT, target = cwnd baseRTT / rtt, in integers;
 * - a round with 2 samples or fewer grows as Reno (tcp_reno_cong_avoid);
 * - slow start grows on every ACK; diff > gamma ends it at min(cwnd, target + 1) with
 *   ssthresh = cwnd;
 * - congestion avoidance: diff > beta: cwnd - 1; diff < alpha: cwnd + 1;
 * - cwnd stays at least 2; after each decision ssthresh is at least 3/4 cwnd;
 * - Vegas runs in the Open state only; an idle restart forgets baseRTT too;
 * - a loss halves (tcp_reno_ssthresh); undo is tcp_reno_undo_cwnd.
 * alpha, beta, gamma are packets (Linux's module defaults 2, 4, 1).
 */
#include "fatpipe_cc.h"

char _license[] SEC("license") = "Dual MIT/GPL";

FP_PARAM(__u64, alpha_q20, 2 << 20);
FP_PARAM(__u64, beta_q20, 4 << 20);
FP_PARAM(__u64, gamma_q20, 1 << 20);

#define NO_RTT 0x7fffffff

struct vegas {
	__u32 doing_vegas_now;
	__u32 beg_snd_nxt;
	__u32 base_rtt;
	__u32 min_rtt;
	__u32 cnt_rtt;
};
FP_PRIV(struct vegas)

static __always_inline void vegas_enable(struct sock *sk)
{
	struct vegas *v = priv(sk);
	v->doing_vegas_now = 1;
	v->beg_snd_nxt = tcp_sk(sk)->snd_nxt;
	v->cnt_rtt = 0;
	v->min_rtt = NO_RTT;
}

static __always_inline void vegas_restart(struct sock *sk)
{
	priv(sk)->base_rtt = NO_RTT;
	vegas_enable(sk);
}

FP_OP(void, fp_vegas_init, struct sock *, sk)
{
	vegas_restart(sk);
}

FP_OP(__u32, fp_vegas_ssthresh, struct sock *, sk)
{
	return fp_max(tcp_sk(sk)->snd_cwnd >> 1, 2);
}

FP_OP(void, fp_vegas_pkts_acked, struct sock *, sk, const struct ack_sample *, sample)
{
	struct vegas *v = priv(sk);
	if (sample->rtt_us < 0)
		return;
	__u32 vrtt = sample->rtt_us + 1;
	if (vrtt < v->base_rtt)
		v->base_rtt = vrtt;
	if (vrtt < v->min_rtt)
		v->min_rtt = vrtt;
	v->cnt_rtt++;
}

FP_OP(void, fp_vegas_set_state, struct sock *, sk, __u8, new_state)
{
	if (!fp_core_transition(sk, new_state))
		return;
	if (new_state == TCP_CA_Open)
		vegas_enable(sk);
	else
		priv(sk)->doing_vegas_now = 0;
}

FP_OP(void, fp_vegas_cwnd_event, struct sock *, sk, int, ev)
{
	if (ev == CA_EVENT_CWND_RESTART || ev == CA_EVENT_TX_START)
		vegas_restart(sk);
}

/* diff (an integer number of packets) above a q20 threshold. */
static __always_inline bool above(__u64 diff, __u64 q20)
{
	return (diff << 20) > q20;
}

FP_OP(void, fp_vegas_cong_avoid, struct sock *, sk, __u32, ack, __u32, acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct vegas *v = priv(sk);
	if (!v->doing_vegas_now) {
		fp_reno_growth(tp, acked);
		return;
	}
	if (fp_after(tp->snd_una, v->beg_snd_nxt)) {
		v->beg_snd_nxt = tp->snd_nxt;
		if (v->cnt_rtt <= 2) {
			fp_reno_growth(tp, acked);
		} else {
			__u64 rtt = v->min_rtt, base = v->base_rtt, cwnd = tp->snd_cwnd;
			__u64 target = fp_div(cwnd * base, rtt);
			__u64 diff = fp_div(cwnd * (rtt - base), base);
			if (above(diff, gamma_q20) && fp_in_slow_start(tp)) {
				tp->snd_cwnd = fp_min64(cwnd, target + 1);
				tp->snd_ssthresh = fp_min(tp->snd_ssthresh, tp->snd_cwnd);
			} else if (fp_in_slow_start(tp)) {
				tcp_slow_start(tp, acked);
			} else if (above(diff, beta_q20)) {
				tp->snd_cwnd = cwnd - 1;
				tp->snd_ssthresh = fp_min(tp->snd_ssthresh, tp->snd_cwnd);
			} else if ((diff << 20) < alpha_q20) {
				tp->snd_cwnd = cwnd + 1;
			}
			if (tp->snd_cwnd < 2)
				tp->snd_cwnd = 2;
			__u32 c = tp->snd_cwnd;
			tp->snd_ssthresh = fp_max(tp->snd_ssthresh, (c >> 1) + (c >> 2));
		}
		v->cnt_rtt = 0;
		v->min_rtt = NO_RTT;
	} else if (fp_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
	}
}

FP_RENO_UNDO_CWND(fp_vegas_undo_cwnd)

SEC(".struct_ops")
struct tcp_congestion_ops fp_vegas_linux = {
	.init = (void *)fp_vegas_init,
	.ssthresh = (void *)fp_vegas_ssthresh,
	.cong_avoid = (void *)fp_vegas_cong_avoid,
	.set_state = (void *)fp_vegas_set_state,
	.cwnd_event = (void *)fp_vegas_cwnd_event,
	.pkts_acked = (void *)fp_vegas_pkts_acked,
	.undo_cwnd = (void *)fp_vegas_undo_cwnd,
	.name = "fp_vegas_linux",
};
