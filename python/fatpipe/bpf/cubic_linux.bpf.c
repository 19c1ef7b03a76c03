// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * CUBIC as Linux tcp_cubic.c computes it, after fatpipe's cc/cubic/linux.rs and the HyStart
 * of cc/cubic/hystart.rs ("linux" variant, hystart "off" or "linux"): the kernel builds
 * CUBIC in, and this program exists to be checked against it and to run CUBIC with other
 * parameters than the kernel module's (which are machine-wide).
 * - time in jiffies, the curve's time in 2^-10 s; C = bic_scale x 10 / 1024, beta / 1024;
 * - the target is the curve one minimum RTT ahead: t = now - epoch_start + delay_min;
 *   K = cbrt(cube_factor (W_max - cwnd)) exactly (Linux: a table and a Newton step);
 * - one segment per cnt acknowledged, cnt = cwnd / (target - cwnd), 100 cwnd when the target
 *   is not above; at most 20 before the first loss; at least 2; recomputed at most once per
 *   jiffy, and while cwnd stays the same at most every HZ/32;
 * - Reno emulation at 8/15 segment per RTT (tcp_friendliness);
 * - a loss: W_max = cwnd, or cwnd (1 + beta) / 2 with fast convergence below the last;
 *   ssthresh = max(cwnd beta / 1024, 2); after idle the epoch moves by the idle time; a
 *   timeout forgets everything and resets HyStart;
 * - HyStart (hystart = 1): once cwnd reaches hystart_low_window, an ACK train longer than
 *   half the minimum RTT (plus a TSO/GRO allowance; the whole RTT when pacing), or a round's
 *   minimum RTT 1/8 (4..16 ms) above delay_min after 8 samples, sets ssthresh = cwnd.
 * Jiffies are the kernel's (bpf_jiffies64); kernel_hz must be its HZ (the loader checks).
 */
#include "fatpipe_cc.h"

char _license[] SEC("license") = "Dual MIT/GPL";

FP_PARAM(__u32, beta, 717);
FP_PARAM(__u32, bic_scale, 41);
FP_PARAM(__u32, fast_convergence, 1);
FP_PARAM(__u32, tcp_friendliness, 1);
/* 0: off, 1: HyStart as Linux. */
FP_PARAM(__u32, hystart, 1);
/* 1: ACK train, 2: delay, 3: both (Linux hystart_detect). */
FP_PARAM(__u32, hystart_detect, 3);
FP_PARAM(__u32, hystart_low_window, 16);
FP_PARAM(__u64, hystart_ack_delta_us, 2000);
FP_PARAM(__u32, kernel_hz, 250);

#define BETA_SCALE 1024
#define BICTCP_HZ 10
#define HYSTART_MIN_SAMPLES 8
#define HYSTART_DELAY_MIN_US 4000
#define HYSTART_DELAY_MAX_US 16000

struct cubic {
	__u64 epoch_start;    /* jiffies */
	__u64 last_time;      /* jiffies */
	__u64 round_start_us;
	__u64 last_ack_us;
	__u64 curr_rtt_us;
	__u32 cnt;
	__u32 last_max_cwnd;
	__u32 last_cwnd;
	__u32 origin_point;
	__u32 k;              /* 2^-10 s */
	__u32 delay_min_us;   /* 0: none */
	__u32 ack_cnt;
	__u32 tcp_cwnd;
	__u32 end_seq;
	__u32 sample_cnt;
	__u8 have_epoch;
	__u8 found;
};
FP_PRIV(struct cubic)

/* floor(cbrt(x)): Newton's iteration y <- (2y + x / y^2) / 3 from 2642245, the root of the
 * largest u64, which approaches the root from above without a branch (the verifier follows
 * one path through it), then a correction of the last step, which may land one above. */
static __always_inline __u64 cube_root(__u64 x)
{
	__u64 y = 2642245;
	for (int i = 0; i < 48; i++)
		y = (2 * y + x / (y * y)) / 3;
	if (y * y * y > x)
		y--;
	if (y * y * y > x)
		y--;
	if ((y + 1) * (y + 1) * (y + 1) <= x)
		y++;
	return y;
}

