// SPDX-License-Identifier: GPL-2.0
/* tcp_rr.c: xdplab-tcp-rr, a TCP request/response benchmark in the pattern of netperf's TCP_RR (issue 27).
 *
 * One TCP connection, TCP_NODELAY, one transaction outstanding at a time: the client writes a request of
 * --request-size bytes (1 by default, as netperf TCP_RR), the server reads it whole and writes a response of
 * --response-size bytes (1), the client reads it whole; that is one transaction. Transactions per second is
 * what netperf TCP_RR reports; with one outstanding transaction it is 1 / the round trip.
 *
 *   xdplab-tcp-rr --listen ADDR:PORT [--cpu N] [--request-size B] [--response-size B]
 *   xdplab-tcp-rr --connect ADDR:PORT [--cpu N] [--warmup S] [--duration S] [--interval S]
 *                 [--request-size B] [--response-size B]
 *
 * Output: JSON lines on stdout, like xdplab-trafficgen. First {"type":"start",...}; with --warmup the client then
 * prints {"type":"warmup","transactions":..} after that many seconds (left out of the summary); then one
 * {"type":"interval","t":..,"mono":..,"interval_s":..,"transactions":..,"trans_per_s":..} per interval (0
 * transactions while the connection makes no progress: a flood that starves it shows as zeros, not as a hang)
 * (a transaction still in flight when the duration ends is not counted: the server may count one more)
 * and on exit (duration over, SIGINT or SIGTERM) {"type":"summary","transactions":..,"elapsed_s":..,
 * "trans_per_s":..,"latency_us":{"mean","p50","p90","p99","max"},...,"version":..}. The server prints a summary of
 * the transactions it served when it gets SIGINT or SIGTERM. Exit code 0 after a summary; errors go to stderr
 * with a non-zero exit.
 *
 * The client keeps trying to connect (every 100 ms) until the duration is over, so a server that is not reached
 * yields intervals of 0 and "connected":false in the summary rather than an error.
 */
#define _GNU_SOURCE
#define XDPLAB_PROG_NAME "xdplab-tcp-rr"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* the shared helpers this tool does not use (the frame and libbpf ones) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "common.h"
#include "cli_args.h"
#pragma GCC diagnostic pop

#define TCP_RR_VERSION "0.1.0"
#define MAX_MSG 65536
/* latency histogram: 64 octaves of 32 linear steps each (relative error < 1/32) */
#define HIST_SUB 32
#define HIST_OCTAVES 64

static volatile sig_atomic_t stop_flag;

struct cfg {
	int listen;
	struct sockaddr_in addr;
	char addr_text[64];
	int cpu;
	double warmup;
	double duration;
	double interval;
	unsigned int req_size;
	unsigned int resp_size;
};

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: xdplab-tcp-rr --listen ADDR:PORT [--cpu N] [--request-size B] [--response-size B]\n"
		"       xdplab-tcp-rr --connect ADDR:PORT [--cpu N] [--warmup S] [--duration S] [--interval S]\n"
		"                     [--request-size B] [--response-size B]\n");
	exit(EXIT_FAILURE);
}

static void parse_addr(const char *opt, const char *s, struct cfg *cfg)
{
	char host[48];
	const char *colon = strrchr(s, ':');

	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(host))
		die("--%s: '%s' is not ADDR:PORT like 10.0.0.1:12865", opt, s);
	memcpy(host, s, colon - s);
	host[colon - s] = '\0';
	memset(&cfg->addr, 0, sizeof(cfg->addr));
	cfg->addr.sin_family = AF_INET;
	parse_ip(opt, host, &cfg->addr.sin_addr);
	cfg->addr.sin_port = htons(parse_uint(opt, colon + 1, 1, MAX_PORT));
	snprintf(cfg->addr_text, sizeof(cfg->addr_text), "%s", s);
}

static double parse_seconds(const char *opt, const char *s, double min)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < min)
		die("--%s: '%s' is not a number of seconds >= %g", opt, s, min);
	return v;
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("--cpu %d: sched_setaffinity: %s", cpu, strerror(errno));
}

static void nodelay(int fd)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		die("TCP_NODELAY: %s", strerror(errno));
}

/* Move len bytes through fd (read when rd, else write), waiting in poll at most until deadline_ns.
 * 1: done; 0: stopped or the deadline passed first; -1: the peer closed or an error (errno). */
static int xfer(int fd, char *buf, size_t len, int rd, unsigned long long deadline_ns)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = rd ? recv(fd, buf + done, len - done, MSG_DONTWAIT)
			       : send(fd, buf + done, len - done, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0) {
			done += n;
			continue;
		}
		if (n == 0 && rd)
			return -1;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		for (;;) {
			unsigned long long now = now_ns();
			struct pollfd p = { .fd = fd, .events = rd ? POLLIN : POLLOUT };
			int ms;

			if (stop_flag || now >= deadline_ns)
				return 0;
			ms = (int)((deadline_ns - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC);
			if (poll(&p, 1, ms > 50 ? 50 : ms) > 0)
				break;
		}
	}
	return 1;
}

