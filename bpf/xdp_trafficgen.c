// SPDX-License-Identifier: GPL-2.0
/* xdplab-trafficgen: the virtual lab's UDP generator (Contract 2).
 *
 * One sender thread per DUT RX queue, pinned to a CPU c with c % queues == q
 * (veth puts a frame sent by ndo_xdp_xmit on the peer RX queue
 * smp_processor_id() % real_num_rx_queues). Each thread runs
 * xdp_trafficgen.bpf.o through BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES:
 * the kernel builds `repeat` frames from one template, the program sets the
 * flow's UDP destination port and redirects the frame out of --dev.
 *
 * Every BPF_PROG_RUN of an XDP program with repeat > 1 adds the program to
 * the kernel's XDP dispatcher on entry and removes it on exit, and each
 * change waits for an RCU grace period (measured: ~25 ms per call on a
 * HZ=250 VM, more than the packet work itself). A dispatcher change is only
 * needed when the program's use count goes 0 <-> 1, so each sender runs
 * LANES_PER_SENDER threads on its CPU with the same program: their calls
 * overlap, the count never drops to 0, and the CPU is never left idle.
 *
 * With --rate the generator instead holds the program in the dispatcher for
 * its whole run: it attaches it (generic XDP) to a veth pair of its own,
 * KEEPER_PREFIX<pid>, which stays down and never carries a frame, so a call costs
 * tens of microseconds, and one lane per sender paces its frames:
 * - The program paces them (pace_frames, struct pace_state): frames leave
 *   in groups of at most PACE_GROUP_MAX (PACE_FLUSH_NS worth at the rate),
 *   each group waiting in the kernel for its slot on an absolute schedule;
 *   a call holds PACE_CALL_NS of the schedule, and the kernel flushes about
 *   every PACE_FLUSH_NS. Frames so reach the DUT evenly spaced. The CPU
 *   spins between groups (below 1 / PACE_FLUSH_NS frames/s a call is
 *   one frame and the lane sleeps between calls instead).
 *   Pacing only the calls from userspace was not enough: a call costs
 *   ~55 us, so above ~1 Mpps a lane fell behind, doubled its burst, and a
 *   burst went out at the generator's full speed (~16 Mpps here, faster
 *   than the DUT): the DUT's 256-frame veth ring overflowed before its NAPI
 *   thread was even running (1-4 % refused at 0.25-3 Mpps on an idle DUT,
 *   traced with xdp:xdp_devmap_xmit).
 * - With --latency-stamp, userspace paces small bursts (PACE_GAP_NS apart,
 *   at most --batch frames, as few as one): a stamped frame would otherwise
 *   wait in the kernel for the rest of its flush.
 * Without the keeper (no veth support) it falls back to the two-lane bursts.
 * --latency-stamp makes the program write a struct latency_stamp
 * (xdp_latency.h: magic, per-CPU sequence, bpf_ktime_get_ns()) into every
 * frame for xdp_latency_sink.bpf.c, and lets a paced burst be one frame, so
 * that at low rates the frames leave evenly spaced, not in PACE_MIN_BURST
 * bunches (each frame of a burst waits for the burst's flush: a stamped
 * frame's latency includes that wait; --batch bounds it).
 * --dst-list FILE / --src-list FILE (one IPv4 address a line, TG_MAX_ADDRS
 * at most) give each frame the next destination / source of the list: the
 * program walks it round robin from a per-CPU cursor (struct addr_cursor),
 * sender q starting at q * count / senders so that the senders do not send the
 * same address at once, and updates the IPv4 header checksum. Without a list
 * the program's list code is removed by the verifier (addr_lists is .rodata).
 * Prints one JSON line per second and a JSON summary on exit.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <ctype.h>
#include <limits.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/ip.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <linux/udp.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "xdp_latency.h"
#include "xdp_trafficgen.h"

#define XDPLAB_PROG_NAME "xdplab-trafficgen"
#include "common.h"

/* 0.2.0: --rate paced by the program; 0.3.0: a start record once every sender thread runs; 0.4.0: the Ethernet
 * and IPv4 headers written on every packet (frame_hdrs), not only once; 0.5.0: --dst-list and --src-list */
#define TRAFFICGEN_VERSION "0.5.0"
#define OBJ_NAME "xdp_trafficgen.bpf.o"
#define PROG_NAME "xdp_trafficgen"
#define CURSOR_MAP_NAME "flow_cursors"
#define EGRESS_VAR_NAME "egress_ifindex"
#define STAMP_VAR_NAME "stamp_latency"
#define PACE_VAR_NAME "pace_frames"
#define HDRS_VAR_NAME "frame_hdrs"
#define PACE_MAP_NAME "pace_states"
#define LISTS_VAR_NAME "addr_lists"
#define DST_LIST_MAP_NAME "dst_addrs"
#define SRC_LIST_MAP_NAME "src_addrs"
#define ADDR_CURSOR_MAP_NAME "addr_cursors"

#define MAX_BATCH 256    /* kernel limit for live frames (TEST_XDP_MAX_BATCH) */
#define MAX_QUEUES 64

/* Each BPF_PROG_RUN call should last about this long: long enough to
 * amortise the syscall, short enough to stop promptly on a signal.
 */
#define CALL_TARGET_NS (15 * NSEC_PER_MSEC)
#define CALL_MIN_NS (10 * NSEC_PER_MSEC)
#define CALL_MAX_NS (20 * NSEC_PER_MSEC)
#define REPEAT_START (1U << 15)
#define LANES_PER_SENDER 2
#define REPEAT_MAX (1U << 26)
/* Pacing (--rate): bursts this far apart (at most --batch frames, at least
 * PACE_MIN_BURST), sleeping until PACE_SPIN_NS before each, then spinning.
 */
#define PACE_GAP_NS (100 * 1000ULL)
#define PACE_MIN_BURST 8
#define PACE_SPIN_NS (20 * 1000ULL)
#define PACE_MAX_BURST (1U << 16)
/* Program pacing: each call holds this much of the schedule (stops on a
 * signal within it), and the kernel flushes the frames to the DUT at least
 * this often (the batch is this many frames at the rate, at most --batch).
 */
#define PACE_CALL_NS (2 * NSEC_PER_MSEC)
#define PACE_FLUSH_NS (50 * 1000ULL)
/* frames that leave together: the devmap's bulk (DEV_MAP_BULK_SIZE), which
 * reaches the DUT's ring in one ndo_xdp_xmit anyway
 */
#define PACE_GROUP_MAX 16
/* the senders' common schedule begins this long after it is set */
#define PACE_START_NS (2 * NSEC_PER_MSEC)
/* the veth pair that holds the program in the XDP dispatcher (never up),
 * named for this process (<prefix><pid>): generators may run side by side in
 * one network namespace; a pair whose process is gone is removed at start
 */
#define KEEPER_PREFIX "xdptgk"
#define KEEPER_PEER_PREFIX "xdptgp"

/* An address list (--dst-list, --src-list): network byte order, as the frame carries them. */
struct addr_list {
	const char *path;
	__u32 *addrs;
	unsigned int count;
};

