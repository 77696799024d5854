#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: netfilter_drop
short_description: Make the DUT's network stack drop the UDP test flows, before or after connection tracking
version_added: 0.2.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Puts in place (or removes) one counting drop rule for UDP packets arriving on O(interface) with a destination
    port in O(port_base) .. O(port_base) + O(port_count) - 1, the XDP paper's "Linux (raw)" and
    "Linux (conntrack)" lines of the drop figure.
  - O(mode=raw) drops in a prerouting chain at priority raw (-300), before connection tracking.
    O(mode=conntrack) drops in a prerouting chain at priority mangle (-150), after connection tracking, and only
    packets conntrack classified (C(ct state new,established,related)); that match makes the kernel run
    nf_conntrack_in on every packet of the namespace. Both drop before the route lookup, so they differ by
    conntrack only. The conntrack entries are never confirmed (that happens at the end of input), so
    nf_conntrack_count stays near 0 while every packet allocates and frees one.
  - "O(backend=nftables): table C(inet <table>) with one base chain (C(drop_raw) or C(drop_conntrack)).
    O(backend=iptables): a user chain named O(table) in the C(raw) (or C(mangle)) table, jumped to from the first
    rule of its PREROUTING chain; O(iptables_binary) picks C(iptables) (Debian 12: the nf_tables variant) or
    C(iptables-legacy)."
  - O(state=present) leaves exactly that rule set (replaced atomically with nftables when it differs);
    O(state=absent) removes only the module's own table or chains, never other rules. Objects of the other
    backend with the same name are removed too when that backend's command is installed, so only one drop
    is in place.
  - O(mode=ruleset) loads a user's nftables ruleset (O(ruleset), the text of an C(nft -f) file) instead, as it is,
    replacing every table it declares in the same transaction; it must have at least one rule that counts and then
    drops (C(counter drop)), else the module removes it again and fails. O(state=absent) with O(tables) (or
    O(ruleset)) deletes exactly the tables the ruleset declares. Loading that creates a table the ruleset does
    not declare is undone and fails. O(state=present) always loads the ruleset again (its counters start at 0);
    it reports a change when the tables' rules differ from before. The ruleset is nftables whatever O(backend)
    says.
  - Every command is local to the network namespace the module runs in (C(ip netns exec), the
    C(xdplab.testbed.netns) connection).
attributes:
  check_mode:
    support: full
    description: Reports what would change (and the diff) without touching the rule set.
  diff_mode:
    support: full
    description: Before and after rule set text (nftables C(nft -s list table), iptables C(-S) lines).