static void print_start(const struct cfg *cfg, const char *role)
{
	printf("{\"type\":\"start\",\"mono\":%.6f,\"role\":\"%s\",\"addr\":\"%s\",\"cpu\":%d,\"request_size\":%u,"
	       "\"response_size\":%u,\"version\":\"%s\"}\n",
	       (double)now_ns() / NSEC_PER_SEC, role, cfg->addr_text, cfg->cpu, cfg->req_size, cfg->resp_size,
	       TCP_RR_VERSION);
	fflush(stdout);
}

static int run_server(const struct cfg *cfg)
{
	static char buf[MAX_MSG];
	unsigned long long served = 0, conns = 0, start = now_ns();
	int one = 1, lfd;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		die("socket: %s", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&cfg->addr, sizeof(cfg->addr)))
		die("--listen %s: bind: %s", cfg->addr_text, strerror(errno));
	if (listen(lfd, 16))
		die("listen: %s", strerror(errno));
	print_start(cfg, "server");
	while (!stop_flag) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		int fd;

		if (poll(&p, 1, 100) <= 0)
			continue;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		nodelay(fd);
		conns++;
		/* one connection at a time, as netperf's TCP_RR data connection */
		while (!stop_flag) {
			int r = xfer(fd, buf, cfg->req_size, 1, ~0ULL);

			if (r <= 0)
				break;
			if (xfer(fd, buf, cfg->resp_size, 0, ~0ULL) <= 0)
				break;
			served++;
		}
		close(fd);
	}
	close(lfd);
	printf("{\"type\":\"summary\",\"role\":\"server\",\"transactions\":%llu,\"connections\":%llu,"
	       "\"elapsed_s\":%.6f,\"version\":\"%s\"}\n",
	       served, conns, (double)(now_ns() - start) / NSEC_PER_SEC, TCP_RR_VERSION);
	return 0;
}

static unsigned int hist_index(unsigned long long ns)
{
	unsigned int octave = 0;

	while ((ns >> octave) >= 2 * HIST_SUB && octave < HIST_OCTAVES - 1)
		octave++;
	if (octave == 0)
		return ns < 2 * HIST_SUB ? (unsigned int)ns : 2 * HIST_SUB - 1;
	return HIST_SUB + octave * HIST_SUB + (unsigned int)((ns >> octave) - HIST_SUB);
}

static double hist_value(unsigned int i)
{
	unsigned int octave;

	if (i < 2 * HIST_SUB)
		return i;
	octave = (i - HIST_SUB) / HIST_SUB;
	return (double)(((i - HIST_SUB) % HIST_SUB + HIST_SUB) << octave) + (double)(1ULL << octave) / 2;
}

#define HIST_LEN (HIST_SUB + HIST_OCTAVES * HIST_SUB)

static double percentile(const unsigned long long *hist, unsigned long long total, double q)
{
	unsigned long long want = (unsigned long long)ceil(q * total), seen = 0;
	unsigned int i;

	if (!total)
		return 0;
	for (i = 0; i < HIST_LEN; i++) {
		seen += hist[i];
		if (seen >= want)
			return hist_value(i);
	}
	return hist_value(HIST_LEN - 1);
}

static int try_connect(const struct cfg *cfg, unsigned long long deadline_ns)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int err = 0;
	socklen_t len = sizeof(err);

	if (fd < 0)
		die("socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&cfg->addr, sizeof(cfg->addr)) && errno != EINPROGRESS)
		goto fail;
	while (!stop_flag && now_ns() < deadline_ns) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };

		if (poll(&p, 1, 50) <= 0)
			continue;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) || err)
			goto fail;
		nodelay(fd);
		return fd;
	}
fail:
	close(fd);
	return -1;
}