/* The 128-bit product of two u64, as (hi, lo). */
static __always_inline void mul_wide(__u64 a, __u64 b, __u64 *hi, __u64 *lo)
{
	__u64 a0 = a & 0xffffffff, a1 = a >> 32, b0 = b & 0xffffffff, b1 = b >> 32;
	__u64 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
	__u64 mid = (p00 >> 32) + (p01 & 0xffffffff) + (p10 & 0xffffffff);
	*lo = (p00 & 0xffffffff) | (mid << 32);
	*hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

/* min((scale x offs^3) >> 40, 2^32 - 1), exactly. */
static __always_inline __u32 curve_delta(__u64 scale, __u64 offs)
{
	if (offs >> 32)
		return 0xffffffff;
	__u64 hi, lo, h2, l2;
	mul_wide(offs * offs, offs, &hi, &lo);
	mul_wide(lo, scale, &h2, &l2);
	hi = hi * scale + h2;
	if (hi >> 8)
		return 0xffffffff;
	__u64 v = (hi << 24) | (l2 >> 40);
	return v > 0xffffffffULL ? 0xffffffff : v;
}

static __always_inline __u64 jiffies_of_us(__u64 us)
{
	return (us * kernel_hz + USEC_PER_SEC - 1) / USEC_PER_SEC;
}

static __always_inline void hystart_reset(struct tcp_sock *tp, struct cubic *ca)
{
	ca->round_start_us = tp->tcp_mstamp;
	ca->last_ack_us = ca->round_start_us;
	ca->end_seq = tp->snd_nxt;
	ca->curr_rtt_us = ~0ULL;
	ca->sample_cnt = 0;
}

static __always_inline void reset(struct cubic *ca)
{
	ca->epoch_start = 0;
	ca->last_time = 0;
	ca->cnt = 0;
	ca->last_max_cwnd = 0;
	ca->last_cwnd = 0;
	ca->origin_point = 0;
	ca->k = 0;
	ca->delay_min_us = 0;
	ca->ack_cnt = 0;
	ca->tcp_cwnd = 0;
	ca->have_epoch = 0;
}

static __always_inline void update(struct cubic *ca, __u32 cwnd, __u32 acked)
{
	__u64 hz = kernel_hz;
	__u64 cube_rtt_scale = (__u64)bic_scale * 10;
	ca->ack_cnt = fp_min64((__u64)ca->ack_cnt + acked, 0xffffffffULL);
	__u64 j = bpf_jiffies64();
	__u64 since = j > ca->last_time ? j - ca->last_time : 0;
	if (ca->last_cwnd == cwnd && since <= hz / 32)
		return;
	if (!(ca->have_epoch && j == ca->last_time)) {
		ca->last_cwnd = cwnd;
		ca->last_time = j;
		if (!ca->have_epoch) {
			ca->have_epoch = 1;
			ca->epoch_start = j;
			ca->ack_cnt = acked;
			ca->tcp_cwnd = cwnd;
			if (ca->last_max_cwnd <= cwnd) {
				ca->k = 0;
				ca->origin_point = cwnd;
			} else {
				__u64 cube_factor = (1ULL << (10 + 3 * BICTCP_HZ)) / cube_rtt_scale;
				ca->k = cube_root(cube_factor * (ca->last_max_cwnd - cwnd));
				ca->origin_point = ca->last_max_cwnd;
			}
		}
		__u64 t = (j > ca->epoch_start ? j - ca->epoch_start : 0) + jiffies_of_us(ca->delay_min_us);
		t = (t << BICTCP_HZ) / hz;
		__u64 offs = t > ca->k ? t - ca->k : ca->k - t;
		__u32 delta = curve_delta(cube_rtt_scale, offs);
		__u32 target;
		if (t < ca->k)
			target = ca->origin_point > delta ? ca->origin_point - delta : 0;
		else
			target = fp_min64((__u64)ca->origin_point + delta, 0xffffffffULL);
		if (target > cwnd)
			ca->cnt = cwnd / (target - cwnd);
		else
			ca->cnt = fp_min64(100ULL * cwnd, 0xffffffffULL);
		if (ca->last_max_cwnd == 0 && ca->cnt > 20)
			ca->cnt = 20;
	}
	if (tcp_friendliness) {
		__u32 beta_scale = 8 * (BETA_SCALE + beta) / 3 / (BETA_SCALE - beta);
		__u32 per_segment = fp_min64((__u64)cwnd * beta_scale, 0xffffffffULL) >> 3;
		if (per_segment > 0 && ca->ack_cnt > per_segment) {
			__u32 n = (ca->ack_cnt - 1) / per_segment;
			ca->ack_cnt -= n * per_segment;
			ca->tcp_cwnd = fp_min64((__u64)ca->tcp_cwnd + n, 0xffffffffULL);
		}
		if (ca->tcp_cwnd > cwnd)
			ca->cnt = fp_min(ca->cnt, cwnd / (ca->tcp_cwnd - cwnd));
	}
	ca->cnt = fp_max(ca->cnt, 2);
}

/* The ACK train's allowance for TSO/GRO, microseconds: 4 x 64 KiB at the rate Linux paces a
 * window at (cwnd x MSS / srtt, 200 % in slow start below ssthresh / 2, else 120 %), at most
 * 1 ms (fatpipe's hystart.rs ack_delay_us). srtt_us holds 8 x the smoothed RTT. */
static __always_inline __u64 ack_delay_us(struct tcp_sock *tp)
{
	__u64 srtt8 = tp->srtt_us;
	if (!srtt8)
		return 0;
	__u64 ratio = tp->snd_cwnd < tp->snd_ssthresh / 2 ? 200 : 120;
	__u64 segments = fp_max(tp->snd_cwnd, fp_in_flight(tp));
	__u64 den = (__u64)tp->mss_cache * segments * ratio * 8;
	if (!den)
		return 0;
	return fp_min64(65536ULL * 4 * 100 * srtt8 / den, 1000);
}

static __always_inline void hystart_update(struct sock *sk, struct cubic *ca, __u64 delay)
{
	struct tcp_sock *tp = tcp_sk(sk);
	if (ca->found || !fp_in_slow_start(tp))
		return;
	if (fp_after(tp->snd_una, ca->end_seq))
		hystart_reset(tp, ca);
	if (tp->snd_cwnd < hystart_low_window)
		return;
	__u64 now = tp->tcp_mstamp;
	if (hystart_detect & 1) {
		if (now - ca->last_ack_us <= hystart_ack_delta_us) {
			ca->last_ack_us = now;
			__u64 threshold = ca->delay_min_us + ack_delay_us(tp);
			if (!sk->sk_pacing_status)
				threshold >>= 1;
			if (now - ca->round_start_us > threshold) {
				ca->found = 1;
				tp->snd_ssthresh = tp->snd_cwnd;
			}
		}
	}
	if (hystart_detect & 2) {
		if (delay < ca->curr_rtt_us)
			ca->curr_rtt_us = delay;
		if (ca->sample_cnt < HYSTART_MIN_SAMPLES) {
			ca->sample_cnt++;
		} else {
			__u64 dm = ca->delay_min_us;
			__u64 slack = dm >> 3;
			if (slack < HYSTART_DELAY_MIN_US)
				slack = HYSTART_DELAY_MIN_US;
			if (slack > HYSTART_DELAY_MAX_US)
				slack = HYSTART_DELAY_MAX_US;
			if (ca->curr_rtt_us > dm + slack) {
				ca->found = 1;
				tp->snd_ssthresh = tp->snd_cwnd;
			}
		}
	}
}

FP_OP(void, fp_cubic_init, struct sock *, sk)
{
	struct cubic *ca = priv(sk);
	reset(ca);
	ca->found = 0;
	if (hystart)
		hystart_reset(tcp_sk(sk), ca);
}

FP_OP(__u32, fp_cubic_ssthresh, struct sock *, sk)
{
	struct cubic *ca = priv(sk);
	__u32 cwnd = tcp_sk(sk)->snd_cwnd;
	ca->have_epoch = 0;
	if (cwnd < ca->last_max_cwnd && fast_convergence)
		ca->last_max_cwnd = (__u64)cwnd * (BETA_SCALE + beta) / (2 * BETA_SCALE);
	else
		ca->last_max_cwnd = cwnd;
	return fp_max((__u64)cwnd * beta / BETA_SCALE, 2);
}

FP_OP(void, fp_cubic_cong_avoid, struct sock *, sk, __u32, ack, __u32, acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct cubic *ca = priv(sk);
	__u32 left = fp_slow_start_first(tp, acked);
	if (!left)
		return;
	update(ca, tp->snd_cwnd, left);
	tcp_cong_avoid_ai(tp, ca->cnt, left);
}

FP_OP(void, fp_cubic_set_state, struct sock *, sk, __u8, new_state)
{
	struct cubic *ca = priv(sk);
	if (!fp_core_transition(sk, new_state) || new_state != TCP_CA_Loss)
		return;
	reset(ca);
	if (hystart) {
		ca->found = 0;
		hystart_reset(tcp_sk(sk), ca);
	}
}

FP_OP(void, fp_cubic_cwnd_event, struct sock *, sk, int, ev)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct cubic *ca = priv(sk);
	if (ev != CA_EVENT_TX_START || !ca->have_epoch)
		return;
	__u64 now = bpf_jiffies64();
	__u32 idle = (__u32)now - tp->lsndtime;
	if ((__s32)idle > 0)
		ca->epoch_start = fp_min64(ca->epoch_start + idle, now);
}

FP_OP(void, fp_cubic_pkts_acked, struct sock *, sk, const struct ack_sample *, sample)
{
	struct cubic *ca = priv(sk);
	if (sample->rtt_us < 0)
		return;
	if (ca->have_epoch && bpf_jiffies64() - ca->epoch_start < kernel_hz)
		return;
	__u64 delay = sample->rtt_us > 0 ? sample->rtt_us : 1;
	if (ca->delay_min_us == 0 || ca->delay_min_us > delay)
		ca->delay_min_us = delay;
	if (hystart)
		hystart_update(sk, ca, delay);
}

FP_RENO_UNDO_CWND(fp_cubic_undo_cwnd)

SEC(".struct_ops")
struct tcp_congestion_ops fp_cubic = {
	.init = (void *)fp_cubic_init,
	.ssthresh = (void *)fp_cubic_ssthresh,
	.cong_avoid = (void *)fp_cubic_cong_avoid,
	.set_state = (void *)fp_cubic_set_state,
	.cwnd_event = (void *)fp_cubic_cwnd_event,
	.pkts_acked = (void *)fp_cubic_pkts_acked,
	.undo_cwnd = (void *)fp_cubic_undo_cwnd,
	.name = "fp_cubic",
};