struct config {
	const char *dev;
	int ifindex;
	__u8 src_mac[ETH_ALEN];
	__u8 dst_mac[ETH_ALEN];
	struct in_addr src_ip;
	struct in_addr dst_ip;
	unsigned int pkt_len;
	unsigned int flows;
	unsigned int port_base;
	unsigned int queues;
	unsigned int ncpus;
	int cpus[MAX_QUEUES];
	double duration;
	double rate_pps; /* total frames per second over all senders; 0: as fast as possible */
	unsigned int batch;
	bool latency_stamp; /* write struct latency_stamp into every frame */
	bool program_paced; /* the program spaces the frames (pace_frames), see the top */
	struct addr_list dst_list, src_list; /* --dst-list, --src-list; count 0: none */
	struct {
		__u32 group;   /* frames per group */
		__u32 batch;   /* frames per kernel flush, a multiple of group */
		__u32 call;    /* frames per BPF_PROG_RUN call */
		__u64 gap_ns;  /* between two groups of one sender */
		__u64 start_ns; /* CLOCK_MONOTONIC: the first group of every sender is due */
	} pace;
	const char *obj_path;
};

/* One sender: sends the flows of DUT queue `queue` from CPU `cpu`, with
 * LANES_PER_SENDER threads pinned to that CPU.
 */
struct sender {
	pthread_t lanes[LANES_PER_SENDER];
	unsigned int queue;
	int cpu;
	int prog_fd;
	int pace_fd; /* the program's pace_states (program pacing) */
	unsigned int nflows;
	const struct config *cfg;
	const void *frame;
	unsigned int frame_len;
	_Atomic unsigned long long sent;
	_Atomic unsigned int lanes_started;
	bool paced;                   /* one lane, paced: the keeper holds the dispatcher */
	unsigned long long last_sent; /* main thread only: for intervals */
	int err;                      /* errno of a failed BPF_PROG_RUN (or of err_what) */
	const char *err_what;         /* what failed when it was not BPF_PROG_RUN */
};

static volatile sig_atomic_t stop_signal;
static _Atomic bool stopping;

static void on_signal(int sig)
{
	stop_signal = sig;
	stopping = true;
}

#include "cli_args.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: xdplab-trafficgen --dev IFNAME --src-mac MAC --dst-mac MAC\n"
		"         --src-ip IP --dst-ip IP [--pkt-len 64] [--flows 1]\n"
		"         [--port-base 12] [--queues 1] [--cpus 0[,1..]]\n"
		"         [--duration 10] [--batch 64] [--rate PPS] [--latency-stamp]\n"
		"         [--dst-list FILE] [--src-list FILE] [--obj PATH]\n"
		"\n"
		"Sends UDP frames out of IFNAME (a veth) with BPF_PROG_RUN live frames.\n"
		"Flow i: UDP 9 -> port-base + i, sent by the thread of queue i %% queues;\n"
		"the thread of queue q runs on the q-th CPU of --cpus, which must\n"
		"satisfy cpu %% queues == q. --pkt-len counts the FCS (64..1518).\n"
		"--rate caps the total rate (frames/s, split evenly over the senders;\n"
		"0 or absent: as fast as possible).\n"
		"--latency-stamp writes magic, sequence and CLOCK_MONOTONIC time into\n"
		"the UDP payload of every frame (read by xdp_latency_sink.bpf.o).\n"
		"--dst-list / --src-list FILE: one IPv4 address a line (at most %d;\n"
		"blank lines and lines starting with # are skipped): each frame takes\n"
		"the next address of the list, round robin (--dst-ip / --src-ip are\n"
		"then optional).\n"
		"Prints JSON lines: one per second, a summary on exit.\n", TG_MAX_ADDRS);
}

static void parse_cpus(const char *s, struct config *cfg)
{
	long ncpu_conf = sysconf(_SC_NPROCESSORS_CONF);
	char *copy = strdup(s), *tok, *save = NULL;

	if (!copy)
		die("out of memory");
	cfg->ncpus = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (cfg->ncpus == MAX_QUEUES)
			die("--cpus: more than %d CPUs", MAX_QUEUES);
		cfg->cpus[cfg->ncpus++] = parse_uint("cpus", tok, 0, ncpu_conf - 1);
	}
	free(copy);
	if (!cfg->ncpus)
		die("--cpus: give at least one CPU");
}

/* Read an address list: one IPv4 address a line; blank lines and # comments are skipped. */
static void read_list(const char *opt, struct addr_list *list)
{
	FILE *f = fopen(list->path, "r");
	char line[128], *start, *end;
	unsigned int lineno = 0, cap = 0;
	struct in_addr ip;

	if (!f)
		die("--%s %s: %s", opt, list->path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f))
			die("--%s %s line %u is too long for an IPv4 address", opt, list->path, lineno);
		for (start = line; isspace((unsigned char)*start); start++)
			;
		for (end = start + strlen(start); end > start && isspace((unsigned char)end[-1]); end--)
			;
		*end = '\0';
		if (!*start || *start == '#')
			continue;
		if (inet_pton(AF_INET, start, &ip) != 1)
			die("--%s %s line %u: '%s' is not an IPv4 address (one address a line, like 198.18.0.2)", opt,
			    list->path, lineno, start);
		if (list->count == TG_MAX_ADDRS)
			die("--%s %s has more than %d addresses: the program's map holds %d", opt, list->path,
			    TG_MAX_ADDRS, TG_MAX_ADDRS);
		if (list->count == cap) {
			cap = cap ? cap * 2 : 1024;
			list->addrs = realloc(list->addrs, cap * sizeof(*list->addrs));
			if (!list->addrs)
				die("out of memory");
		}
		list->addrs[list->count++] = ip.s_addr;
	}
	if (ferror(f))
		die("--%s %s: %s", opt, list->path, strerror(errno));
	fclose(f);
	if (!list->count)
		die("--%s %s has no address: give one IPv4 address a line", opt, list->path);
}