static int run_client(const struct cfg *cfg)
{
	static char req[MAX_MSG], resp[MAX_MSG];
	static unsigned long long hist[HIST_LEN];
	unsigned long long start, end, next, last, total = 0, in_interval = 0, lat_sum = 0, lat_max = 0;
	unsigned long long iv_ns = (unsigned long long)(cfg->interval * NSEC_PER_SEC);
	unsigned long long connects = 0, failures = 0;
	unsigned long long warm_end;
	int fd = -1, warming = cfg->warmup > 0;
	double elapsed;

	memset(req, 'r', sizeof(req));
	print_start(cfg, "client");
	start = now_ns();
	warm_end = start + (unsigned long long)(cfg->warmup * NSEC_PER_SEC);
	end = warm_end + (unsigned long long)(cfg->duration * NSEC_PER_SEC);
	next = warm_end > start ? warm_end : start + iv_ns;
	last = start;
	while (!stop_flag) {
		unsigned long long now = now_ns(), until = next < end ? next : end;

		if (warming && now >= warm_end) {
			printf("{\"type\":\"warmup\",\"mono\":%.6f,\"seconds\":%.6f,\"transactions\":%llu}\n",
			       (double)now / NSEC_PER_SEC, (double)(now - start) / NSEC_PER_SEC, total);
			fflush(stdout);
			warming = 0;
			total = in_interval = lat_sum = lat_max = 0;
			memset(hist, 0, sizeof(hist));
			start = last = warm_end;
			next = warm_end + iv_ns;
			continue;
		}
		if (now >= next || now >= end) {
			unsigned long long at = now < until ? now : until;
			double s = (double)(at - last) / NSEC_PER_SEC;

			printf("{\"type\":\"interval\",\"t\":%.3f,\"mono\":%.6f,\"interval_s\":%.6f,\"transactions\":%llu,"
			       "\"trans_per_s\":%.1f}\n",
			       (double)(at - start) / NSEC_PER_SEC, (double)at / NSEC_PER_SEC, s, in_interval,
			       s > 0 ? in_interval / s : 0.0);
			fflush(stdout);
			in_interval = 0;
			last = at;
			/* the run ends with its last interval printed: a transaction that stalled past several interval
			 * ends (a starved connection returns only at the run's end) leaves each of them printed, with 0 */
			if (at >= end)
				break;
			next += iv_ns;
			continue;
		}
		if (fd < 0) {
			fd = try_connect(cfg, until);
			if (fd < 0) {
				failures++;
				if (!stop_flag && now_ns() < until)
					usleep(100000);
				continue;
			}
			connects++;
		}
		{
			unsigned long long t0 = now_ns(), dt;
			int r = xfer(fd, req, cfg->req_size, 0, end);

			/* a transaction started runs to its end or to the run's end: one outstanding, never two */
			if (r > 0)
				r = xfer(fd, resp, cfg->resp_size, 1, end);
			if (r < 0) {
				close(fd);
				fd = -1;
				failures++;
				continue;
			}
			if (r == 0)
				continue;
			dt = now_ns() - t0;
			total++;
			in_interval++;
			lat_sum += dt;
			if (dt > lat_max)
				lat_max = dt;
			hist[hist_index(dt)]++;
		}
	}
	if (fd >= 0)
		close(fd);
	elapsed = (double)(now_ns() - start) / NSEC_PER_SEC;
	printf("{\"type\":\"summary\",\"role\":\"client\",\"transactions\":%llu,\"elapsed_s\":%.6f,\"trans_per_s\":%.1f,"
	       "\"latency_us\":{\"mean\":%.2f,\"p50\":%.2f,\"p90\":%.2f,\"p99\":%.2f,\"max\":%.2f},"
	       "\"connected\":%s,\"connects\":%llu,\"connect_or_io_failures\":%llu,\"request_size\":%u,"
	       "\"response_size\":%u,\"interval_s\":%g,\"stopped\":%s,\"version\":\"%s\"}\n",
	       total, elapsed, elapsed > 0 ? total / elapsed : 0.0, total ? (double)lat_sum / total / 1000 : 0.0,
	       percentile(hist, total, 0.50) / 1000, percentile(hist, total, 0.90) / 1000,
	       percentile(hist, total, 0.99) / 1000, (double)lat_max / 1000, connects ? "true" : "false", connects,
	       failures, cfg->req_size, cfg->resp_size, cfg->interval, stop_flag ? "true" : "false", TCP_RR_VERSION);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },   { "connect", required_argument, NULL, 'c' },
		{ "cpu", required_argument, NULL, 'C' },      { "duration", required_argument, NULL, 'd' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "interval", required_argument, NULL, 'i' }, { "request-size", required_argument, NULL, 'r' },
		{ "response-size", required_argument, NULL, 'R' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cfg cfg = { .listen = -1, .cpu = -1, .duration = 10, .interval = 1, .req_size = 1, .resp_size = 1 };
	struct sigaction sa = { .sa_handler = on_signal };
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'l':
		case 'c':
			if (cfg.listen >= 0)
				die("give one of --listen and --connect");
			cfg.listen = o == 'l';
			parse_addr(o == 'l' ? "listen" : "connect", optarg, &cfg);
			break;
		case 'C':
			cfg.cpu = parse_uint("cpu", optarg, 0, CPU_SETSIZE - 1);
			break;
		case 'w':
			cfg.warmup = parse_seconds("warmup", optarg, 0);
			break;
		case 'd':
			cfg.duration = parse_seconds("duration", optarg, 0.1);
			break;
		case 'i':
			cfg.interval = parse_seconds("interval", optarg, 0.01);
			break;
		case 'r':
			cfg.req_size = parse_uint("request-size", optarg, 1, MAX_MSG);
			break;
		case 'R':
			cfg.resp_size = parse_uint("response-size", optarg, 1, MAX_MSG);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || cfg.listen < 0)
		usage();
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	pin(cfg.cpu);
	return cfg.listen ? run_server(&cfg) : run_client(&cfg);
}
