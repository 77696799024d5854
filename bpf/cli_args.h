/* SPDX-License-Identifier: GPL-2.0 */
/* Command-line parsers shared by the userspace programs of bpf/ (xdplab-trafficgen,
 * xdplab-xsk-bench). The including program includes common.h first, whose die()
 * prints the message with the program's name and exits non-zero.
 */
#ifndef XDPLAB_CLI_ARGS_H
#define XDPLAB_CLI_ARGS_H

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_ether.h>
#include <linux/types.h>

/* Length of "02:00:00:00:00:01" */
#define MAC_STRING_LEN 17

static void die(const char *fmt, ...);

/* A decimal number of option --opt within min..max, or die naming the option. */
static unsigned long parse_uint(const char *opt, const char *s, unsigned long min,
				unsigned long max)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		die("--%s: '%s' is not a number", opt, s);
	if (v < min || v > max)
		die("--%s %lu is out of range %lu..%lu", opt, v, min, max);
	return v;
}

/* A MAC address written aa:bb:cc:dd:ee:ff into mac[ETH_ALEN]. */
static void parse_mac(const char *opt, const char *s, __u8 *mac)
{
	unsigned int b[ETH_ALEN];
	char tail;
	int i;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3],
		   &b[4], &b[5], &tail) != ETH_ALEN || strlen(s) != MAC_STRING_LEN)
		die("--%s: '%s' is not a MAC address like 02:00:00:00:00:01", opt, s);
	for (i = 0; i < ETH_ALEN; i++)
		mac[i] = b[i];
}

/* A dotted IPv4 address. */
static void parse_ip(const char *opt, const char *s, struct in_addr *ip)
{
	if (inet_pton(AF_INET, s, ip) != 1)
		die("--%s: '%s' is not an IPv4 address like 10.0.0.1", opt, s);
}

#endif /* XDPLAB_CLI_ARGS_H */