static void parse_args(int argc, char **argv, struct config *cfg)
{
	enum { OPT_DEV = 1, OPT_SRC_MAC, OPT_DST_MAC, OPT_SRC_IP, OPT_DST_IP, OPT_PKT_LEN,
	       OPT_FLOWS, OPT_PORT_BASE, OPT_QUEUES, OPT_CPUS, OPT_DURATION, OPT_BATCH,
	       OPT_RATE, OPT_LATENCY_STAMP, OPT_OBJ, OPT_HELP, OPT_DST_LIST, OPT_SRC_LIST };
	static const struct option opts[] = {
		{ "dev", required_argument, NULL, OPT_DEV },
		{ "src-mac", required_argument, NULL, OPT_SRC_MAC },
		{ "dst-mac", required_argument, NULL, OPT_DST_MAC },
		{ "src-ip", required_argument, NULL, OPT_SRC_IP },
		{ "dst-ip", required_argument, NULL, OPT_DST_IP },
		{ "pkt-len", required_argument, NULL, OPT_PKT_LEN },
		{ "flows", required_argument, NULL, OPT_FLOWS },
		{ "port-base", required_argument, NULL, OPT_PORT_BASE },
		{ "queues", required_argument, NULL, OPT_QUEUES },
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "batch", required_argument, NULL, OPT_BATCH },
		{ "rate", required_argument, NULL, OPT_RATE },
		{ "latency-stamp", no_argument, NULL, OPT_LATENCY_STAMP },
		{ "obj", required_argument, NULL, OPT_OBJ },
		{ "dst-list", required_argument, NULL, OPT_DST_LIST },
		{ "src-list", required_argument, NULL, OPT_SRC_LIST },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	bool have_src_mac = false, have_dst_mac = false, have_src_ip = false, have_dst_ip = false;
	const char *cpus = "0";
	char *end;
	int opt;

	*cfg = (struct config){ .pkt_len = MIN_PKT_LEN, .flows = 1, .port_base = 12,
				.queues = 1, .duration = 10, .batch = 64 };
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case OPT_DEV: cfg->dev = optarg; break;
		case OPT_SRC_MAC: parse_mac("src-mac", optarg, cfg->src_mac); have_src_mac = true; break;
		case OPT_DST_MAC: parse_mac("dst-mac", optarg, cfg->dst_mac); have_dst_mac = true; break;
		case OPT_SRC_IP: parse_ip("src-ip", optarg, &cfg->src_ip); have_src_ip = true; break;
		case OPT_DST_IP: parse_ip("dst-ip", optarg, &cfg->dst_ip); have_dst_ip = true; break;
		case OPT_PKT_LEN:
			errno = 0;
			cfg->pkt_len = parse_uint("pkt-len", optarg, 0, UINT_MAX);
			if (cfg->pkt_len < MIN_PKT_LEN || cfg->pkt_len > MAX_PKT_LEN)
				die("--pkt-len %u is out of range %d..%d (frame length on the wire including the 4-byte FCS)",
				    cfg->pkt_len, MIN_PKT_LEN, MAX_PKT_LEN);
			break;
		case OPT_FLOWS: cfg->flows = parse_uint("flows", optarg, 1, MAX_PORT); break;
		case OPT_PORT_BASE: cfg->port_base = parse_uint("port-base", optarg, 1, MAX_PORT); break;
		case OPT_QUEUES: cfg->queues = parse_uint("queues", optarg, 1, MAX_QUEUES); break;
		case OPT_CPUS: cpus = optarg; break;
		case OPT_DURATION:
			errno = 0;
			cfg->duration = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(cfg->duration > 0))
				die("--duration: '%s' is not a positive number of seconds", optarg);
			break;
		case OPT_BATCH: cfg->batch = parse_uint("batch", optarg, 1, MAX_BATCH); break;
		case OPT_RATE:
			errno = 0;
			cfg->rate_pps = strtod(optarg, &end);
			if (errno || end == optarg || *end || cfg->rate_pps < 0)
				die("--rate: '%s' is not a rate in frames per second (0: as fast as possible)", optarg);
			break;
		case OPT_LATENCY_STAMP: cfg->latency_stamp = true; break;
		case OPT_OBJ: cfg->obj_path = optarg; break;
		case OPT_DST_LIST: cfg->dst_list.path = optarg; break;
		case OPT_SRC_LIST: cfg->src_list.path = optarg; break;
		case OPT_HELP: usage(stdout); exit(EXIT_SUCCESS);
		default: usage(stderr); exit(EXIT_FAILURE);
		}
	}
	if (optind < argc)
		die("unexpected argument '%s' (see --help)", argv[optind]);
	if (!cfg->dev)
		die("--dev IFNAME is required");
	if (cfg->latency_stamp && cfg->pkt_len - FCS_LEN < TG_HDRS_LEN + sizeof(struct latency_stamp))
		die("--latency-stamp needs --pkt-len >= %zu (headers + the %zu-byte stamp + FCS)",
		    TG_HDRS_LEN + sizeof(struct latency_stamp) + FCS_LEN, sizeof(struct latency_stamp));
	if (cfg->dst_list.path) {
		read_list("dst-list", &cfg->dst_list);
		if (!have_dst_ip)
			cfg->dst_ip.s_addr = cfg->dst_list.addrs[0];
		have_dst_ip = true;
	}
	if (cfg->src_list.path) {
		read_list("src-list", &cfg->src_list);
		if (!have_src_ip)
			cfg->src_ip.s_addr = cfg->src_list.addrs[0];
		have_src_ip = true;
	}
	if (!have_src_mac || !have_dst_mac || !have_src_ip || !have_dst_ip)
		die("--src-mac, --dst-mac, --src-ip (or --src-list) and --dst-ip (or --dst-list) are required");
	if (cfg->port_base + cfg->flows - 1 > MAX_PORT)
		die("--port-base %u + --flows %u exceeds UDP port %d", cfg->port_base, cfg->flows, MAX_PORT);
	cfg->ifindex = if_nametoindex(cfg->dev);
	if (!cfg->ifindex)
		die("unknown interface '%s' in this network namespace", cfg->dev);
	parse_cpus(cpus, cfg);
}

/* Check the CPU list against the queues: thread q runs on cpus[q], which
 * must map to DUT queue q, and every queue that has a flow needs a thread.
 */
static void check_cpus(const struct config *cfg)
{
	unsigned int active = cfg->flows < cfg->queues ? cfg->flows : cfg->queues;
	unsigned int q;

	if (cfg->ncpus > cfg->queues)
		die("--cpus lists %u CPUs but --queues is %u: give at most one CPU per queue",
		    cfg->ncpus, cfg->queues);
	if (cfg->ncpus < active)
		die("--cpus lists %u CPUs but %u queues have flows (--flows %u, --queues %u): give one CPU per queue",
		    cfg->ncpus, active, cfg->flows, cfg->queues);
	for (q = 0; q < cfg->ncpus; q++) {
		if ((unsigned int)cfg->cpus[q] % cfg->queues != q)
			die("CPU %d cannot send queue %u's flows: veth delivers to RX queue cpu %% queues = %u; "
			    "the q-th CPU of --cpus must satisfy cpu %% %u == q",
			    cfg->cpus[q], q, cfg->cpus[q] % cfg->queues, cfg->queues);
	}
}

/* Keep the main thread (it prints once a second) on the senders' CPUs: off
 * the DUT's, whatever CPUs the caller let this process run on.
 */
