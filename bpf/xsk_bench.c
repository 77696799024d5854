// SPDX-License-Identifier: GPL-2.0
/* xdplab-xsk-bench: AF_XDP benchmark (rxdrop, txpush, l2fwd), as xdpsock.
 *
 * One AF_XDP socket per queue, each with its own UMEM, served by one thread
 * pinned to a CPU. The sockets are bound first (copy, zero-copy, or whatever
 * the kernel picks); then xsk_bench.bpf.c, which redirects RX queue q to the
 * socket of queue q, is attached to the interface through a BPF link, so the
 * kernel detaches it even if this process is killed. On exit (duration over,
 * SIGINT, SIGTERM) the link is detached, the interface is checked to carry no
 * program of ours any more, and the sockets are closed.
 * Prints JSON lines: a start record, one interval and one xdp_statistics
 * record per interval, and a summary on exit (docs/ARCHITECTURE.md).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/ethtool.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <linux/ip.h>
#include <linux/sockios.h>
#include <linux/udp.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#include "xsk_bench.h"
#include "xsk_bench.skel.h"

#define XDPLAB_PROG_NAME "xdplab-xsk-bench"
#include "common.h"

#define XSK_BENCH_VERSION "0.1.0"

#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif

#define NUM_FRAMES 4096                        /* UMEM frames per socket */
#define FILL_RING_SIZE NUM_FRAMES              /* every frame can wait in the fill ring */
#define COMP_RING_SIZE XSK_RING_CONS__DEFAULT_NUM_DESCS
#define RX_RING_SIZE XSK_RING_CONS__DEFAULT_NUM_DESCS
#define TX_RING_SIZE XSK_RING_PROD__DEFAULT_NUM_DESCS
#define FRAME_SIZE_SMALL 2048
#define FRAME_SIZE_LARGE XSK_UMEM__DEFAULT_FRAME_SIZE
#define DEFAULT_BATCH 64
#define MAX_BATCH TX_RING_SIZE
#define DEFAULT_BUSY_POLL_TIMEOUT_US 20
#define MAX_BUSY_POLL_BUDGET 65535
#define POLL_TIMEOUT_MS 100 /* --poll: wake up this often to notice a stop */

#define UDP_SRC_PORT 9   /* discard, as xdplab-trafficgen */
#define DEFAULT_UDP_DST_PORT 12


enum bench_mode { BENCH_RXDROP, BENCH_TXPUSH, BENCH_L2FWD };
static const char *const bench_names[] = { "rxdrop", "txpush", "l2fwd" };

enum copy_request { COPY_AUTO, COPY_FORCE, ZEROCOPY_FORCE };
static const char *const copy_names[] = { "auto", "copy", "zerocopy" };

struct config {
	const char *dev;
	int ifindex;
	char driver[32];
	unsigned int dev_rx_queues; /* real_num_rx_queues: /sys/class/net/DEV/queues/rx-* */
	enum bench_mode bench;
	enum copy_request copy;
	bool skb_mode;
	bool need_wakeup;
	bool busy_poll;
	bool poll;       /* sleep in poll() when there is nothing to do, instead of spinning */
	unsigned int busy_poll_budget;
	unsigned int busy_poll_timeout_us;
	unsigned int batch;
	unsigned int frame_size;
	bool unaligned;
	unsigned int nqueues;
	unsigned int queues[XSK_MAX_QUEUES];
	unsigned int ncpus;
	int cpus[XSK_MAX_QUEUES];
	double duration; /* 0: until a signal */
	double interval;
	/* txpush frame template */
	__u8 src_mac[ETH_ALEN];
	bool src_mac_from_dev; /* no --src-mac: use the interface's */
	__u8 dst_mac[ETH_ALEN];
	struct in_addr src_ip;
	struct in_addr dst_ip;
	unsigned int pkt_len;
	unsigned int dst_port;
};

/* One queue: its socket, UMEM, rings and the thread that serves them. */
struct xsk_queue {
	unsigned int queue;
	int cpu;
	const struct config *cfg;
	void *area;
	size_t area_len;
	struct xsk_umem *umem;
	struct xsk_ring_prod fq;
	struct xsk_ring_cons cq;
	struct xsk_ring_cons rx;
	struct xsk_ring_prod tx;
	struct xsk_socket *xsk;
	int fd;
	bool zerocopy;
	unsigned int outstanding_tx;
	unsigned long long next_frame; /* txpush: next UMEM frame to send */
	unsigned int frame_len;        /* txpush: frame length without FCS */
	pthread_t thread;
	bool thread_started;
	_Atomic unsigned long long rx_packets;
	_Atomic unsigned long long tx_packets;
	unsigned long long last_rx, last_tx; /* main thread only: for intervals */
	int err;                             /* errno of a failed syscall in the thread */
	const char *err_what;
};

struct bench {
	struct config cfg;
	struct xsk_queue q[XSK_MAX_QUEUES];
	struct xsk_bench *skel;
	int link_fd;
	__u32 prog_id;
};

static struct bench bench = { .link_fd = -1 };
static volatile sig_atomic_t stop_signal;
static _Atomic bool stopping;

static void on_signal(int sig)
{
	stop_signal = sig;
	stopping = true;
}

static void cleanup(struct bench *b, bool quiet);

/* die() undoes everything set up so far before it exits. */
static void cleanup_on_die(void)
{
	cleanup(&bench, true);
}

