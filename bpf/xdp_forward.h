/* SPDX-License-Identifier: GPL-2.0 */
/* xdp_forward.h: definitions shared by xdp_forward.bpf.c and the userspace that fills its maps
 * (plugins/modules/xdp_program.py map_entries; docs/ARCHITECTURE.md Contract 1b).
 */
#ifndef XDP_FORWARD_H
#define XDP_FORWARD_H

/* tx_ports (devmap): the one egress port, under key TX_PORT_KEY. */
#define TX_PORT_KEY 0
#define TX_PORTS_ENTRIES 1

#endif /* XDP_FORWARD_H */