static void pin_main_thread(const struct config *cfg)
{
	cpu_set_t set;
	unsigned int q;

	CPU_ZERO(&set);
	for (q = 0; q < cfg->ncpus; q++)
		CPU_SET(cfg->cpus[q], &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("cannot run on the CPUs of --cpus: %s", strerror(errno));
}

/* The template frame: Ethernet, IPv4, UDP 9 -> port-base, zero payload. */
static void *build_frame(const struct config *cfg, unsigned int *frame_len)
{
	unsigned int len = cfg->pkt_len - FCS_LEN;
	struct ethhdr *eth;
	struct iphdr *ip;
	struct udphdr *udp;
	__u8 *frame;

	frame = calloc(1, len);
	if (!frame)
		die("out of memory");
	eth = (struct ethhdr *)frame;
	memcpy(eth->h_dest, cfg->dst_mac, ETH_ALEN);
	memcpy(eth->h_source, cfg->src_mac, ETH_ALEN);
	eth->h_proto = htons(ETH_P_IP);

	ip = (struct iphdr *)(frame + TG_ETH_LEN);
	ip->version = 4;
	ip->ihl = TG_IPV4_LEN / 4;
	ip->tot_len = htons(len - TG_ETH_LEN);
	ip->ttl = IP_TTL_DEFAULT;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = cfg->src_ip.s_addr;
	ip->daddr = cfg->dst_ip.s_addr;
	ip->check = ipv4_checksum(ip, TG_IPV4_LEN);

	udp = (struct udphdr *)(frame + TG_UDP_OFFSET);
	udp->source = htons(TG_UDP_SRC_PORT);
	udp->dest = htons(cfg->port_base);
	udp->len = htons(len - TG_ETH_LEN - TG_IPV4_LEN);
	udp->check = 0; /* no checksum: the port changes per packet */

	*frame_len = len;
	return frame;
}

/* --obj, else next to the binary (bpf/build/), else ../lib/bpf/. */
static const char *find_obj(const struct config *cfg, char *buf, size_t size)
{
	char exe[PATH_MAX], *slash;
	ssize_t n;

	if (cfg->obj_path) {
		if (access(cfg->obj_path, R_OK))
			die("--obj %s: %s", cfg->obj_path, strerror(errno));
		return cfg->obj_path;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		die("cannot find my own path to look for %s: %s (use --obj)", OBJ_NAME, strerror(errno));
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	if ((size_t)snprintf(buf, size, "%s/%s", exe, OBJ_NAME) < size && !access(buf, R_OK))
		return buf;
	if ((size_t)snprintf(buf, size, "%s/../lib/bpf/%s", exe, OBJ_NAME) < size && !access(buf, R_OK))
		return buf;
	die("cannot find %s in %s/ or %s/../lib/bpf/ (use --obj PATH)", OBJ_NAME, exe, exe);
	return NULL;
}

static void *percpu_values(size_t value_size, int *ncpus);

/* The address maps hold the lists' lengths (1 entry when a list is not used: its code is gone anyway). An object
 * older than the lists has no such maps, which is fine unless a list is given. */
static void size_lists(struct bpf_object *obj, const struct config *cfg, const char *path)
{
	const struct addr_list *lists[] = { &cfg->dst_list, &cfg->src_list };
	const char *names[] = { DST_LIST_MAP_NAME, SRC_LIST_MAP_NAME };
	struct bpf_map *map;
	int i;

	for (i = 0; i < 2; i++) {
		map = bpf_object__find_map_by_name(obj, names[i]);
		if (!map) {
			if (lists[i]->count)
				die("%s lacks map %s: an object older than --dst-list (rebuild bpf/)", path, names[i]);
			continue;
		}
		if (bpf_map__set_max_entries(map, lists[i]->count ? lists[i]->count : 1))
			die("cannot size map %s for %u addresses", names[i], lists[i]->count);
	}
}

/* Fill the address maps and give each sender's CPU its start in the lists: sender q of n at q * count / n. */
static void set_lists(struct bpf_object *obj, const struct config *cfg, struct sender *senders)
{
	const struct addr_list *lists[] = { &cfg->dst_list, &cfg->src_list };
	const char *names[] = { DST_LIST_MAP_NAME, SRC_LIST_MAP_NAME };
	struct addr_cursor *vals;
	struct bpf_map *map;
	int ncpus, i, fd;
	unsigned int q;
	__u32 key;

	if (!cfg->dst_list.count && !cfg->src_list.count)
		return;
	for (i = 0; i < 2; i++) {
		if (!lists[i]->count)
			continue;
		fd = bpf_map__fd(bpf_object__find_map_by_name(obj, names[i]));
		for (key = 0; key < lists[i]->count; key++) {
			if (bpf_map_update_elem(fd, &key, &lists[i]->addrs[key], BPF_ANY))
				die("cannot fill map %s: %s", names[i], strerror(errno));
		}
	}
	map = bpf_object__find_map_by_name(obj, ADDR_CURSOR_MAP_NAME);
	if (!map)
		die("the generator object lacks map %s (rebuild bpf/)", ADDR_CURSOR_MAP_NAME);
	vals = percpu_values(sizeof(*vals), &ncpus);
	for (q = 0; q < cfg->ncpus; q++) {
		struct addr_cursor *c = &vals[senders[q].cpu];

		c->dst_count = cfg->dst_list.count;
		c->dst_next = (__u32)((unsigned long long)q * cfg->dst_list.count / cfg->ncpus);
		c->src_count = cfg->src_list.count;
		c->src_next = (__u32)((unsigned long long)q * cfg->src_list.count / cfg->ncpus);
	}
	key = 0;
	if (bpf_map_update_elem(bpf_map__fd(map), &key, vals, BPF_ANY))
		die("cannot set the address cursors: %s", strerror(errno));
	free(vals);
}

/* Open and load the generator program with egress_ifindex, stamp_latency, pace_frames and the frame's headers
 * (frame_hdrs) set. */
static struct bpf_object *load_obj(const struct config *cfg, const void *frame, int *prog_fd, int *cursor_fd)
{
	struct bpf_program *prog;
	struct bpf_object *obj;
	struct bpf_map *map;
	char path_buf[PATH_MAX];
	const char *path = find_obj(cfg, path_buf, sizeof(path_buf));
	bool set = false, stamp_set = false, pace_set = false, hdrs_set = false, lists_set = false;
	__u32 lists = (cfg->dst_list.count ? TG_LIST_DST : 0) | (cfg->src_list.count ? TG_LIST_SRC : 0);
	int err;

	obj = bpf_object__open_file(path, NULL);
	if (!obj)
		die("cannot open %s: %s", path, strerror(errno));
	/* .rodata is an internal map named "<obj prefix>.rodata". */
	bpf_object__for_each_map(map, obj) {
		const struct btf *btf = bpf_object__btf(obj);
		const char *name = bpf_map__name(map);
		const struct btf_var_secinfo *vs;
		const struct btf_type *sec;
		size_t size, len = strlen(name);
		const void *init;
		__u8 *data;
		int sec_id, i;

		if (!bpf_map__is_internal(map) || len < 7 || strcmp(name + len - 7, ".rodata"))
			continue;
		init = bpf_map__initial_value(map, &size);
		sec_id = btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC);
		if (!init || sec_id < 0)
			break;
		data = malloc(size);
		if (!data)
			die("out of memory");
		memcpy(data, init, size);
		sec = btf__type_by_id(btf, sec_id);
		vs = btf_var_secinfos(sec);
		for (i = 0; i < btf_vlen(sec); i++, vs++) {
			const struct btf_type *var = btf__type_by_id(btf, vs->type);

			if (!strcmp(btf__name_by_offset(btf, var->name_off), EGRESS_VAR_NAME) &&
			    vs->offset + sizeof(__u32) <= size) {
				*(__u32 *)(data + vs->offset) = cfg->ifindex;
				set = true;
			}
			if (!strcmp(btf__name_by_offset(btf, var->name_off), STAMP_VAR_NAME) &&
			    vs->offset + sizeof(__u32) <= size) {
				*(__u32 *)(data + vs->offset) = cfg->latency_stamp;
				stamp_set = true;
			}
			if (!strcmp(btf__name_by_offset(btf, var->name_off), PACE_VAR_NAME) &&
			    vs->offset + sizeof(__u32) <= size) {
				*(__u32 *)(data + vs->offset) = cfg->program_paced;
				pace_set = true;
			}
			if (!strcmp(btf__name_by_offset(btf, var->name_off), LISTS_VAR_NAME) &&
			    vs->offset + sizeof(__u32) <= size) {
				*(__u32 *)(data + vs->offset) = lists;
				lists_set = true;
			}
			if (!strcmp(btf__name_by_offset(btf, var->name_off), HDRS_VAR_NAME) &&
			    vs->size == TG_ETH_LEN + TG_IPV4_LEN && vs->offset + vs->size <= size) {
				memcpy(data + vs->offset, frame, TG_ETH_LEN + TG_IPV4_LEN);
				hdrs_set = true;
			}
		}
		if (set && bpf_map__set_initial_value(map, data, size))
			die("cannot set %s in %s", EGRESS_VAR_NAME, path);
		free(data);
	}
	if (!set)
		die("%s has no .rodata variable %s: not the xdplab generator object?", path, EGRESS_VAR_NAME);
	if (cfg->latency_stamp && !stamp_set)
		die("%s has no .rodata variable %s: an object older than --latency-stamp (rebuild bpf/)", path,
		    STAMP_VAR_NAME);
	if (!hdrs_set)
		die("%s has no .rodata variable %s of %d bytes: an object older than 0.4.0 (rebuild bpf/)", path,
		    HDRS_VAR_NAME, TG_ETH_LEN + TG_IPV4_LEN);
	if (cfg->program_paced && !pace_set)
		die("%s has no .rodata variable %s: an object older than program pacing (rebuild bpf/)", path,
		    PACE_VAR_NAME);
	if (lists && !lists_set)
		die("%s has no .rodata variable %s: an object older than --dst-list (rebuild bpf/)", path, LISTS_VAR_NAME);
	size_lists(obj, cfg, path);
	err = bpf_object__load(obj);
	if (err)
		die("cannot load %s: %s (needs root/CAP_BPF and a kernel with BPF_PROG_RUN live frames, >= 5.18)",
		    path, strerror(-err));
	prog = bpf_object__find_program_by_name(obj, PROG_NAME);
	map = bpf_object__find_map_by_name(obj, CURSOR_MAP_NAME);
	if (!prog || !map)
		die("%s lacks program %s or map %s", path, PROG_NAME, CURSOR_MAP_NAME);
	*prog_fd = bpf_program__fd(prog);
	*cursor_fd = bpf_map__fd(map);
	return obj;
}

/* A NIC driver (virtio_net, i40e, ...) takes redirected frames through ndo_xdp_xmit only while an XDP program is
 * attached to it (virtio_net: -ENXIO otherwise); veth wants one on its peer instead (the DUT's), so this is for a
 * device with a bus device (/sys/class/net/DEV/device) only. When such a device has no XDP program, the object's
 * pass-through program is attached to it through a BPF link for the run: the kernel detaches it when the generator
 * exits, however it exits. Returns the link, or NULL when none was needed. */
#define EGRESS_PROG_NAME "xdp_trafficgen_egress"
static struct bpf_link *hold_egress(struct bpf_object *obj, const struct config *cfg)
{
	char path[PATH_MAX];
	struct bpf_program *prog;
	struct bpf_link *link;
	struct stat st;
	__u32 id = 0;

	snprintf(path, sizeof(path), "/sys/class/net/%s/device", cfg->dev);
	if (stat(path, &st))
		return NULL;
	if (!bpf_xdp_query_id(cfg->ifindex, 0, &id) && id)
		return NULL;
	prog = bpf_object__find_program_by_name(obj, EGRESS_PROG_NAME);
	if (!prog)
		die("the generator object lacks program %s, which %s needs attached to send (rebuild bpf/)",
		    EGRESS_PROG_NAME, cfg->dev);
	link = bpf_program__attach_xdp(prog, cfg->ifindex);
	if (!link)
		die("cannot attach %s to %s (%s): its driver sends redirected frames only with an XDP program attached",
		    EGRESS_PROG_NAME, cfg->dev, strerror(errno));
	return link;
}

/* A zeroed array of one per-CPU map value for every possible CPU (what a
 * BPF_MAP_TYPE_PERCPU_ARRAY lookup or update takes); *ncpus is its length.
 */
static void *percpu_values(size_t value_size, int *ncpus)
{
	void *vals;

	*ncpus = libbpf_num_possible_cpus();
	if (*ncpus < 0)
		die("cannot count possible CPUs: %s", strerror(-*ncpus));
	vals = calloc(*ncpus, value_size);
	if (!vals)
		die("out of memory");
	return vals;
}

/* Per-CPU pacing (program pacing): the CPU of queue q's thread sends a group
 * every gap_ns, its share of --rate, the first at pace.start_ns.
 */
static void set_pacing(const struct config *cfg, int pace_fd, struct sender *senders)
{
	int ncpus;
	struct pace_state *vals = percpu_values(sizeof(*vals), &ncpus);
	__u32 key = 0;
	unsigned int q;

	for (q = 0; q < cfg->ncpus; q++) {
		vals[senders[q].cpu].gap_ns = cfg->pace.gap_ns;
		vals[senders[q].cpu].group_frames = cfg->pace.group;
		/* the program's schedule is the lanes': bpf_ktime_get_ns() is CLOCK_MONOTONIC too */
		vals[senders[q].cpu].next_ns = cfg->pace.start_ns;
	}
	if (bpf_map_update_elem(pace_fd, &key, vals, BPF_ANY))
		die("cannot set the pacing: %s", strerror(errno));
	free(vals);
}

/* Seconds of schedule the senders dropped, in all (struct pace_state's dropped_ns). */
static double pacing_dropped_s(int pace_fd)
{
	int ncpus, cpu;
	struct pace_state *vals;
	double total = 0;
	__u32 key = 0;

	if (pace_fd < 0)
		return 0;
	vals = percpu_values(sizeof(*vals), &ncpus);
	if (!bpf_map_lookup_elem(pace_fd, &key, vals)) {
		for (cpu = 0; cpu < ncpus; cpu++)
			total += vals[cpu].dropped_ns / 1e9;
	}
	free(vals);
	return total;
}

/* Per-CPU cursors: the CPU of queue q's thread walks ports
 * port_base + q, port_base + q + queues, ... (flows i with i % queues == q).
 */
static void set_cursors(const struct config *cfg, int cursor_fd, struct sender *senders)
{
	int ncpus;
	struct flow_cursor *vals = percpu_values(sizeof(*vals), &ncpus);
	__u32 key = 0;
	unsigned int q;

	for (q = 0; q < cfg->ncpus; q++) {
		struct flow_cursor *c = &vals[senders[q].cpu];

		c->nflows = senders[q].nflows;
		c->first_port = cfg->port_base + q;
		c->port = c->first_port;
		c->stride = cfg->queues;
	}
	if (bpf_map_update_elem(cursor_fd, &key, vals, BPF_ANY))
		die("cannot set flow cursors: %s", strerror(errno));
	free(vals);
}

/* Pick the next repeat so that the packet work of one call lasts about
 * CALL_TARGET_NS. The kernel reports the work time per packet in
 * opts.duration; the call's fixed cost (the XDP dispatcher update and its RCU
 * grace periods on entry and exit) is not proportional to repeat, so it is
 * left out of the estimate.
 */
static __u32 next_repeat(__u32 repeat, __u32 ns_per_pkt, unsigned int batch)
{
	unsigned long long work_ns = (unsigned long long)repeat * ns_per_pkt, want;

	if (work_ns >= CALL_MIN_NS && work_ns <= CALL_MAX_NS)
		return repeat;
	want = CALL_TARGET_NS / (ns_per_pkt ? ns_per_pkt : 1);
	if (want > REPEAT_MAX)
		want = REPEAT_MAX;
	want -= want % batch;
	return want < batch ? batch : want;
}

/* With a rate cap: how many frames this lane may send now (what its share
 * allows so far, a multiple of batch, at most `repeat`), or 0 after sleeping
 * until the share allows one batch more. A call costs a fixed ~25 ms of RCU
 * waiting on top of the packet work, so at low rates the frames leave in
 * bursts of about 25 ms worth of the lane's share, two lanes interleaved.
 */
static __u32 paced_repeat(__u32 repeat, double lane_rate, unsigned long long lane_sent,
			  unsigned long long elapsed_ns, unsigned int batch)
{
	double allowed = lane_rate * elapsed_ns / NSEC_PER_SEC - (double)lane_sent;
	unsigned long long ahead, wait_ns;
	struct timespec ts;
	__u32 n;

	if (allowed >= batch) {
		n = allowed < repeat ? (__u32)allowed : repeat;
		return n - n % batch;
	}
	ahead = (unsigned long long)(batch - allowed);
	wait_ns = (unsigned long long)(ahead * NSEC_PER_SEC / lane_rate);
	ts.tv_sec = wait_ns / NSEC_PER_SEC;
	ts.tv_nsec = wait_ns % NSEC_PER_SEC;
	nanosleep(&ts, NULL);
	return 0;
}

/* ---- the dispatcher keeper: a down veth pair with the program attached ---- */

static void nl_attr(struct nlmsghdr *nh, unsigned short type, const void *data, unsigned short len)
{
	struct rtattr *rta = (struct rtattr *)((char *)nh + NLMSG_ALIGN(nh->nlmsg_len));

	rta->rta_type = type;
	rta->rta_len = RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(rta), data, len);
	nh->nlmsg_len = NLMSG_ALIGN(nh->nlmsg_len) + RTA_ALIGN(rta->rta_len);
}