#include "cli_args.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: xdplab-xsk-bench --dev IFNAME [--mode rxdrop|txpush|l2fwd]\n"
		"         [--copy | --zero-copy] [--skb-mode | --drv-mode] [--no-need-wakeup]\n"
		"         [--busy-poll [--busy-poll-budget N] [--busy-poll-timeout USEC]] [--poll]\n"
		"         [--batch 64] [--frame-size 2048|4096] [--unaligned]\n"
		"         [--queues 0[,1..]] [--cpus C[,C..]] [--duration 10] [--interval 1]\n"
		"         txpush: --dst-mac MAC --src-ip IP --dst-ip IP [--src-mac MAC]\n"
		"                 [--pkt-len 64] [--dst-port 12]\n"
		"\n"
		"AF_XDP benchmark: one socket per --queues entry, served by a thread pinned\n"
		"to the matching --cpus entry (default: CPU = queue id).\n"
		"  rxdrop  receive and drop (frames go straight back to the fill ring)\n"
		"  txpush  send a UDP frame template (Ethernet/IPv4/UDP 9 -> dst-port)\n"
		"  l2fwd   receive, swap MAC addresses, send back out of the same queue\n"
		"Bind mode: --copy, --zero-copy, or neither (the kernel picks; reported).\n"
		"XDP mode of the redirect program: --drv-mode (default) or --skb-mode.\n"
		"Threads spin on their rings unless --poll (wait in poll() for work).\n"
		"--pkt-len counts the FCS (64..1518). --duration 0 runs until SIGINT/SIGTERM.\n"
		"Prints JSON lines: start, interval + xdp_statistics per interval, summary.\n");
}

static double parse_seconds(const char *opt, const char *s, bool zero_ok)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || v < 0 || (!zero_ok && v == 0) || v != v)
		die("--%s: '%s' is not a %s number of seconds", opt, s, zero_ok ? "non-negative" : "positive");
	return v;
}

/* A comma-separated list of numbers 0..max into out[]; returns the count. */
static unsigned int parse_list(const char *opt, const char *s, unsigned long max, unsigned int *out)
{
	char *copy = strdup(s), *tok, *save = NULL;
	unsigned int n = 0, i;

	if (!copy)
		die("out of memory");
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == XSK_MAX_QUEUES)
			die("--%s: more than %d entries", opt, XSK_MAX_QUEUES);
		out[n] = parse_uint(opt, tok, 0, max);
		for (i = 0; i < n; i++) {
			if (out[i] == out[n])
				die("--%s: %u is listed twice", opt, out[n]);
		}
		n++;
	}
	free(copy);
	if (!n)
		die("--%s: give at least one number", opt);
	return n;
}

/* Every queue thread's CPU must be one this process may run on. */
static void check_cpus(const struct config *cfg)
{
	cpu_set_t allowed;
	unsigned int i;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		die("sched_getaffinity: %s", strerror(errno));
	for (i = 0; i < cfg->ncpus; i++) {
		if (cfg->cpus[i] >= CPU_SETSIZE || !CPU_ISSET(cfg->cpus[i], &allowed))
			die("CPU %d (for queue %u) is offline or outside this process's CPU set; pick CPUs with --cpus",
			    cfg->cpus[i], cfg->queues[i]);
	}
}

