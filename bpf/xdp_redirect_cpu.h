/* SPDX-License-Identifier: GPL-2.0 */
/* xdp_redirect_cpu.h: definitions shared by xdp_redirect_cpu.bpf.c and the userspace that fills its maps
 * (plugins/modules/xdp_program.py map_entries: cpu_map {CPU: {qsize, program}}, tx_ports {0: egress port}).
 */
#ifndef XDP_REDIRECT_CPU_H
#define XDP_REDIRECT_CPU_H

/* cpu_map (cpumap) is indexed by CPU number: it covers CPUs 0 .. CPU_MAP_ENTRIES - 1. */
#define CPU_MAP_ENTRIES 64

#endif /* XDP_REDIRECT_CPU_H */