static struct rtattr *nl_nest(struct nlmsghdr *nh, unsigned short type)
{
	struct rtattr *nest = (struct rtattr *)((char *)nh + NLMSG_ALIGN(nh->nlmsg_len));

	nl_attr(nh, type, NULL, 0);
	return nest;
}

static void nl_nest_end(struct nlmsghdr *nh, struct rtattr *nest)
{
	nest->rta_len = (char *)nh + nh->nlmsg_len - (char *)nest;
}

/* Send one rtnetlink request, wait for its ack: 0 or -errno. */
static int nl_request(struct nlmsghdr *nh)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	char buf[4096];
	ssize_t n;
	int fd, err;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	nh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	if (sendto(fd, nh, nh->nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
	} else {
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0)
			err = -errno;
		else if (n >= (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) &&
			 ((struct nlmsghdr *)buf)->nlmsg_type == NLMSG_ERROR)
			err = ((struct nlmsgerr *)NLMSG_DATA((struct nlmsghdr *)buf))->error;
		else
			err = 0;
	}
	close(fd);
	return err;
}

struct nl_link_req {
	struct nlmsghdr nh;
	struct ifinfomsg ifi;
	char attrs[256];
};

static char keeper_if[IF_NAMESIZE], keeper_peer[IF_NAMESIZE];