static void parse_args(int argc, char **argv, struct config *cfg)
{
	enum { OPT_DEV = 1, OPT_MODE, OPT_COPY, OPT_ZEROCOPY, OPT_SKB, OPT_DRV, OPT_NO_WAKEUP,
	       OPT_BUSY_POLL, OPT_POLL, OPT_BP_BUDGET, OPT_BP_TIMEOUT, OPT_BATCH, OPT_FRAME_SIZE, OPT_UNALIGNED,
	       OPT_QUEUES, OPT_CPUS, OPT_DURATION, OPT_INTERVAL, OPT_SRC_MAC, OPT_DST_MAC, OPT_SRC_IP,
	       OPT_DST_IP, OPT_PKT_LEN, OPT_DST_PORT, OPT_HELP };
	static const struct option opts[] = {
		{ "dev", required_argument, NULL, OPT_DEV },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "copy", no_argument, NULL, OPT_COPY },
		{ "zero-copy", no_argument, NULL, OPT_ZEROCOPY },
		{ "skb-mode", no_argument, NULL, OPT_SKB },
		{ "drv-mode", no_argument, NULL, OPT_DRV },
		{ "no-need-wakeup", no_argument, NULL, OPT_NO_WAKEUP },
		{ "busy-poll", no_argument, NULL, OPT_BUSY_POLL },
		{ "poll", no_argument, NULL, OPT_POLL },
		{ "busy-poll-budget", required_argument, NULL, OPT_BP_BUDGET },
		{ "busy-poll-timeout", required_argument, NULL, OPT_BP_TIMEOUT },
		{ "batch", required_argument, NULL, OPT_BATCH },
		{ "frame-size", required_argument, NULL, OPT_FRAME_SIZE },
		{ "unaligned", no_argument, NULL, OPT_UNALIGNED },
		{ "queues", required_argument, NULL, OPT_QUEUES },
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "src-mac", required_argument, NULL, OPT_SRC_MAC },
		{ "dst-mac", required_argument, NULL, OPT_DST_MAC },
		{ "src-ip", required_argument, NULL, OPT_SRC_IP },
		{ "dst-ip", required_argument, NULL, OPT_DST_IP },
		{ "pkt-len", required_argument, NULL, OPT_PKT_LEN },
		{ "dst-port", required_argument, NULL, OPT_DST_PORT },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	bool have_src_mac = false, have_dst_mac = false, have_src_ip = false, have_dst_ip = false;
	bool have_copy = false, have_xdp_mode = false, have_budget = false, have_timeout = false;
	long ncpu_conf = sysconf(_SC_NPROCESSORS_CONF);
	unsigned int cpus[XSK_MAX_QUEUES];
	const char *cpu_list = NULL;
	unsigned int i;
	int opt;

	*cfg = (struct config){ .bench = BENCH_RXDROP, .copy = COPY_AUTO, .need_wakeup = true,
				.busy_poll_timeout_us = DEFAULT_BUSY_POLL_TIMEOUT_US,
				.batch = DEFAULT_BATCH, .frame_size = FRAME_SIZE_LARGE, .nqueues = 1,
				.duration = 10, .interval = 1, .pkt_len = MIN_PKT_LEN,
				.dst_port = DEFAULT_UDP_DST_PORT };
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case OPT_DEV: cfg->dev = optarg; break;
		case OPT_MODE:
			for (i = 0; i < sizeof(bench_names) / sizeof(bench_names[0]); i++) {
				if (!strcmp(optarg, bench_names[i]))
					break;
			}
			if (i == sizeof(bench_names) / sizeof(bench_names[0]))
				die("--mode: '%s' is not one of rxdrop, txpush, l2fwd", optarg);
			cfg->bench = i;
			break;
		case OPT_COPY:
		case OPT_ZEROCOPY:
			if (have_copy)
				die("give at most one of --copy and --zero-copy");
			have_copy = true;
			cfg->copy = opt == OPT_COPY ? COPY_FORCE : ZEROCOPY_FORCE;
			break;
		case OPT_SKB:
		case OPT_DRV:
			if (have_xdp_mode)
				die("give at most one of --skb-mode and --drv-mode");
			have_xdp_mode = true;
			cfg->skb_mode = opt == OPT_SKB;
			break;
		case OPT_NO_WAKEUP: cfg->need_wakeup = false; break;
		case OPT_BUSY_POLL: cfg->busy_poll = true; break;
		case OPT_POLL: cfg->poll = true; break;
		case OPT_BP_BUDGET:
			cfg->busy_poll_budget = parse_uint("busy-poll-budget", optarg, 1, MAX_BUSY_POLL_BUDGET);
			have_budget = true;
			break;
		case OPT_BP_TIMEOUT:
			cfg->busy_poll_timeout_us = parse_uint("busy-poll-timeout", optarg, 1, INT_MAX);
			have_timeout = true;
			break;
		case OPT_BATCH: cfg->batch = parse_uint("batch", optarg, 1, MAX_BATCH); break;
		case OPT_FRAME_SIZE:
			cfg->frame_size = parse_uint("frame-size", optarg, 0, UINT_MAX);
			if (cfg->frame_size != FRAME_SIZE_SMALL && cfg->frame_size != FRAME_SIZE_LARGE)
				die("--frame-size %u: use %d or %d", cfg->frame_size, FRAME_SIZE_SMALL,
				    FRAME_SIZE_LARGE);
			break;
		case OPT_UNALIGNED: cfg->unaligned = true; break;
		case OPT_QUEUES:
			cfg->nqueues = parse_list("queues", optarg, XSK_MAX_QUEUES - 1, cfg->queues);
			break;
		case OPT_CPUS: cpu_list = optarg; break;
		case OPT_DURATION: cfg->duration = parse_seconds("duration", optarg, true); break;
		case OPT_INTERVAL: cfg->interval = parse_seconds("interval", optarg, false); break;
		case OPT_SRC_MAC: parse_mac("src-mac", optarg, cfg->src_mac); have_src_mac = true; break;
		case OPT_DST_MAC: parse_mac("dst-mac", optarg, cfg->dst_mac); have_dst_mac = true; break;
		case OPT_SRC_IP: parse_ip("src-ip", optarg, &cfg->src_ip); have_src_ip = true; break;
		case OPT_DST_IP: parse_ip("dst-ip", optarg, &cfg->dst_ip); have_dst_ip = true; break;
		case OPT_PKT_LEN:
			cfg->pkt_len = parse_uint("pkt-len", optarg, MIN_PKT_LEN, MAX_PKT_LEN);
			break;
		case OPT_DST_PORT: cfg->dst_port = parse_uint("dst-port", optarg, 1, MAX_PORT); break;
		case OPT_HELP: usage(stdout); exit(EXIT_SUCCESS);
		default: usage(stderr); exit(EXIT_FAILURE);
		}
	}
	if (optind < argc)
		die("unexpected argument '%s' (see --help)", argv[optind]);
	if (!cfg->dev)
		die("--dev IFNAME is required");
	if (!have_budget)
		cfg->busy_poll_budget = cfg->batch;
	if ((have_budget || have_timeout) && !cfg->busy_poll)
		die("--busy-poll-budget and --busy-poll-timeout need --busy-poll");
	if (cfg->bench == BENCH_TXPUSH) {
		if (!have_dst_mac || !have_src_ip || !have_dst_ip)
			die("--mode txpush needs --dst-mac, --src-ip and --dst-ip (--src-mac defaults to %s's)",
			    cfg->dev);
	} else if (have_src_mac || have_dst_mac || have_src_ip || have_dst_ip) {
		die("--src-mac, --dst-mac, --src-ip and --dst-ip only apply to --mode txpush");
	}
	if (cfg->pkt_len - FCS_LEN > cfg->frame_size - XDP_PACKET_HEADROOM)
		die("--pkt-len %u does not fit a %u-byte frame", cfg->pkt_len, cfg->frame_size);
	if (cpu_list) {
		cfg->ncpus = parse_list("cpus", cpu_list, ncpu_conf - 1, cpus);
		if (cfg->ncpus != cfg->nqueues)
			die("--cpus lists %u CPUs for %u queues: give one CPU per queue", cfg->ncpus, cfg->nqueues);
		for (i = 0; i < cfg->ncpus; i++)
			cfg->cpus[i] = cpus[i];
	} else {
		cfg->ncpus = cfg->nqueues;
		for (i = 0; i < cfg->nqueues; i++)
			cfg->cpus[i] = cfg->queues[i];
	}
	cfg->src_mac_from_dev = !have_src_mac;
}