options:
  state:
    description: Whether the drop rule is in place.
    type: str
    choices: [present, absent]
    default: present
  backend:
    description: Which netfilter front end writes the rule.
    type: str
    choices: [nftables, iptables]
    default: nftables
  mode:
    description:
      - Drop before (C(raw)) or after (C(conntrack)) connection tracking, or load the user's O(ruleset)
        (C(ruleset)).
    type: str
    choices: [raw, conntrack, ruleset]
    default: raw
  ruleset:
    description:
      - With O(mode=ruleset), the text of the user's nftables ruleset (C(nft -f) syntax, no C(include), no
        C(flush ruleset), no C(delete table)). Required with O(mode=ruleset) and O(state=present).
      - With O(state=absent), the tables it declares are deleted (when O(tables) is not given).
    type: str
  tables:
    description:
      - The tables of the user's ruleset as C(FAMILY NAME) (for example C(inet my_drop)).
      - With O(state=present) and O(mode=ruleset), when given, they must be the tables O(ruleset) declares.
      - With O(state=absent), exactly these tables are deleted (those that exist); nothing else is touched.
    type: list
    elements: str
  table:
    description: Name of the nftables table (family inet) or of the iptables user chain.
    type: str
    default: xdplab
  interface:
    description:
      - The DUT port (matched by input interface name). Required with O(state=present) and must exist in the
        module's network namespace. Ignored with O(state=absent).
    type: str
  protocol:
    description: Protocol of the test flows.
    type: str
    choices: [udp]
    default: udp
  port_base:
    description: UDP destination port of the first test flow (the paper's generator uses 12 + flow number).
    type: int
    default: 12
  port_count:
    description: Number of consecutive destination ports (flows) to drop.
    type: int
    default: 1
  iptables_binary:
    description:
      - The iptables command for O(backend=iptables), for example C(iptables-legacy) or C(iptables-nft).
      - With O(backend=nftables) it is only used to look for leftovers of an earlier O(backend=iptables) run.
        Reading with C(iptables-legacy) instantiates the legacy raw and mangle tables in the namespace (empty,
        but every packet then walks them), so leave the default there unless the earlier run used legacy.
    type: str
    default: iptables
requirements:
  - root in the DUT's network namespace
  - Debian package C(nftables) (O(backend=nftables), O(mode=ruleset)) or C(iptables) (O(backend=iptables))
  - a kernel with nf_tables (or x_tables) and nf_conntrack (built in or loadable)
seealso:
  - module: xdplab.testbed.netfilter_stats
"""

EXAMPLES = r"""
- name: Drop the test flows before conntrack (Linux raw)
  xdplab.testbed.netfilter_drop:
    interface: dut0
    mode: raw
    port_base: 12
    port_count: 4

- name: Same with iptables-legacy after conntrack
  xdplab.testbed.netfilter_drop:
    backend: iptables
    iptables_binary: iptables-legacy
    interface: dut0
    mode: conntrack
    port_count: 4

- name: Remove it
  xdplab.testbed.netfilter_drop:
    state: absent

- name: Load a user's ruleset (it declares table inet my_drop)
  xdplab.testbed.netfilter_drop:
    mode: ruleset
    interface: dut0
    ruleset: "{{ lookup('ansible.builtin.file', 'my_drop.nft') }}"

- name: Remove exactly its tables
  xdplab.testbed.netfilter_drop:
    state: absent
    tables: [inet my_drop]
"""

RETURN = r"""
rules:
  description: "The module's rules as they are now, with their handles (iptables: rule numbers) and counters."
  returned: always
  type: list
  elements: dict
  sample: [{table: inet xdplab, chain: drop_raw, hook: prerouting, priority: -300, handle: 2, packets: 0, bytes: 0}]
handles:
  description: Handles (nftables) or rule numbers (iptables) of the drop rules.
  returned: always
  type: list
  elements: int
  sample: [2]
ruleset:
  description: The module's rule set as text (empty when absent).
  returned: always
  type: str
  sample: "table inet xdplab {\n\tchain drop_raw {\n..."
mode:
  description: The mode asked for (null with state absent).
  returned: always
  type: str
  sample: raw
backend:
  description: The backend used.
  returned: always
  type: str
  sample: nftables
backend_version:
  description: C(nft --version) or C(iptables --version).
  returned: always
  type: str
  sample: nftables v1.0.6 (Lester Gooch #5)
binary:
  description: Path of the command used.
  returned: always
  type: str
  sample: /usr/sbin/nft
tables:
  description: With O(mode=ruleset) or O(tables), the tables of the user's ruleset (present) or those deleted (absent).
  returned: when O(mode=ruleset) or O(tables) is given
  type: list
  elements: str
  sample: [inet my_drop]
sha256:
  description: SHA-256 of the O(ruleset) text loaded.
  returned: when O(mode=ruleset) and O(state=present)
  type: str
  sample: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
match:
  description: What the rule matches (state present).
  returned: when state is present
  type: dict
  sample: {interface: dut0, protocol: udp, port_base: 12, port_count: 4, port_last: 15, mode: raw, table: xdplab}
"""

import hashlib
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _netfilter as netfilter


class NetfilterDrop:
    """Does the work; main() only wires it."""

    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.result = {"changed": False, "backend": self.p["backend"], "mode": None, "rules": [], "handles": []}
        self.spec = None
        if self.p["state"] == "present":
            try:
                self.spec = netfilter.Spec(self.p["mode"], self.p["interface"], self.p["port_base"],
                                           self.p["port_count"], self.p["table"], self.p["protocol"])
            except netfilter.NetfilterError as exc:
                self.fail(str(exc))
            self.check_interface()
            self.result["mode"] = self.spec.mode
            self.result["match"] = self.spec.as_dict()
        elif not netfilter.NAME_RE.match(self.p["table"] or ""):
            self.fail(f"table {self.p['table']!r} is not a valid name")
        self.backend = netfilter.backend_for(module, self.p["backend"], self.p["iptables_binary"])
        self.other = self.other_backend()
        self.result["binary"] = self.backend.nft if self.p["backend"] == "nftables" else self.backend.ipt

    def fail(self, msg):
        self.module.fail_json(msg=msg, **self.result)

    def check_interface(self):
        names = [n for _i, n in socket.if_nameindex()]
        if self.p["interface"] not in names:
            self.fail(f"interface {self.p['interface']} does not exist in this network namespace (interfaces here: "
                      f"{', '.join(names)}); run the module in the DUT's namespace or fix interface")

    def other_backend(self):
        """The other backend's object, when its command is installed (to clean up our leftovers there)."""
        if self.p["backend"] == "nftables":
            path = self.module.get_bin_path(self.p["iptables_binary"])
            return netfilter.Iptables(self.module.run_command, path) if path else None
        path = self.module.get_bin_path("nft")
        return netfilter.Nftables(self.module.run_command, path) if path else None

    def other_has_ours(self):
        return self.other is not None and self.other.exists(self.other.read(self.p["table"]))

    def run(self):
        table = self.p["table"]
        try:
            self.result["backend_version"] = self.backend.version()
            before_text = self.backend.text(table)
            current = self.backend.read(table)
            leftovers = self.other_has_ours()
            if self.p["state"] == "present":
                wanted = not self.backend.matches(self.spec, current)
                if wanted and not self.module.check_mode:
                    self.backend.apply(self.spec)
                planned = self.backend.desired_text(self.spec)
            else:
                wanted = self.backend.exists(current)
                if wanted and not self.module.check_mode:
                    self.backend.remove(table)
                planned = ""
            if leftovers and not self.module.check_mode:
                self.other.remove(table)
                self.module.warn(f"removed the {self.other.name} objects named {table} left by an earlier run")
            self.result["changed"] = bool(wanted or leftovers)
            after_text = (planned if wanted else before_text) if self.module.check_mode else self.backend.text(table)
            self.result["ruleset"] = after_text
            if self.module._diff:
                header = f"{self.p['backend']} {table}"
                self.result["diff"] = {"before": before_text, "after": after_text,
                                       "before_header": header, "after_header": header}
            self.result["rules"] = self.backend.describe(table)
            self.result["handles"] = [r["handle"] for r in self.result["rules"]]
        except netfilter.NetfilterError as exc:
            self.fail(str(exc))
        return self.result


class RulesetDrop:
    """A user's nftables ruleset (mode ruleset, or state absent with its tables): load it, check that it counts its
    drops, remove exactly its tables."""

    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.result = {"changed": False, "backend": "nftables", "mode": netfilter.RULESET_MODE, "rules": [],
                       "handles": [], "tables": []}
        text = self.p["ruleset"]
        self.tables = list(self.p["tables"] or [])
        if self.p["state"] == "present":
            if not text:
                self.fail("mode ruleset needs ruleset (the text of the nftables ruleset file)")
            problems = netfilter.nft_ruleset_problems(text)
            if problems:
                self.fail("the ruleset " + "; ".join(problems))
            declared = netfilter.nft_ruleset_tables(text)
            if self.tables and sorted(self.tables) != sorted(declared):
                self.fail(f"tables {self.tables} are not the tables the ruleset declares ({declared})")
            self.tables = declared
        elif not self.tables and text:
            self.tables = netfilter.nft_ruleset_tables(text)
        try:
            for table in self.tables:
                netfilter.nft_table_key(table)
        except netfilter.NetfilterError as exc:
            self.fail(str(exc))
        self.result["tables"] = self.tables
        self.nft = netfilter.NftRuleset(module.run_command, netfilter.backend_for(module, "nftables").nft)
        self.result["binary"] = self.nft.nft

    def fail(self, msg):
        self.module.fail_json(msg=msg, **self.result)

    def describe(self):
        rows = self.nft.drops(self.tables)
        self.result["rules"] = rows
        self.result["handles"] = [r["handle"] for r in rows]
        return rows

    def present(self, before_text):
        text = self.p["ruleset"]
        self.result["sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if self.module.check_mode:
            self.nft.check(text, self.tables)
            return True, before_text
        before = self.nft.tables()
        self.nft.load(text, self.tables)
        extra = sorted(self.nft.tables() - before - set(self.tables))
        if extra:
            self.nft.remove(self.tables + extra)
            self.fail(f"loading the ruleset created table(s) {', '.join(extra)} it does not declare as `table FAMILY "
                      f"NAME`; removed it again (declare every table, so that teardown removes exactly those)")
        if not self.describe():
            self.nft.remove(self.tables)
            self.fail(f"the ruleset's tables ({', '.join(self.tables)}) have no rule that counts and then drops: "
                      f"add `counter` before `drop` in the rules that drop the test flows (for example "
                      f"`udp dport 12-27 counter drop`); removed it again")
        after_text = self.nft.text(self.tables)
        return after_text != before_text, after_text

    def run(self):
        try:
            self.result["backend_version"] = self.nft.version()
            before_text = self.nft.text(self.tables)
            if self.p["state"] == "present":
                changed, after_text = self.present(before_text)
            else:
                present = self.nft.tables()
                changed = any(t in present for t in self.tables)
                if changed and not self.module.check_mode:
                    self.nft.remove(self.tables)
                after_text = "" if self.module.check_mode else self.nft.text(self.tables)
            self.result["changed"] = changed
            self.result["ruleset"] = after_text
            if self.module._diff:
                header = f"nftables {', '.join(self.tables)}"
                self.result["diff"] = {"before": before_text, "after": after_text,
                                       "before_header": header, "after_header": header}
            if self.p["state"] == "present" and not self.module.check_mode:
                self.result["match"] = {"mode": netfilter.RULESET_MODE, "interface": self.p["interface"],
                                        "tables": self.tables}
        except netfilter.NetfilterError as exc:
            self.fail(str(exc))
        return self.result


def main():
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
            "backend": {"type": "str", "choices": list(netfilter.BACKENDS), "default": "nftables"},
            "mode": {"type": "str", "choices": [*netfilter.MODES, netfilter.RULESET_MODE], "default": "raw"},
            "ruleset": {"type": "str"},
            "tables": {"type": "list", "elements": "str"},
            "table": {"type": "str", "default": "xdplab"},
            "interface": {"type": "str"},
            "protocol": {"type": "str", "choices": ["udp"], "default": "udp"},
            "port_base": {"type": "int", "default": 12},
            "port_count": {"type": "int", "default": 1},
            "iptables_binary": {"type": "str", "default": "iptables"},
        },
        required_if=[("state", "present", ("interface",))],
        supports_check_mode=True,
    )
    ruleset = module.params["mode"] == netfilter.RULESET_MODE or (
        module.params["state"] == "absent" and bool(module.params["tables"] or module.params["ruleset"])
    )
    module.exit_json(**(RulesetDrop(module) if ruleset else NetfilterDrop(module)).run())


if __name__ == "__main__":
    main()