static int keeper_del(const char *name)
{
	struct nl_link_req req = { .nh = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg)),
					   .nlmsg_type = RTM_DELLINK },
				   .ifi = { .ifi_family = AF_UNSPEC } };

	nl_attr(&req.nh, IFLA_IFNAME, name, strlen(name) + 1);
	return nl_request(&req.nh);
}

/* Remove the keepers of generators that are gone (killed before they could). */
static void keeper_del_stale(void)
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	size_t len = strlen(KEEPER_PREFIX);
	char *end;
	long pid;

	if (!ifs)
		return;
	for (i = ifs; i->if_index; i++) {
		if (strncmp(i->if_name, KEEPER_PREFIX, len))
			continue;
		pid = strtol(i->if_name + len, &end, 10);
		if (*end || pid <= 0 || (kill((pid_t)pid, 0) && errno == ESRCH))
			keeper_del(i->if_name);
	}
	if_freenameindex(ifs);
}

static int keeper_add(void)
{
	struct nl_link_req req = { .nh = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg)),
					   .nlmsg_type = RTM_NEWLINK,
					   .nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL },
				   .ifi = { .ifi_family = AF_UNSPEC } };
	struct ifinfomsg peer = { .ifi_family = AF_UNSPEC };
	struct rtattr *linkinfo, *data, *peer_nest;

	nl_attr(&req.nh, IFLA_IFNAME, keeper_if, strlen(keeper_if) + 1);
	linkinfo = nl_nest(&req.nh, IFLA_LINKINFO);
	nl_attr(&req.nh, IFLA_INFO_KIND, "veth", sizeof("veth"));
	data = nl_nest(&req.nh, IFLA_INFO_DATA);
	peer_nest = nl_nest(&req.nh, VETH_INFO_PEER);
	/* the peer's payload: its ifinfomsg, then its attributes */
	memcpy((char *)&req.nh + req.nh.nlmsg_len, &peer, sizeof(peer));
	req.nh.nlmsg_len += NLMSG_ALIGN(sizeof(peer));
	nl_attr(&req.nh, IFLA_IFNAME, keeper_peer, strlen(keeper_peer) + 1);
	nl_nest_end(&req.nh, peer_nest);
	nl_nest_end(&req.nh, data);
	nl_nest_end(&req.nh, linkinfo);
	return nl_request(&req.nh);
}

/* Hold the program in the XDP dispatcher for the whole run (see the top
 * comment); false, after a warning, when that is not possible here.
 */
static bool hold_dispatcher(int prog_fd)
{
	int err, ifindex;

	snprintf(keeper_if, sizeof(keeper_if), KEEPER_PREFIX "%d", (int)getpid());
	snprintf(keeper_peer, sizeof(keeper_peer), KEEPER_PEER_PREFIX "%d", (int)getpid());
	keeper_del_stale();
	err = keeper_add();
	if (err) {
		fprintf(stderr, "xdplab-trafficgen: warning: cannot create %s (%s): --rate sends 25 ms bursts\n",
			keeper_if, strerror(-err));
		return false;
	}
	ifindex = if_nametoindex(keeper_if);
	err = ifindex ? bpf_xdp_attach(ifindex, prog_fd, XDP_FLAGS_SKB_MODE, NULL) : -ENODEV;
	if (err) {
		fprintf(stderr, "xdplab-trafficgen: warning: cannot attach to %s (%s): --rate sends 25 ms bursts\n",
			keeper_if, strerror(-err));
		keeper_del(keeper_if);
		return false;
	}
	return true;
}