/* Driver name (ETHTOOL_GDRVINFO), RX queue count, MAC; fails on a missing interface. */
static void check_dev(struct config *cfg)
{
	struct ethtool_drvinfo drv = { .cmd = ETHTOOL_GDRVINFO };
	struct ifreq ifr = {};
	char path[PATH_MAX];
	struct dirent *de;
	unsigned int i;
	DIR *dir;
	int fd;

	cfg->ifindex = if_nametoindex(cfg->dev);
	if (!cfg->ifindex)
		die("interface '%s' does not exist in this network namespace", cfg->dev);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", cfg->dev);
	ifr.ifr_data = (void *)&drv;
	if (ioctl(fd, SIOCETHTOOL, &ifr) == 0)
		snprintf(cfg->driver, sizeof(cfg->driver), "%s", drv.driver);
	else
		snprintf(cfg->driver, sizeof(cfg->driver), "unknown");
	if (cfg->src_mac_from_dev && cfg->bench == BENCH_TXPUSH) {
		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", cfg->dev);
		if (ioctl(fd, SIOCGIFHWADDR, &ifr))
			die("cannot read the MAC address of %s: %s (give --src-mac)", cfg->dev, strerror(errno));
		memcpy(cfg->src_mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	}
	close(fd);

	snprintf(path, sizeof(path), "/sys/class/net/%s/queues", cfg->dev);
	dir = opendir(path);
	if (!dir)
		die("cannot read %s: %s", path, strerror(errno));
	cfg->dev_rx_queues = 0;
	while ((de = readdir(dir)))
		cfg->dev_rx_queues += !strncmp(de->d_name, "rx-", 3);
	closedir(dir);
	for (i = 0; i < cfg->nqueues; i++) {
		if (cfg->queues[i] >= cfg->dev_rx_queues)
			die("queue %u does not exist: interface %s (driver %s) has %u RX queue%s (0..%u)",
			    cfg->queues[i], cfg->dev, cfg->driver, cfg->dev_rx_queues,
			    cfg->dev_rx_queues == 1 ? "" : "s", cfg->dev_rx_queues - 1);
	}
}

/* txpush template: Ethernet, IPv4, UDP 9 -> dst-port, zero payload. */
static void write_template(const struct config *cfg, __u8 *frame, unsigned int len)
{
	struct ethhdr *eth = (struct ethhdr *)frame;
	struct iphdr *ip = (struct iphdr *)(eth + 1);
	struct udphdr *udp = (struct udphdr *)(ip + 1);

	memset(frame, 0, len);
	memcpy(eth->h_dest, cfg->dst_mac, ETH_ALEN);
	memcpy(eth->h_source, cfg->src_mac, ETH_ALEN);
	eth->h_proto = htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = sizeof(*ip) / 4;
	ip->tot_len = htons(len - sizeof(*eth));
	ip->ttl = IP_TTL_DEFAULT;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = cfg->src_ip.s_addr;
	ip->daddr = cfg->dst_ip.s_addr;
	ip->check = ipv4_checksum(ip, sizeof(*ip));
	udp->source = htons(UDP_SRC_PORT);
	udp->dest = htons(cfg->dst_port);
	udp->len = htons(len - sizeof(*eth) - sizeof(*ip));
	udp->check = 0;
}

/* UMEM frame holding `addr` (a descriptor address, with offset in unaligned mode). */
static __u64 frame_of(const struct xsk_queue *x, __u64 addr)
{
	__u64 fs = x->cfg->frame_size;

	return xsk_umem__add_offset_to_addr(addr) / fs * fs;
}

static void set_sockopt(struct xsk_queue *x, int name, const char *what, int val)
{
	if (setsockopt(x->fd, SOL_SOCKET, name, &val, sizeof(val)))
		die("queue %u: setsockopt %s=%d: %s (kernel >= 5.11 and CAP_NET_ADMIN needed for busy polling)",
		    x->queue, what, val, strerror(errno));
}

static void setup_queue(struct config *cfg, struct xsk_queue *x)
{
	struct xsk_umem_config ucfg = {
		.fill_size = FILL_RING_SIZE,
		.comp_size = COMP_RING_SIZE,
		.frame_size = cfg->frame_size,
		.frame_headroom = XSK_UMEM__DEFAULT_FRAME_HEADROOM,
		.flags = cfg->unaligned ? XDP_UMEM_UNALIGNED_CHUNK_FLAG : 0,
	};
	struct xsk_socket_config scfg = {
		.rx_size = RX_RING_SIZE,
		.tx_size = TX_RING_SIZE,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD, /* we attach xsk_bench.bpf.c */
		.bind_flags = (cfg->copy == COPY_FORCE ? XDP_COPY : 0) |
			      (cfg->copy == ZEROCOPY_FORCE ? XDP_ZEROCOPY : 0) |
			      (cfg->need_wakeup ? XDP_USE_NEED_WAKEUP : 0),
	};
	bool want_rx = cfg->bench != BENCH_TXPUSH, want_tx = cfg->bench != BENCH_RXDROP;
	struct xdp_options xopts = {};
	socklen_t len = sizeof(xopts);
	__u32 idx, i;
	int err;

	x->area_len = (size_t)NUM_FRAMES * cfg->frame_size;
	x->area = mmap(NULL, x->area_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (x->area == MAP_FAILED) {
		x->area = NULL;
		die("queue %u: cannot map %zu bytes of UMEM: %s", x->queue, x->area_len, strerror(errno));
	}
	err = xsk_umem__create(&x->umem, x->area, x->area_len, &x->fq, &x->cq, &ucfg);
	if (err)
		die("queue %u: cannot create the UMEM: %s%s", x->queue, strerror(-err),
		    err == -EPERM ? " (run as root)" : "");
	err = xsk_socket__create(&x->xsk, cfg->dev, x->queue, x->umem, want_rx ? &x->rx : NULL,
				 want_tx ? &x->tx : NULL, &scfg);
	if (err) {
		x->xsk = NULL;
		if (cfg->copy == ZEROCOPY_FORCE && (err == -EOPNOTSUPP || err == -EPROTONOSUPPORT))
			die("interface %s (driver %s) does not support AF_XDP zero-copy; use --copy",
			    cfg->dev, cfg->driver);
		die("queue %u: cannot bind an AF_XDP socket to %s: %s", x->queue, cfg->dev, strerror(-err));
	}
	x->fd = xsk_socket__fd(x->xsk);
	if (getsockopt(x->fd, SOL_XDP, XDP_OPTIONS, &xopts, &len))
		die("queue %u: getsockopt XDP_OPTIONS: %s (kernel >= 5.3 needed)", x->queue, strerror(errno));
	x->zerocopy = xopts.flags & XDP_OPTIONS_ZEROCOPY;
	if (cfg->busy_poll) {
		set_sockopt(x, SO_PREFER_BUSY_POLL, "SO_PREFER_BUSY_POLL", 1);
		set_sockopt(x, SO_BUSY_POLL, "SO_BUSY_POLL", cfg->busy_poll_timeout_us);
		set_sockopt(x, SO_BUSY_POLL_BUDGET, "SO_BUSY_POLL_BUDGET", cfg->busy_poll_budget);
	}

	if (want_rx) {
		/* every frame starts in the fill ring */
		if (xsk_ring_prod__reserve(&x->fq, FILL_RING_SIZE, &idx) != FILL_RING_SIZE)
			die("queue %u: cannot fill the fill ring", x->queue);
		for (i = 0; i < FILL_RING_SIZE; i++)
			*xsk_ring_prod__fill_addr(&x->fq, idx++) = (__u64)i * cfg->frame_size;
		xsk_ring_prod__submit(&x->fq, FILL_RING_SIZE);
	} else {
		x->frame_len = cfg->pkt_len - FCS_LEN;
		for (i = 0; i < NUM_FRAMES; i++)
			write_template(cfg, xsk_umem__get_data(x->area, (__u64)i * cfg->frame_size),
				       x->frame_len);
	}
}

static void thread_error(struct xsk_queue *x, const char *what)
{
	x->err = errno;
	x->err_what = what;
	stopping = true;
}

static void kick_tx(struct xsk_queue *x)
{
	if (sendto(x->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0)
		return;
	/* the kernel is busy or out of buffers: try again on the next kick */
	if (errno == ENOBUFS || errno == EAGAIN || errno == EBUSY || errno == ENETDOWN)
		return;
	thread_error(x, "sendto (TX kick)");
}

static void kick_rx(struct xsk_queue *x)
{
	if (recvfrom(x->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL) >= 0 || errno == EAGAIN ||
	    errno == EBUSY || errno == ENETDOWN)
		return;
	thread_error(x, "recvfrom (RX kick)");
}

static bool fill_needs_kick(struct xsk_queue *x)
{
	return x->cfg->busy_poll || xsk_ring_prod__needs_wakeup(&x->fq);
}

static bool tx_needs_kick(struct xsk_queue *x)
{
	return x->cfg->busy_poll || !x->cfg->need_wakeup || xsk_ring_prod__needs_wakeup(&x->tx);
}

static void rx_drop(struct xsk_queue *x)
{
	__u32 idx_rx = 0, idx_fq = 0, rcvd, i;

	rcvd = xsk_ring_cons__peek(&x->rx, x->cfg->batch, &idx_rx);
	if (!rcvd) {
		if (fill_needs_kick(x))
			kick_rx(x);
		return;
	}
	while (xsk_ring_prod__reserve(&x->fq, rcvd, &idx_fq) != rcvd) {
		if (stopping)
			return;
		if (fill_needs_kick(x))
			kick_rx(x);
	}
	for (i = 0; i < rcvd; i++) {
		__u64 addr = xsk_ring_cons__rx_desc(&x->rx, idx_rx++)->addr;

		*xsk_ring_prod__fill_addr(&x->fq, idx_fq++) = frame_of(x, addr);
	}
	xsk_ring_prod__submit(&x->fq, rcvd);
	xsk_ring_cons__release(&x->rx, rcvd);
	x->rx_packets += rcvd;
}

/* Completed TX frames: back to the fill ring (l2fwd) or free again (txpush). */
static void complete_tx(struct xsk_queue *x, bool refill)
{
	__u32 idx_cq = 0, idx_fq = 0, done, i;

	if (!x->outstanding_tx)
		return;
	if (tx_needs_kick(x))
		kick_tx(x);
	done = xsk_ring_cons__peek(&x->cq, COMP_RING_SIZE, &idx_cq);
	if (!done)
		return;
	if (refill) {
		while (xsk_ring_prod__reserve(&x->fq, done, &idx_fq) != done) {
			if (stopping)
				return;
			if (fill_needs_kick(x))
				kick_rx(x);
		}
		for (i = 0; i < done; i++)
			*xsk_ring_prod__fill_addr(&x->fq, idx_fq++) =
				frame_of(x, *xsk_ring_cons__comp_addr(&x->cq, idx_cq++));
		xsk_ring_prod__submit(&x->fq, done);
	}
	xsk_ring_cons__release(&x->cq, done);
	x->outstanding_tx -= done;
	x->tx_packets += done;
}

static void tx_push(struct xsk_queue *x)
{
	__u32 batch = x->cfg->batch, idx, i;

	if (xsk_ring_prod__reserve(&x->tx, batch, &idx) == batch) {
		for (i = 0; i < batch; i++) {
			struct xdp_desc *d = xsk_ring_prod__tx_desc(&x->tx, idx + i);

			d->addr = (x->next_frame++ % NUM_FRAMES) * x->cfg->frame_size;
			d->len = x->frame_len;
			d->options = 0;
		}
		xsk_ring_prod__submit(&x->tx, batch);
		x->outstanding_tx += batch;
	}
	complete_tx(x, false);
}

static void swap_macs(__u8 *pkt)
{
	struct ethhdr *eth = (struct ethhdr *)pkt;
	__u8 tmp[ETH_ALEN];

	memcpy(tmp, eth->h_source, ETH_ALEN);
	memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	memcpy(eth->h_dest, tmp, ETH_ALEN);
}

static void l2fwd(struct xsk_queue *x)
{
	__u32 idx_rx = 0, idx_tx = 0, rcvd, i;

	complete_tx(x, true);
	rcvd = xsk_ring_cons__peek(&x->rx, x->cfg->batch, &idx_rx);
	if (!rcvd) {
		if (fill_needs_kick(x))
			kick_rx(x);
		return;
	}
	while (xsk_ring_prod__reserve(&x->tx, rcvd, &idx_tx) != rcvd) {
		if (stopping)
			return;
		complete_tx(x, true);
		if (tx_needs_kick(x))
			kick_tx(x);
	}
	for (i = 0; i < rcvd; i++) {
		const struct xdp_desc *rd = xsk_ring_cons__rx_desc(&x->rx, idx_rx++);
		struct xdp_desc *td = xsk_ring_prod__tx_desc(&x->tx, idx_tx++);
		__u64 addr = xsk_umem__add_offset_to_addr(rd->addr);

		if (rd->len >= sizeof(struct ethhdr))
			swap_macs(xsk_umem__get_data(x->area, addr));
		td->addr = addr;
		td->len = rd->len;
		td->options = 0;
	}
	xsk_ring_prod__submit(&x->tx, rcvd);
	xsk_ring_cons__release(&x->rx, rcvd);
	x->outstanding_tx += rcvd;
	x->rx_packets += rcvd;
}

static void *queue_main(void *arg)
{
	struct xsk_queue *x = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(x->cpu, &set);
	errno = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (errno) {
		thread_error(x, "pinning to its CPU (offline, or not in this process's cpuset?)");
		return NULL;
	}
	while (!stopping) {
		if (x->cfg->poll) {
			struct pollfd pfd = { .fd = x->fd,
					      .events = x->cfg->bench == BENCH_TXPUSH ? POLLOUT : POLLIN };
			int ready = poll(&pfd, 1, POLL_TIMEOUT_MS);

			if (ready < 0 && errno != EINTR) {
				thread_error(x, "poll");
				break;
			}
			if (ready <= 0)
				continue;
		}
		switch (x->cfg->bench) {
		case BENCH_RXDROP: rx_drop(x); break;
		case BENCH_TXPUSH: tx_push(x); break;
		case BENCH_L2FWD: l2fwd(x); break;
		}
	}
	return NULL;
}

/* Attach the redirect program through a BPF link (gone with the process). */
static void attach_prog(struct bench *b)
{
	struct config *cfg = &b->cfg;
	LIBBPF_OPTS(bpf_link_create_opts, lopts,
		    .flags = cfg->skb_mode ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), existing = 0;
	int prog_fd = bpf_program__fd(b->skel->progs.xsk_bench_redirect);
	int err;

	b->link_fd = bpf_link_create(prog_fd, cfg->ifindex, BPF_XDP, &lopts);
	if (b->link_fd < 0) {
		err = errno;
		b->link_fd = -1;
		bpf_xdp_query_id(cfg->ifindex, 0, &existing);
		if (existing)
			die("interface %s already has an XDP program attached (id %u): detach it first "
			    "(xdplab.testbed.xdp_program state=absent, or ip link set dev %s xdp off)",
			    cfg->dev, existing, cfg->dev);
		if (!cfg->skb_mode && err == EOPNOTSUPP)
			die("interface %s (driver %s) has no native XDP: use --skb-mode", cfg->dev, cfg->driver);
		die("cannot attach the XDP program to %s in %s mode: %s", cfg->dev,
		    cfg->skb_mode ? "skb" : "drv", strerror(err));
	}
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		die("cannot read the XDP program's id: %s", strerror(errno));
	b->prog_id = info.id;
}

/* True if the interface still runs our program (in any mode). */
static bool prog_still_attached(const struct bench *b)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);

	if (!b->prog_id || bpf_xdp_query(b->cfg.ifindex, 0, &q))
		return false;
	return q.prog_id == b->prog_id || q.drv_prog_id == b->prog_id ||
	       q.skb_prog_id == b->prog_id || q.hw_prog_id == b->prog_id;
}

/* Stop threads, detach XDP, close sockets. Safe to call twice. */
static void cleanup(struct bench *b, bool quiet)
{
	unsigned int i;

	stopping = true;
	for (i = 0; i < b->cfg.nqueues; i++) {
		if (b->q[i].thread_started) {
			pthread_join(b->q[i].thread, NULL);
			b->q[i].thread_started = false;
		}
	}
	if (b->link_fd >= 0) {
		if (bpf_link_detach(b->link_fd) && !quiet)
			fprintf(stderr, "xdplab-xsk-bench: detaching the XDP link: %s\n", strerror(errno));
		close(b->link_fd);
		b->link_fd = -1;
	}
	for (i = 0; i < b->cfg.nqueues; i++) {
		struct xsk_queue *x = &b->q[i];

		if (x->xsk)
			xsk_socket__delete(x->xsk);
		x->xsk = NULL;
		if (x->umem)
			xsk_umem__delete(x->umem);
		x->umem = NULL;
		if (x->area)
			munmap(x->area, x->area_len);
		x->area = NULL;
	}
	if (b->skel)
		xsk_bench__destroy(b->skel);
	b->skel = NULL;
}

static const char *bind_mode(const struct bench *b)
{
	unsigned int i, zc = 0;

	for (i = 0; i < b->cfg.nqueues; i++)
		zc += b->q[i].zerocopy;
	return zc == 0 ? "copy" : zc == b->cfg.nqueues ? "zerocopy" : "mixed";
}

static void print_stats_fields(const struct xsk_queue *x)
{
	struct xdp_statistics st = {};
	socklen_t len = sizeof(st);

	if (!x->xsk || getsockopt(x->fd, SOL_XDP, XDP_STATISTICS, &st, &len)) {
		printf("null");
		return;
	}
	printf("{\"rx_dropped\":%llu,\"rx_invalid_descs\":%llu,\"rx_ring_full\":%llu,"
	       "\"rx_fill_ring_empty_descs\":%llu,\"tx_invalid_descs\":%llu,\"tx_ring_empty_descs\":%llu}",
	       (unsigned long long)st.rx_dropped, (unsigned long long)st.rx_invalid_descs,
	       (unsigned long long)st.rx_ring_full, (unsigned long long)st.rx_fill_ring_empty_descs,
	       (unsigned long long)st.tx_invalid_descs, (unsigned long long)st.tx_ring_empty_descs);
}

static void print_options(const struct config *cfg)
{
	char src[INET_ADDRSTRLEN], dst[INET_ADDRSTRLEN];
	const __u8 *s = cfg->src_mac, *d = cfg->dst_mac;

	printf("\"options\":{\"copy\":\"%s\",\"need_wakeup\":%s,\"poll\":%s,\"busy_poll\":%s,\"busy_poll_budget\":%u,"
	       "\"busy_poll_timeout_us\":%u,\"batch\":%u,\"frame_size\":%u,\"unaligned\":%s,"
	       "\"num_frames\":%d,\"fill_ring\":%d,\"comp_ring\":%d,\"rx_ring\":%d,\"tx_ring\":%d,"
	       "\"duration\":%.3f,\"interval\":%.3f",
	       copy_names[cfg->copy], cfg->need_wakeup ? "true" : "false", cfg->poll ? "true" : "false",
	       cfg->busy_poll ? "true" : "false",
	       cfg->busy_poll ? cfg->busy_poll_budget : 0, cfg->busy_poll ? cfg->busy_poll_timeout_us : 0,
	       cfg->batch, cfg->frame_size, cfg->unaligned ? "true" : "false", NUM_FRAMES, FILL_RING_SIZE,
	       COMP_RING_SIZE, RX_RING_SIZE, TX_RING_SIZE, cfg->duration, cfg->interval);
	if (cfg->bench == BENCH_TXPUSH) {
		inet_ntop(AF_INET, &cfg->src_ip, src, sizeof(src));
		inet_ntop(AF_INET, &cfg->dst_ip, dst, sizeof(dst));
		printf(",\"src_mac\":\"%02x:%02x:%02x:%02x:%02x:%02x\",\"dst_mac\":\"%02x:%02x:%02x:%02x:%02x:%02x\","
		       "\"src_ip\":\"%s\",\"dst_ip\":\"%s\",\"pkt_len\":%u,\"src_port\":%d,\"dst_port\":%u",
		       s[0], s[1], s[2], s[3], s[4], s[5], d[0], d[1], d[2], d[3], d[4], d[5], src, dst,
		       cfg->pkt_len, UDP_SRC_PORT, cfg->dst_port);
	}
	printf("}");
}

static void print_start(const struct bench *b)
{
	const struct config *cfg = &b->cfg;
	unsigned int i;

	printf("{\"type\":\"start\",\"mono\":%.6f,\"dev\":\"%s\",\"ifindex\":%d,\"driver\":\"%s\",\"bench\":\"%s\","
	       "\"mode\":\"%s\",\"xdp_mode\":\"%s\",\"prog_id\":%u,\"queues\":[",
	       (double)now_ns() / NSEC_PER_SEC, cfg->dev, cfg->ifindex, cfg->driver, bench_names[cfg->bench],
	       bind_mode(b), cfg->skb_mode ? "skb" : "drv", b->prog_id);
	for (i = 0; i < cfg->nqueues; i++)
		printf("%s{\"queue\":%u,\"cpu\":%d,\"zerocopy\":%s}", i ? "," : "", b->q[i].queue, b->q[i].cpu,
		       b->q[i].zerocopy ? "true" : "false");
	printf("],\"version\":\"%s\"}\n", XSK_BENCH_VERSION);
	fflush(stdout);
}

static void print_interval(struct bench *b, double t, double dt)
{
	unsigned long long rx = 0, tx = 0, drx[XSK_MAX_QUEUES], dtx[XSK_MAX_QUEUES];
	double mono = (double)now_ns() / NSEC_PER_SEC;
	unsigned int i, n = b->cfg.nqueues;

	for (i = 0; i < n; i++) {
		struct xsk_queue *x = &b->q[i];
		unsigned long long r = x->rx_packets, s = x->tx_packets;

		drx[i] = r - x->last_rx;
		dtx[i] = s - x->last_tx;
		x->last_rx = r;
		x->last_tx = s;
		rx += drx[i];
		tx += dtx[i];
	}
	/* mono: end of the interval on CLOCK_MONOTONIC */
	printf("{\"type\":\"interval\",\"t\":%.3f,\"mono\":%.6f,\"interval_s\":%.3f,\"rx\":%llu,\"tx\":%llu,"
	       "\"rx_pps\":%.0f,\"tx_pps\":%.0f,\"queues\":[",
	       t, mono, dt, rx, tx, dt > 0 ? rx / dt : 0.0, dt > 0 ? tx / dt : 0.0);
	for (i = 0; i < n; i++)
		printf("%s{\"queue\":%u,\"cpu\":%d,\"rx\":%llu,\"tx\":%llu}", i ? "," : "", b->q[i].queue,
		       b->q[i].cpu, drx[i], dtx[i]);
	/* counters since bind, per socket */
	printf("]}\n{\"type\":\"xdp_statistics\",\"mono\":%.6f,\"queues\":[", mono);
	for (i = 0; i < n; i++) {
		printf("%s{\"queue\":%u,\"stats\":", i ? "," : "", b->q[i].queue);
		print_stats_fields(&b->q[i]);
		printf("}");
	}
	printf("]}\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	unsigned long long start, next_tick, last_tick, end, interval_ns, stop_at, rx = 0, tx = 0;
	struct sigaction sa = { .sa_handler = on_signal };
	struct config *cfg = &bench.cfg;
	bool failed = false, detached;
	sigset_t block, old;
	unsigned int i;
	int err;

	die_cleanup = cleanup_on_die;
	/* a signal during setup must not kill us with the program attached */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	parse_args(argc, argv, cfg);
	check_dev(cfg);
	check_cpus(cfg);
	libbpf_logging();

	bench.skel = xsk_bench__open_and_load();
	if (!bench.skel)
		die("cannot load the XDP program: %s (needs root/CAP_BPF and CAP_NET_ADMIN)", strerror(errno));
	for (i = 0; i < cfg->nqueues; i++) {
		struct xsk_queue *x = &bench.q[i];
		int fd;

		x->queue = cfg->queues[i];
		x->cpu = cfg->cpus[i];
		x->cfg = cfg;
		setup_queue(cfg, x);
		if (cfg->bench == BENCH_TXPUSH)
			continue;
		fd = x->fd;
		err = bpf_map_update_elem(bpf_map__fd(bench.skel->maps.xsks_map), &x->queue, &fd, BPF_ANY);
		if (err)
			die("queue %u: cannot add the socket to xsks_map: %s", x->queue, strerror(errno));
	}
	attach_prog(&bench);
	if (stopping)
		die("stopped by %s during setup", stop_signal == SIGINT ? "SIGINT" : "SIGTERM");
	print_start(&bench);

	/* signals go to the main thread: queue threads start with them blocked */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	start = now_ns();
	for (i = 0; i < cfg->nqueues; i++) {
		errno = pthread_create(&bench.q[i].thread, NULL, queue_main, &bench.q[i]);
		if (errno) {
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			die("cannot start the thread of queue %u: %s", bench.q[i].queue, strerror(errno));
		}
		bench.q[i].thread_started = true;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);

	interval_ns = (unsigned long long)(cfg->interval * NSEC_PER_SEC);
	stop_at = cfg->duration > 0 ? start + (unsigned long long)(cfg->duration * NSEC_PER_SEC) : ULLONG_MAX;
	last_tick = start;
	next_tick = start + interval_ns;
	while (!stopping) {
		unsigned long long now = now_ns(), wake = next_tick < stop_at ? next_tick : stop_at;
		struct timespec ts;

		if (now >= stop_at)
			break;
		if (now < wake) {
			ts.tv_sec = (wake - now) / NSEC_PER_SEC;
			ts.tv_nsec = (wake - now) % NSEC_PER_SEC;
			nanosleep(&ts, NULL); /* EINTR on a signal: the loop re-checks */
			continue;
		}
		print_interval(&bench, (now - start) / 1e9, (now - last_tick) / 1e9);
		last_tick = now;
		next_tick += interval_ns;
	}
	stopping = true;
	for (i = 0; i < cfg->nqueues; i++) {
		pthread_join(bench.q[i].thread, NULL);
		bench.q[i].thread_started = false;
	}
	end = now_ns();

	for (i = 0; i < cfg->nqueues; i++) {
		struct xsk_queue *x = &bench.q[i];

		rx += x->rx_packets;
		tx += x->tx_packets;
		if (x->err) {
			fprintf(stderr, "xdplab-xsk-bench: queue %u on CPU %d: %s failed: %s\n", x->queue, x->cpu,
				x->err_what, strerror(x->err));
			failed = true;
		}
	}

	/* summary: totals, then the final XDP statistics while the sockets still exist */
	printf("{\"type\":\"summary\",\"dev\":\"%s\",\"ifindex\":%d,\"driver\":\"%s\",\"bench\":\"%s\",\"mode\":\"%s\","
	       "\"xdp_mode\":\"%s\",\"prog_id\":%u,\"elapsed_s\":%.3f,\"rx\":%llu,\"tx\":%llu,\"rx_pps\":%.0f,"
	       "\"tx_pps\":%.0f,\"stopped_by\":\"%s\",\"queues\":[",
	       cfg->dev, cfg->ifindex, cfg->driver, bench_names[cfg->bench], bind_mode(&bench),
	       cfg->skb_mode ? "skb" : "drv", bench.prog_id, (end - start) / 1e9, rx, tx,
	       rx / ((end - start) / 1e9), tx / ((end - start) / 1e9),
	       failed ? "error" : stop_signal == SIGINT ? "SIGINT" : stop_signal == SIGTERM ? "SIGTERM" : "duration");
	for (i = 0; i < cfg->nqueues; i++) {
		struct xsk_queue *x = &bench.q[i];

		printf("%s{\"queue\":%u,\"cpu\":%d,\"zerocopy\":%s,\"rx\":%llu,\"tx\":%llu,\"xdp_statistics\":",
		       i ? "," : "", x->queue, x->cpu, x->zerocopy ? "true" : "false",
		       (unsigned long long)x->rx_packets, (unsigned long long)x->tx_packets);
		print_stats_fields(x);
		printf("}");
	}
	printf("],");
	print_options(cfg);
	cleanup(&bench, false);
	detached = !prog_still_attached(&bench);
	printf(",\"xdp_detached\":%s,\"libbpf\":\"%s\",\"version\":\"%s\"}\n", detached ? "true" : "false",
	       libbpf_version_string(), XSK_BENCH_VERSION);
	fflush(stdout);
	if (!detached) {
		fprintf(stderr, "xdplab-xsk-bench: XDP program id %u is still attached to %s after detaching: "
			"remove it with ip link set dev %s xdp off\n", bench.prog_id, cfg->dev, cfg->dev);
		failed = true;
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
