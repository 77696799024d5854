/* SPDX-License-Identifier: GPL-2.0 */
/* xdp_cpumap.h: the cpumap that the project's cpumap programs redirect into (xdp_redirect_cpu.bpf.c,
 * xdp_ddos_filter.bpf.c): one definition, filled by the same userspace (plugins/modules/xdp_program.py
 * map_entries: cpu_map {CPU: {qsize, program}}; plugins/module_utils/_systems.py cpumap_entries).
 * Include it from a BPF program after <bpf/bpf_helpers.h>.
 */
#ifndef XDP_CPUMAP_H
#define XDP_CPUMAP_H

#include "xdp_redirect_cpu.h"

struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__type(key, __u32); /* CPU number */
	__type(value, struct bpf_cpumap_val); /* queue size and the program run on that CPU (none: the stack) */
	__uint(max_entries, CPU_MAP_ENTRIES);
} cpu_map SEC(".maps");

#endif /* XDP_CPUMAP_H */
