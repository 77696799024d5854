/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers shared by the userspace programs of bpf/ (xdplab-trafficgen,
 * xdplab-xsk-bench): fatal errors, the monotonic clock, the IPv4 header
 * checksum, libbpf's log output and the frame constants.
 *
 * The including program defines XDPLAB_PROG_NAME (its name, the prefix of
 * every error line) before including this header. A program that must undo
 * something before exiting on an error sets die_cleanup.
 */
#ifndef XDPLAB_COMMON_H
#define XDPLAB_COMMON_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <linux/types.h>

#include <bpf/libbpf.h>

#ifndef XDPLAB_PROG_NAME
#error "define XDPLAB_PROG_NAME before including common.h"
#endif

#define NSEC_PER_SEC 1000000000ULL
#define NSEC_PER_MSEC 1000000ULL

/* The UDP frames both programs build (a 64-byte frame is 60 bytes + FCS). */
#define FCS_LEN 4
#define MIN_PKT_LEN 64   /* on the wire with FCS */
#define MAX_PKT_LEN 1518 /* on the wire with FCS */
#define IP_TTL_DEFAULT 64
#define MAX_PORT 65535

/* Called by die() before it exits, if set (for example: detach, close). */
static void (*die_cleanup)(void);

/* Print "PROG: message" on stderr, run die_cleanup, exit non-zero. */
static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, XDPLAB_PROG_NAME ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (die_cleanup)
		die_cleanup();
	exit(EXIT_FAILURE);
}

/* CLOCK_MONOTONIC in nanoseconds. */
static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/* The Internet checksum (RFC 1071) of an IPv4 header of len bytes, whose
 * check field is zero.
 */
static __u16 ipv4_checksum(const void *hdr, unsigned int len)
{
	const __u16 *p = hdr;
	__u32 sum = 0;

	for (; len > 1; len -= 2)
		sum += *p++;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

/* libbpf's warnings and errors on stderr, its debug chatter dropped. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static void libbpf_logging(void)
{
	libbpf_set_print(libbpf_print);
}

#endif /* XDPLAB_COMMON_H */
