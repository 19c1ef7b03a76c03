// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * Westwood+ as Linux tcp_westwood.c runs it, after fatpipe's cc/westwood/linux.rs ("linux"
 * variant; the kernel here is built without the module):
 * - bytes delivered are counted over windows of at least max(RTT, min_sample_interval), in
 *   jiffies; a window's sample is bytes / jiffies, the first filling both filters, later ones
 *   through two cascaded EWMAs of 7/8 in integers;
 * - the RTT is the last sample in jiffies (rounded up); RTTmin its minimum, taken afresh
 *   after a timeout;
 * - a loss halves (tcp_reno_ssthresh); when the reduction completes cwnd = ssthresh = BWE x
 *   RTTmin / MSS, at least 2; a timeout sets ssthresh = BWE x RTTmin / MSS;
 * - growth is tcp_reno_cong_avoid's; undo tcp_reno_undo_cwnd.
 * Jiffies are the kernel's (bpf_jiffies64); kernel_hz must be its HZ (the loader checks).
 */
#include "fatpipe_cc.h"

char _license[] SEC("license") = "Dual MIT/GPL";

FP_PARAM(__u64, min_sample_interval_us, 50000);
FP_PARAM(__u32, byte_counting, 1);
FP_PARAM(__u32, kernel_hz, 250);

struct westwood {
	struct fp_ack ack;
	__u64 bw_ns_est;      /* bytes per jiffy */
	__u64 bw_est;
	__u64 rtt_win_sx;     /* jiffies */
	__u64 bk;
	__u32 rtt;            /* jiffies */
	__u32 rtt_min;
	__u32 reset_rtt_min;
};
FP_PRIV(struct westwood)

static __always_inline __u32 bw_rttmin(struct tcp_sock *tp, struct westwood *w)
{
	__u64 segments = fp_div(w->bw_est * w->rtt_min, tp->mss_cache);
	return fp_max(fp_min64(segments, 0xffffffffULL), 2);
}

FP_OP(void, fp_wwl_init, struct sock *, sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct westwood *w = priv(sk);
	fp_ack_init(tp, &w->ack);
	w->bw_ns_est = 0;
	w->bw_est = 0;
	w->rtt_win_sx = bpf_jiffies64();
	w->bk = 0;
	w->rtt = 20 * kernel_hz;
	w->rtt_min = 20 * kernel_hz;
	w->reset_rtt_min = 1;
}

FP_OP(__u32, fp_wwl_ssthresh, struct sock *, sk)
{
	return fp_max(tcp_sk(sk)->snd_cwnd >> 1, 2);
}

FP_OP(void, fp_wwl_cong_avoid, struct sock *, sk, __u32, ack, __u32, acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	fp_reno_growth(tp, byte_counting ? acked : 1);
}

FP_OP(void, fp_wwl_pkts_acked, struct sock *, sk, const struct ack_sample *, sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct westwood *w = priv(sk);
	if (!fp_ack_update(tp, &w->ack, sample))
		return;
	/* westwood_update_window */
	__u64 now = bpf_jiffies64();
	__u64 delta = now > w->rtt_win_sx ? now - w->rtt_win_sx : 0;
	__u64 min_window = min_sample_interval_us * kernel_hz / USEC_PER_SEC;
	if (w->rtt > 0 && delta > fp_max64(w->rtt, min_window)) {
		__u64 sample = w->bk / delta;
		if (w->bw_ns_est == 0 && w->bw_est == 0) {
			w->bw_ns_est = sample;
			w->bw_est = sample;
		} else {
			w->bw_ns_est = (7 * w->bw_ns_est + sample) >> 3;
			w->bw_est = (7 * w->bw_est + w->bw_ns_est) >> 3;
		}
		w->bk = 0;
		w->rtt_win_sx = now;
	}
	w->bk += (__u64)w->ack.delivered_segs * tp->mss_cache;
	if (w->reset_rtt_min) {
		w->reset_rtt_min = 0;
		w->rtt_min = w->rtt;
	} else if (w->rtt < w->rtt_min) {
		w->rtt_min = w->rtt;
	}
	if (sample->rtt_us >= 1)
		w->rtt = ((__u64)sample->rtt_us * kernel_hz + USEC_PER_SEC - 1) / USEC_PER_SEC;
}

FP_OP(void, fp_wwl_cwnd_event, struct sock *, sk, int, ev)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct westwood *w = priv(sk);
	if (ev == CA_EVENT_COMPLETE_CWR) {
		tp->snd_ssthresh = bw_rttmin(tp, w);
		tp->snd_cwnd = tp->snd_ssthresh;
	} else if (ev == CA_EVENT_LOSS) {
		tp->snd_ssthresh = bw_rttmin(tp, w);
		w->reset_rtt_min = 1;
	}
}

FP_RENO_UNDO_CWND(fp_wwl_undo_cwnd)

SEC(".struct_ops")
struct tcp_congestion_ops fp_westwood_linux = {
	.init = (void *)fp_wwl_init,
	.ssthresh = (void *)fp_wwl_ssthresh,
	.cong_avoid = (void *)fp_wwl_cong_avoid,
	.cwnd_event = (void *)fp_wwl_cwnd_event,
	.pkts_acked = (void *)fp_wwl_pkts_acked,
	.undo_cwnd = (void *)fp_wwl_undo_cwnd,
	.name = "fp_westwood_lx",
};