/* Sleep until PACE_SPIN_NS before t (CLOCK_MONOTONIC ns), then spin to t. */
static void wait_until(unsigned long long t)
{
	unsigned long long now = now_ns();
	struct timespec ts;

	if (now + PACE_SPIN_NS < t) {
		ts.tv_sec = (t - PACE_SPIN_NS) / NSEC_PER_SEC;
		ts.tv_nsec = (t - PACE_SPIN_NS) % NSEC_PER_SEC;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	while (!stopping && now_ns() < t)
		;
}

/* One lane sends the sender's whole share of --rate in bursts, burst i
 * starting when the share allows it (start + sent / rate): even spacing, no
 * drift. A call costs ~55 us plus ~0.5 us per frame here (its page pool is
 * new each call), so one lane of small bursts tops out near 1 Mpps: a lane
 * that falls behind its schedule doubles its burst (the kernel still flushes
 * every --batch frames), one that has to wait shrinks it back.
 */
static void paced_loop(struct sender *s, struct bpf_test_run_opts *opts)
{
	double rate = s->cfg->rate_pps / (double)s->cfg->ncpus;
	double want = rate * PACE_GAP_NS / NSEC_PER_SEC;
	__u32 min_burst = s->cfg->latency_stamp ? 1 : PACE_MIN_BURST;
	__u32 base = want > s->cfg->batch ? s->cfg->batch : want < min_burst ? min_burst : (__u32)want;
	__u32 burst = base;
	unsigned long long start, due, now, sent = 0;

	prctl(PR_SET_TIMERSLACK, 1UL);
	start = now_ns();
	while (!stopping) {
		due = start + (unsigned long long)(sent * (double)NSEC_PER_SEC / rate);
		now = now_ns();
		if (now < due) {
			if (burst > base && due - now > (unsigned long long)(burst * (double)NSEC_PER_SEC / rate) / 2)
				burst = burst * 3 / 4 > base ? burst * 3 / 4 : base;
			wait_until(due);
			if (stopping)
				break;
		} else if (now - due > 2 * (unsigned long long)(burst * (double)NSEC_PER_SEC / rate) &&
			   burst < PACE_MAX_BURST) {
			burst *= 2;
		}
		opts->repeat = burst;
		if (bpf_prog_test_run_opts(s->prog_fd, opts)) {
			s->err = errno;
			stopping = true;
			break;
		}
		s->sent += burst;
		sent += burst;
	}
}

/* How the program paces one sender's share of --rate (see the top comment).
 * Below one frame per PACE_FLUSH_NS a call is one frame and this lane
 * sleeps until it is due, so the program hardly waits and the CPU is free in
 * between. Above, calls hold PACE_CALL_NS of groups the program spaces by
 * spinning: small calls cost ~2 us per frame here (each call's page pool is
 * new) and a sleeping lane woke 0.2-1 ms late, so sleeping between calls of
 * a few dozen frames lost up to 10 % of the rate at 0.25 Mpps.
 */
static void plan_pacing(struct config *cfg)
{
	double rate = cfg->rate_pps / (double)cfg->ncpus;
	double per_flush = rate * PACE_FLUSH_NS / NSEC_PER_SEC, per_call = rate * PACE_CALL_NS / NSEC_PER_SEC;
	__u32 group, groups_per_flush;

	if (per_flush < 1) {
		cfg->pace.group = 1;
		cfg->pace.batch = 1;
		cfg->pace.call = 1;
	} else {
		group = per_flush > PACE_GROUP_MAX ? PACE_GROUP_MAX : (__u32)per_flush;
		if (group > cfg->batch)
			group = cfg->batch;
		groups_per_flush = (per_flush > cfg->batch ? cfg->batch : per_flush) / group;
		cfg->pace.group = group;
		cfg->pace.batch = group * (groups_per_flush ? groups_per_flush : 1);
		cfg->pace.call = per_call < cfg->pace.batch ? cfg->pace.batch : (__u32)per_call;
	}
	cfg->pace.gap_ns = (__u64)(cfg->pace.group * (double)NSEC_PER_SEC / rate);
}

/* The program paces the frames: this lane only makes the calls, and sleeps
 * until the program's schedule (struct pace_state's next_ns, read back after
 * each call: the program may have dropped a lag) says the next group is due.
 */
static void program_paced_loop(struct sender *s, struct bpf_test_run_opts *opts)
{
	int ncpus = libbpf_num_possible_cpus();
	struct pace_state *vals = calloc(ncpus > 0 ? ncpus : 1, sizeof(*vals));
	unsigned long long due = s->cfg->pace.start_ns;
	__u32 key = 0;

	if (!vals || ncpus <= 0) {
		s->err = ENOMEM;
		s->err_what = "allocating the per-CPU pace_states values";
		stopping = true;
		free(vals);
		return;
	}
	opts->batch_size = s->cfg->pace.batch;
	opts->repeat = s->cfg->pace.call;
	prctl(PR_SET_TIMERSLACK, 1UL);
	while (!stopping) {
		wait_until(due);
		if (stopping)
			break;
		if (bpf_prog_test_run_opts(s->prog_fd, opts)) {
			s->err = errno;
			stopping = true;
			break;
		}
		s->sent += opts->repeat;
		if (bpf_map_lookup_elem(s->pace_fd, &key, vals)) {
			s->err = errno;
			s->err_what = "reading map " PACE_MAP_NAME;
			stopping = true;
			break;
		}
		due = vals[s->cpu].next_ns;
	}
	free(vals);
}

static void *sender_main(void *arg)
{
	struct sender *s = arg;
	__u32 repeat = REPEAT_START;
	/* this lane's share of --rate */
	double lane_rate = s->cfg->rate_pps / ((double)s->cfg->ncpus * LANES_PER_SENDER);
	unsigned long long start, lane_sent = 0;
	cpu_set_t set;
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		    .data_in = s->frame,
		    .data_size_in = s->frame_len,
		    .flags = BPF_F_TEST_XDP_LIVE_FRAMES,
		    .batch_size = s->cfg->batch);

	CPU_ZERO(&set);
	CPU_SET(s->cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set)) {
		s->err = EINVAL;
		stopping = true;
		return NULL;
	}
	if (s->paced) {
		/* the other lanes are not needed: calls are cheap while the keeper holds the program */
		if (s->lanes_started++ == 0) {
			if (s->cfg->program_paced)
				program_paced_loop(s, &opts);
			else
				paced_loop(s, &opts);
		}
		return NULL;
	}
	start = now_ns();
	while (!stopping) {
		__u32 call = repeat;

		if (lane_rate > 0) {
			call = paced_repeat(repeat, lane_rate, lane_sent, now_ns() - start, s->cfg->batch);
			if (!call)
				continue; /* paced_repeat slept: the lane is ahead of its share */
		}
		opts.repeat = call;
		if (bpf_prog_test_run_opts(s->prog_fd, &opts)) {
			s->err = errno;
			stopping = true;
			break;
		}
		s->sent += call;
		lane_sent += call;
		repeat = next_repeat(call, opts.duration, s->cfg->batch);
	}
	return NULL;
}

static void print_interval(struct sender *senders, unsigned int n, double t, double dt)
{
	unsigned long long total = 0, delta[MAX_QUEUES];
	unsigned int i;

	for (i = 0; i < n; i++) {
		unsigned long long now = senders[i].sent;

		delta[i] = now - senders[i].last_sent;
		senders[i].last_sent = now;
		total += delta[i];
	}
	/* mono: end of the interval on CLOCK_MONOTONIC, so a reader on the same host can cut
	 * the records to its own measurement window */
	printf("{\"type\":\"interval\",\"t\":%.3f,\"mono\":%.6f,\"interval_s\":%.3f,\"sent\":%llu,"
	       "\"pps\":%.0f,\"threads\":[",
	       t, (double)now_ns() / NSEC_PER_SEC, dt, total, dt > 0 ? total / dt : 0.0);
	for (i = 0; i < n; i++)
		printf("%s{\"cpu\":%d,\"queue\":%u,\"sent\":%llu}", i ? "," : "", senders[i].cpu,
		       senders[i].queue, delta[i]);
	printf("]}\n");
	fflush(stdout);
}

/* The first record, once every sender thread runs: whoever started the generator need not wait a fixed time to
 * know that it got past its set-up (arguments, CPUs, the program's load). */
static void print_start(const struct config *cfg, unsigned int nthreads)
{
	printf("{\"type\":\"start\",\"mono\":%.6f,\"dev\":\"%s\",\"queues\":%u,\"threads\":%u,\"version\":\"%s\"}\n",
	       (double)now_ns() / NSEC_PER_SEC, cfg->dev, cfg->queues, nthreads * LANES_PER_SENDER, TRAFFICGEN_VERSION);
	fflush(stdout);
}

static void print_summary(const struct config *cfg, struct sender *senders, unsigned int n,
			  double elapsed, bool held, double dropped_s)
{
	/* how --rate was held: by the program, by this process's calls, by call length alone, or no cap */
	const char *pacing = cfg->rate_pps <= 0 ? "none" : !held ? "call_length" :
			     cfg->program_paced ? "program" : "calls";
	unsigned long long total = 0;
	unsigned int i, f;

	for (i = 0; i < n; i++)
		total += senders[i].sent;
	printf("{\"type\":\"summary\",\"sent\":%llu,\"elapsed_s\":%.3f,\"pps\":%.0f,\"rate_pps\":%.0f,\"pkt_len\":%u,"
	       "\"flows\":%u,\"queues\":%u,\"batch\":%u,\"latency_stamp\":%s,\"pacing\":\"%s\","
	       "\"schedule_dropped_s\":%.6f,\"dst_addrs\":%u,\"src_addrs\":%u,\"dev\":\"%s\","
	       "\"stopped_by\":\"%s\","
	       "\"threads\":[",
	       total, elapsed, elapsed > 0 ? total / elapsed : 0.0, cfg->rate_pps, cfg->pkt_len, cfg->flows,
	       cfg->queues, cfg->batch, cfg->latency_stamp ? "true" : "false", pacing,
	       dropped_s, cfg->dst_list.count, cfg->src_list.count, cfg->dev,
	       stop_signal == SIGINT ? "SIGINT" : stop_signal == SIGTERM ? "SIGTERM" : "duration");
	for (i = 0; i < n; i++) {
		printf("%s{\"cpu\":%d,\"queue\":%u,\"flows\":[", i ? "," : "", senders[i].cpu,
		       senders[i].queue);
		for (f = senders[i].queue; f < cfg->flows; f += cfg->queues)
			printf("%s%u", f == senders[i].queue ? "" : ",", f);
		printf("],\"sent\":%llu}", (unsigned long long)senders[i].sent);
	}
	printf("],\"version\":\"%s\"}\n", TRAFFICGEN_VERSION);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct sender senders[MAX_QUEUES] = {};
	unsigned long long start, next_tick, last_tick, end;
	struct sigaction sa = { .sa_handler = on_signal };
	int prog_fd, cursor_fd, pace_fd = -1, err = 0;
	double dropped_s;
	unsigned int q, lane, frame_len, nthreads;
	struct bpf_object *obj;
	struct bpf_link *egress_link;
	sigset_t block, old;
	struct config cfg;
	bool held = false;
	void *frame;

	parse_args(argc, argv, &cfg);
	cfg.program_paced = cfg.rate_pps > 0 && !cfg.latency_stamp;
	if (cfg.program_paced)
		plan_pacing(&cfg);
	check_cpus(&cfg);
	pin_main_thread(&cfg);
	libbpf_logging();
	frame = build_frame(&cfg, &frame_len);
	obj = load_obj(&cfg, frame, &prog_fd, &cursor_fd);
	egress_link = hold_egress(obj, &cfg);
	if (cfg.rate_pps > 0)
		held = hold_dispatcher(prog_fd);

	nthreads = cfg.ncpus;
	for (q = 0; q < nthreads; q++) {
		senders[q] = (struct sender){ .queue = q, .cpu = cfg.cpus[q], .prog_fd = prog_fd,
					      .cfg = &cfg, .frame = frame, .frame_len = frame_len, .paced = held };
		senders[q].nflows = cfg.flows > q ? (cfg.flows - q + cfg.queues - 1) / cfg.queues : 0;
	}
	set_cursors(&cfg, cursor_fd, senders);
	set_lists(obj, &cfg, senders);
	if (held && cfg.program_paced) {
		struct bpf_map *pace_map = bpf_object__find_map_by_name(obj, PACE_MAP_NAME);

		if (!pace_map)
			die("the generator object lacks map %s (rebuild bpf/)", PACE_MAP_NAME);
		pace_fd = bpf_map__fd(pace_map);
		/* time for the threads to start, then every sender's schedule begins */
		cfg.pace.start_ns = now_ns() + PACE_START_NS;
		set_pacing(&cfg, pace_fd, senders);
		for (q = 0; q < nthreads; q++)
			senders[q].pace_fd = pace_fd;
	}

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* Signals go to the main thread: senders start with them blocked. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	start = now_ns();
	for (q = 0; q < nthreads; q++) {
		for (lane = 0; lane < LANES_PER_SENDER; lane++) {
			if (pthread_create(&senders[q].lanes[lane], NULL, sender_main, &senders[q]))
				die("cannot start a sender thread for queue %u", q);
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	print_start(&cfg, nthreads);

	end = start + (unsigned long long)(cfg.duration * NSEC_PER_SEC);
	last_tick = start;
	next_tick = start + NSEC_PER_SEC;
	while (!stopping) {
		unsigned long long now = now_ns(), wake = next_tick < end ? next_tick : end;
		struct timespec ts;

		if (now >= end)
			break;
		if (now < wake) {
			ts.tv_sec = (wake - now) / NSEC_PER_SEC;
			ts.tv_nsec = (wake - now) % NSEC_PER_SEC;
			nanosleep(&ts, NULL); /* EINTR on a signal: loop re-checks */
			continue;
		}
		print_interval(senders, nthreads, (now - start) / 1e9, (now - last_tick) / 1e9);
		last_tick = now;
		next_tick += NSEC_PER_SEC;
	}
	stopping = true;
	for (q = 0; q < nthreads; q++) {
		for (lane = 0; lane < LANES_PER_SENDER; lane++)
			pthread_join(senders[q].lanes[lane], NULL);
	}
	end = now_ns();

	for (q = 0; q < nthreads; q++) {
		if (senders[q].err && senders[q].err_what) {
			fprintf(stderr, "xdplab-trafficgen: queue %u on CPU %d: %s failed: %s\n", q, senders[q].cpu,
				senders[q].err_what, strerror(senders[q].err));
			err = 1;
		} else if (senders[q].err) {
			fprintf(stderr, "xdplab-trafficgen: queue %u on CPU %d: BPF_PROG_RUN failed: %s%s\n",
				q, senders[q].cpu, strerror(senders[q].err),
				senders[q].err == EINVAL ? " (kernel without BPF_F_TEST_XDP_LIVE_FRAMES, or bad CPU affinity?)" : "");
			err = 1;
		}
	}
	dropped_s = pacing_dropped_s(pace_fd);
	if (held)
		keeper_del(keeper_if);
	bpf_link__destroy(egress_link);
	bpf_object__close(obj);
	free(frame);
	free(cfg.dst_list.addrs);
	free(cfg.src_list.addrs);
	if (err)
		return EXIT_FAILURE;
	print_summary(&cfg, senders, nthreads, (end - start) / 1e9, held, dropped_s);
	return EXIT_SUCCESS;
}
