# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""The DUT's own stack drops the test flows: nftables / iptables rule sets, their state and counters.

Shared by the modules netfilter_drop (puts the rules in place) and netfilter_stats (reads their counters), plus
/proc/net/softnet_stat. Pure functions build and compare rule sets; the Backend classes run the commands through
a ``run_command(argv, data=None) -> (rc, out, err)`` callable (AnsibleModule.run_command), so everything is
namespace-local when the module runs under ``ip netns exec``.

Two modes, the paper's "Linux (raw)" and "Linux (conntrack)" lines:

- raw: drop in a prerouting chain at priority raw (-300), before connection tracking (-200) looks at the packet.
- conntrack: drop in a prerouting chain at priority mangle (-150), after conntrack, and only packets conntrack
  classified (``ct state new,established,related``; iptables ``-m conntrack --ctstate NEW,RELATED,ESTABLISHED``).
  The ct match is what makes the kernel register conntrack's hooks in the namespace, so every packet goes
  through nf_conntrack_in, and a packet conntrack did not classify is not dropped (the counter proves it ran).
  The drop comes before conntrack confirms the entry (at the end of input), so each packet allocates an entry,
  misses the hash and frees the entry with the packet: nf_conntrack_count stays near 0.

Both modes drop in prerouting, before the route lookup, so the two differ by conntrack only.
"""

from __future__ import annotations

import json
import re

MODES = ("raw", "conntrack")
BACKENDS = ("nftables", "iptables")
PACKAGES = {"nft": "nftables", "iptables": "iptables", "iptables-legacy": "iptables", "iptables-nft": "iptables"}
NFT_FAMILY = "inet"
# mode -> (chain name, priority number, priority keyword)
NFT_CHAINS = {"raw": ("drop_raw", -300, "raw"), "conntrack": ("drop_conntrack", -150, "mangle")}
NFT_CT_STATES = ("new", "established", "related")
# mode -> iptables table of our chain (jumped to from its PREROUTING)
IPT_TABLES = {"raw": "raw", "conntrack": "mangle"}
IPT_CTSTATE = "NEW,RELATED,ESTABLISHED"
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,27}$")
IFNAME_RE = re.compile(r"^[^\s/:\"']{1,15}$")


class NetfilterError(Exception):
    pass


class Spec:
    """What the drop should look like: mode, interface, UDP destination ports, table (or chain) name."""

    def __init__(self, mode, interface, port_base=12, port_count=1, table="xdplab", protocol="udp"):
        self.mode = mode
        self.interface = interface
        self.port_base = port_base
        self.port_count = port_count
        self.table = table
        self.protocol = protocol
        self.validate()

    @property
    def port_last(self):
        return self.port_base + self.port_count - 1

    def validate(self):
        if self.mode not in MODES:
            raise NetfilterError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.protocol != "udp":
            raise NetfilterError(f"only protocol udp is supported, got {self.protocol!r}")
        if not isinstance(self.port_count, int) or self.port_count < 1:
            raise NetfilterError(f"port_count must be at least 1, got {self.port_count!r}")
        if not isinstance(self.port_base, int) or not 1 <= self.port_base <= 65535 or self.port_last > 65535:
            raise NetfilterError(
                f"UDP destination ports {self.port_base}..{self.port_last} (port_base {self.port_base}, port_count "
                f"{self.port_count}) are outside 1..65535"
            )
        if not NAME_RE.match(self.table or ""):
            raise NetfilterError(
                f"table {self.table!r} is not a valid name (letters, digits, _ and -, at most 28, not starting with a digit)"
            )
        if not self.interface or not IFNAME_RE.match(self.interface):
            raise NetfilterError(f"interface {self.interface!r} is not a valid interface name")

    def ports_text(self, sep="-"):
        if self.port_count == 1:
            return str(self.port_base)
        return f"{self.port_base}{sep}{self.port_last}"

    def as_dict(self):
        return {
            "mode": self.mode,
            "interface": self.interface,
            "protocol": self.protocol,
            "port_base": self.port_base,
            "port_count": self.port_count,
            "port_last": self.port_last,
            "table": self.table,
        }


# ---- nftables ------------------------------------------------------------------------------------------------


def nft_rule_text(spec):
    ct = f" ct state {','.join(NFT_CT_STATES)}" if spec.mode == "conntrack" else ""
    return f'iifname "{spec.interface}" udp dport {spec.ports_text("-")}{ct} counter drop'


def nft_table_text(spec):
    """The table as ``nft -f`` input (also what diff mode shows as "after")."""
    chain, _prio, keyword = NFT_CHAINS[spec.mode]
    return (
        f"table {NFT_FAMILY} {spec.table} {{\n"
        f"\tchain {chain} {{\n"
        f"\t\ttype filter hook prerouting priority {keyword}; policy accept;\n"
        f"\t\t{nft_rule_text(spec)}\n"
        f"\t}}\n"
        f"}}\n"
    )


def nft_replace_script(spec):
    """Atomic replacement: declare (so delete cannot fail), delete, create, all in one transaction."""
    return f"table {NFT_FAMILY} {spec.table}\ndelete table {NFT_FAMILY} {spec.table}\n" + nft_table_text(spec)


def _norm(value):
    """JSON value with lists sorted, so set/bitmask order does not matter."""
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted((_norm(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    return value


def nft_rule_signature(expr):
    """A rule's expressions without counter values, comparable across reads."""
    sig = []
    for e in expr:
        if "counter" in e:
            sig.append({"counter": None})
        else:
            sig.append(_norm(e))
    return json.dumps(sig, sort_keys=True)


def nft_desired(spec):
    """What ``nft -j list table`` returns for our table, reduced to the comparable parts."""
    chain, prio, _kw = NFT_CHAINS[spec.mode]
    ports = spec.port_base if spec.port_count == 1 else {"range": [spec.port_base, spec.port_last]}
    expr = [
        {"match": {"op": "==", "left": {"meta": {"key": "iifname"}}, "right": spec.interface}},
        {"match": {"op": "==", "left": {"payload": {"protocol": "udp", "field": "dport"}}, "right": ports}},
    ]
    if spec.mode == "conntrack":
        expr.append({"match": {"op": "in", "left": {"ct": {"key": "state"}}, "right": list(NFT_CT_STATES)}})
    expr += [{"counter": {"packets": 0, "bytes": 0}}, {"drop": None}]
    return {
        chain: {"type": "filter", "hook": "prerouting", "prio": prio, "policy": "accept", "rules": [nft_rule_signature(expr)]}
    }


def nft_parse(doc):
    """``nft -j list table`` output -> {"chains": {name: {type, hook, prio, policy, handle, rules: [...]}}}
    where each rule is {handle, signature, packets, bytes, drop: bool, text-free expr}."""
    if isinstance(doc, str):
        doc = json.loads(doc)
    chains, version = {}, None
    for item in doc.get("nftables", []):
        if "metainfo" in item:
            version = item["metainfo"].get("version")
        elif "chain" in item:
            c = item["chain"]
            chains[c["name"]] = {k: c.get(k) for k in ("type", "hook", "prio", "policy", "handle")} | {"rules": []}
        elif "rule" in item:
            r = item["rule"]
            counter = next((e["counter"] for e in r["expr"] if "counter" in e), None)
            chains.setdefault(r["chain"], {"rules": []})["rules"].append(
                {
                    "handle": r.get("handle"),
                    "signature": nft_rule_signature(r["expr"]),
                    "packets": counter["packets"] if counter else None,
                    "bytes": counter["bytes"] if counter else None,
                    "drop": any("drop" in e for e in r["expr"]),
                    "iifname": next(
                        (
                            e["match"]["right"]
                            for e in r["expr"]
                            if "match" in e and e["match"]["left"] == {"meta": {"key": "iifname"}}
                        ),
                        None,
                    ),
                    "ct": any(
                        "match" in e and isinstance(e["match"]["left"], dict) and "ct" in e["match"]["left"] for e in r["expr"]
                    ),
                }
            )
    return {"chains": chains, "version": version}


def nft_comparable(parsed):
    return {
        name: {k: c.get(k) for k in ("type", "hook", "prio", "policy")} | {"rules": [r["signature"] for r in c["rules"]]}
        for name, c in parsed["chains"].items()
    }


def nft_mode_of(parsed):
    """Which mode an existing table of ours is in (None if it is not recognisably ours)."""
    for mode, (chain, _p, _k) in NFT_CHAINS.items():
        if chain in parsed["chains"]:
            return mode
    return None


# ---- iptables ------------------------------------------------------------------------------------------------


def ipt_rule_args(spec):
    args = ["-i", spec.interface, "-p", "udp", "-m", "udp", "--dport", spec.ports_text(":")]
    if spec.mode == "conntrack":
        args += ["-m", "conntrack", "--ctstate", IPT_CTSTATE]
    return args + ["-j", "DROP"]


def ipt_desired(spec):
    """{table: {"chain": [rule lines as iptables -S prints them], "jumps": n}} for raw and mangle."""
    chain = spec.table
    out = {}
    for table in ("raw", "mangle"):
        if IPT_TABLES[spec.mode] == table:
            out[table] = {"chain": [f"-A {chain} " + " ".join(ipt_rule_args(spec))], "jumps": 1}
        else:
            out[table] = {"chain": None, "jumps": 0}
    return out


def ipt_parse_save(text, chain):
    """``iptables -t T -S`` -> {"chain": [our rule lines] or None if the chain does not exist, "jumps": n}."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    exists = f"-N {chain}" in lines
    rules = [ln for ln in lines if ln.startswith(f"-A {chain} ")]
    jumps = sum(1 for ln in lines if ln == f"-A PREROUTING -j {chain}")
    return {"chain": rules if exists else None, "jumps": jumps}


def ipt_state_text(state, chain):
    """Our part of the iptables rule set as text (for diff mode), iptables-save like."""
    lines = []
    for table, s in state.items():
        if s["chain"] is None and not s["jumps"]:
            continue
        lines.append(f"*{table}")
        if s["chain"] is not None:
            lines.append(f"-N {chain}")
        lines += [f"-A PREROUTING -j {chain}"] * s["jumps"]
        lines += s["chain"] or []
    return "\n".join(lines) + ("\n" if lines else "")


_IPT_LIST_LINE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+\S+\s+(\S+)\s+(\S+)\s+\S+\s+\S+\s*(.*)$")


def ipt_parse_counters(text):
    """``iptables -t T -L CHAIN -v -x -n --line-numbers`` -> [{num, packets, bytes, target, in, extra}]."""
    rows = []
    for line in text.splitlines():
        m = _IPT_LIST_LINE.match(line)
        if m:
            rows.append(
                {
                    "num": int(m.group(1)),
                    "packets": int(m.group(2)),
                    "bytes": int(m.group(3)),
                    "target": m.group(4),
                    "in": m.group(6),
                    "extra": m.group(8).strip(),
                }
            )
    return rows


# ---- backends ------------------------------------------------------------------------------------------------


def _check(run, argv, data=None):
    rc, out, err = run(argv, data=data) if data is not None else run(argv)
    if rc != 0:
        raise NetfilterError(f"{' '.join(argv)} failed (rc={rc}): {(err or out).strip()}")
    return out


class Nftables:
    name = "nftables"

    def __init__(self, run, binary):
        self.run, self.nft = run, binary

    def version(self):
        return _check(self.run, [self.nft, "--version"]).strip()

    def read(self, table):
        """Parsed table or None when it does not exist."""
        rc, out, err = self.run([self.nft, "-j", "list", "table", NFT_FAMILY, table])
        if rc != 0:
            if "No such file or directory" in err or "does not exist" in err:
                return None
            raise NetfilterError(f"nft -j list table {NFT_FAMILY} {table} failed (rc={rc}): {err.strip()}")
        return nft_parse(out)

    def text(self, table):
        """Stateless listing (no counter values), for diff mode; '' when absent."""
        rc, out, _err = self.run([self.nft, "-s", "list", "table", NFT_FAMILY, table])
        return out if rc == 0 else ""

    def matches(self, spec, parsed):
        return parsed is not None and nft_comparable(parsed) == nft_desired(spec)

    @staticmethod
    def exists(parsed):
        return parsed is not None

    @staticmethod
    def desired_text(spec):
        return nft_table_text(spec)

    def apply(self, spec):
        _check(self.run, [self.nft, "-f", "-"], data=nft_replace_script(spec))

    def remove(self, table):
        if self.read(table) is None:
            return False
        _check(self.run, [self.nft, "delete", "table", NFT_FAMILY, table])
        return True

    def describe(self, table):
        parsed = self.read(table)
        if parsed is None:
            return []
        return [
            {
                "table": f"{NFT_FAMILY} {table}",
                "chain": name,
                "hook": c.get("hook"),
                "priority": c.get("prio"),
                "handle": r["handle"],
                "packets": r["packets"],
                "bytes": r["bytes"],
            }
            for name, c in parsed["chains"].items()
            for r in c["rules"]
        ]

    def counters(self, table):
        """(packets, bytes, mode, interface) summed over our drop rules; raises when the table is missing."""
        parsed = self.read(table)
        if parsed is None:
            raise NetfilterError(
                f"table {NFT_FAMILY} {table} does not exist; put the drop in place with "
                f"xdplab.testbed.netfilter_drop (state: present, backend: nftables)"
            )
        rules = [r for c in parsed["chains"].values() for r in c["rules"] if r["drop"] and r["packets"] is not None]
        if not rules:
            raise NetfilterError(f"table {NFT_FAMILY} {table} has no drop rule with a counter")
        iif = next((r["iifname"] for r in rules if r["iifname"]), None)
        return sum(r["packets"] for r in rules), sum(r["bytes"] for r in rules), nft_mode_of(parsed), iif


class Iptables:
    name = "iptables"

    def __init__(self, run, binary):
        self.run, self.ipt = run, binary

    def version(self):
        return _check(self.run, [self.ipt, "--version"]).strip()

    def read(self, chain):
        out = {}
        for table in ("raw", "mangle"):
            out[table] = ipt_parse_save(_check(self.run, [self.ipt, "-w", "-t", table, "-S"]), chain)
        return out

    def text(self, chain):
        return ipt_state_text(self.read(chain), chain)

    @staticmethod
    def exists(state):
        return any(s["chain"] is not None or s["jumps"] for s in state.values())

    @staticmethod
    def desired_text(spec):
        return ipt_state_text(ipt_desired(spec), spec.table)

    def matches(self, spec, state):
        return state == ipt_desired(spec)

    def _remove_from(self, table, chain, state):
        for _jump in range(state["jumps"]):
            _check(self.run, [self.ipt, "-w", "-t", table, "-D", "PREROUTING", "-j", chain])
        if state["chain"] is not None:
            _check(self.run, [self.ipt, "-w", "-t", table, "-F", chain])
            _check(self.run, [self.ipt, "-w", "-t", table, "-X", chain])

    def apply(self, spec):
        state = self.read(spec.table)
        target = IPT_TABLES[spec.mode]
        for table, s in state.items():
            if table != target:
                self._remove_from(table, spec.table, s)
        s = state[target]
        base = [self.ipt, "-w", "-t", target]
        if s["chain"] is None:
            _check(self.run, [*base, "-N", spec.table])
        else:
            _check(self.run, [*base, "-F", spec.table])
        _check(self.run, [*base, "-A", spec.table, *ipt_rule_args(spec)])
        for _jump in range(s["jumps"]):
            _check(self.run, [*base, "-D", "PREROUTING", "-j", spec.table])
        _check(self.run, [*base, "-I", "PREROUTING", "1", "-j", spec.table])

    def remove(self, chain):
        state = self.read(chain)
        changed = False
        for table, s in state.items():
            if s["chain"] is not None or s["jumps"]:
                self._remove_from(table, chain, s)
                changed = True
        return changed

    def _list(self, table, chain):
        return ipt_parse_counters(
            _check(self.run, [self.ipt, "-w", "-t", table, "-L", chain, "-v", "-x", "-n", "--line-numbers"])
        )

    def describe(self, chain):
        state = self.read(chain)
        out = []
        for table, s in state.items():
            if s["chain"] is None:
                continue
            for row, line in zip(self._list(table, chain), s["chain"]):
                out.append(
                    {
                        "table": table,
                        "chain": chain,
                        "hook": "prerouting",
                        "handle": row["num"],
                        "packets": row["packets"],
                        "bytes": row["bytes"],
                        "rule": line,
                    }
                )
        return out

    def counters(self, chain):
        state = self.read(chain)
        tables = [t for t, s in state.items() if s["chain"] is not None]
        if not tables:
            raise NetfilterError(
                f"chain {chain} exists in neither the raw nor the mangle table ({self.ipt}); put the "
                f"drop in place with xdplab.testbed.netfilter_drop (state: present, backend: iptables)"
            )
        rows = [r for t in tables for r in self._list(t, chain) if r["target"] == "DROP"]
        if not rows:
            raise NetfilterError(f"chain {chain} has no DROP rule")
        mode = next(m for m, t in IPT_TABLES.items() if t == tables[0])
        iif = next((r["in"] for r in rows if r["in"] != "*"), None)
        return sum(r["packets"] for r in rows), sum(r["bytes"] for r in rows), mode, iif


def backend_for(module, backend, iptables_binary="iptables"):
    """The Backend object for ``backend``; fails the module naming the Debian package when the binary is missing."""
    binary_name = "nft" if backend == "nftables" else iptables_binary
    path = module.get_bin_path(binary_name)
    if not path:
        package = PACKAGES.get(binary_name.rsplit("/", 1)[-1], "iptables" if "iptables" in binary_name else "nftables")
        module.fail_json(
            msg=f"{binary_name} not found on the target: install the Debian package {package} (apt-get install {package})"
        )
    cls = Nftables if backend == "nftables" else Iptables
    return cls(module.run_command, path)


# ---- /proc/net/softnet_stat ----------------------------------------------------------------------------------


def parse_softnet_stat(text):
    """/proc/net/softnet_stat -> {cpu: {"processed", "dropped", "time_squeeze"}}.

    One line per online CPU, hex columns; since Linux 5.10 column 13 is the CPU number (before that: line index).
    """
    out = {}
    for i, line in enumerate(text.splitlines()):
        cols = line.split()
        if len(cols) < 3:
            continue
        cpu = int(cols[12], 16) if len(cols) >= 13 else i
        out[cpu] = {"processed": int(cols[0], 16), "dropped": int(cols[1], 16), "time_squeeze": int(cols[2], 16)}
    return out


def softnet_delta(before, after):
    """Per-CPU differences (the kernel's counters are 32 bit and wrap)."""
    out = {}
    for cpu, now in after.items():
        if cpu in before:
            out[cpu] = {k: (now[k] - before[cpu][k]) % (1 << 32) for k in now}
    return out


# ---- a user's nftables ruleset (a custom system of kind linux, issue 26) -------------------------------------
#
# The ruleset is the user's file, loaded into the DUT's namespace as it is (nft -f) with every table it declares
# replaced in the same transaction; it is counted by its drop rules that have a counter before the drop, and removed
# by deleting exactly the tables it declares (the module checks that loading it created no other).

RULESET_MODE = "ruleset"
NFT_ALL_FAMILIES = ("ip", "ip6", "inet", "arp", "bridge", "netdev")
# a table declaration at the start of a statement: `table [family] name`, `add table ...`, `create table ...`
_NFT_TABLE_DECL = re.compile(
    r"(?:^|;)[ \t]*(?:(?:add|create)[ \t]+)?table[ \t]+(?:(ip6|ip|inet|arp|bridge|netdev)[ \t]+)?"
    r"([A-Za-z_][A-Za-z0-9_.-]*)",
    re.M,
)
# statements a ruleset loaded for a trial may not have: they change or read what is not its own
_NFT_REFUSED = (
    (re.compile(r"(?:^|;)[ \t]*flush[ \t]+ruleset\b", re.M), "flush ruleset (it would remove every table of the DUT)"),
    (re.compile(r"(?:^|;)[ \t]*include[ \t]", re.M), "include (only the file's own text is copied to the DUT)"),
    (re.compile(r"(?:^|;)[ \t]*(?:delete|destroy)[ \t]+table\b", re.M), "delete table (tables it does not declare stay)"),
)
RULESET_MAX_BYTES = 1 << 20


def nft_strip_comments(text):
    """The ruleset without its comments (``#`` to the end of the line, outside double quotes)."""
    out = []
    for line in text.splitlines():
        quoted = False
        for i, ch in enumerate(line):
            if ch == '"':
                quoted = not quoted
            elif ch == "#" and not quoted:
                line = line[:i]
                break
        out.append(line)
    return "\n".join(out)


def nft_ruleset_tables(text):
    """The tables a ruleset declares, as ``family name`` (nft's default family: ip), each once, in order."""
    tables = []
    for family, name in _NFT_TABLE_DECL.findall(nft_strip_comments(text)):
        table = f"{family or 'ip'} {name}"
        if table not in tables:
            tables.append(table)
    return tables


def nft_ruleset_problems(text):
    """What makes a text no plausible ruleset for a trial (no host needed; nft itself checks the syntax on load)."""
    if not isinstance(text, str) or not text.strip():
        return ["is empty"]
    if len(text.encode("utf-8")) > RULESET_MAX_BYTES:
        return [f"is larger than {RULESET_MAX_BYTES} bytes"]
    code = nft_strip_comments(text)
    problems = []
    if not nft_ruleset_tables(text):
        problems.append("declares no table (write `table inet NAME { chain ... }`)")
    for pattern, what in _NFT_REFUSED:
        if pattern.search(code):
            problems.append(f"has {what}; remove it")
    if code.count("{") != code.count("}"):
        problems.append(f"has unbalanced braces ({code.count('{')} '{{', {code.count('}')} '}}')")
    return problems


def nft_table_key(table):
    """'inet foo' -> ('inet', 'foo'); raises on anything else."""
    parts = str(table).split()
    if len(parts) != 2 or parts[0] not in NFT_ALL_FAMILIES or not re.match(r"^[A-Za-z_][A-Za-z0-9_.-]*$", parts[1]):
        raise NetfilterError(f"table {table!r} is not 'FAMILY NAME' (families: {', '.join(NFT_ALL_FAMILIES)})")
    return parts[0], parts[1]


def nft_tables_of(doc):
    """``nft -j list tables`` (or list ruleset) -> the set of 'family name'."""
    if isinstance(doc, str):
        doc = json.loads(doc) if doc.strip() else {}
    return {f"{i['table']['family']} {i['table']['name']}" for i in doc.get("nftables", []) if "table" in i}


def nft_counted_drops(doc, tables):
    """The rules of ``tables`` (from ``nft -j list ruleset``) that count and then drop: a counter statement with
    its values (an anonymous counter) before the drop verdict. [{table, chain, handle, packets, bytes, iifname}]."""
    if isinstance(doc, str):
        doc = json.loads(doc) if doc.strip() else {}
    wanted = set(tables)
    rows = []
    for item in doc.get("nftables", []):
        rule = item.get("rule")
        if not rule or f"{rule.get('family')} {rule.get('table')}" not in wanted:
            continue
        expr = rule.get("expr") or []
        drop = next((i for i, e in enumerate(expr) if isinstance(e, dict) and "drop" in e), None)
        counter = next((i for i, e in enumerate(expr) if isinstance(e, dict) and isinstance(e.get("counter"), dict)), None)
        if drop is None or counter is None or counter > drop:
            continue
        iif = next(
            (
                e["match"]["right"]
                for e in expr
                if isinstance(e, dict)
                and "match" in e
                and e["match"].get("left") == {"meta": {"key": "iifname"}}
                and isinstance(e["match"].get("right"), str)
            ),
            None,
        )
        rows.append(
            {
                "table": f"{rule['family']} {rule['table']}",
                "chain": rule.get("chain"),
                "handle": rule.get("handle"),
                "packets": expr[counter]["counter"].get("packets", 0),
                "bytes": expr[counter]["counter"].get("bytes", 0),
                "iifname": iif,
            }
        )
    return rows


def nft_ruleset_load_script(text, tables):
    """One transaction: declare each table (so delete cannot fail), delete it, then the user's ruleset."""
    return "".join(f"table {t}\ndelete table {t}\n" for t in tables) + text.rstrip("\n") + "\n"


class NftRuleset:
    """A user's ruleset in the namespace (nftables only): load it, read its counted drops, remove its tables."""

    name = "nftables"

    def __init__(self, run, binary):
        self.run, self.nft = run, binary

    def version(self):
        return _check(self.run, [self.nft, "--version"]).strip()

    def tables(self):
        return nft_tables_of(_check(self.run, [self.nft, "-j", "list", "tables"]))

    def text(self, tables):
        """Stateless listing of those of ``tables`` that exist ('' when none)."""
        present = self.tables()
        out = []
        for t in tables:
            if t in present:
                out.append(_check(self.run, [self.nft, "-s", "list", "table", *nft_table_key(t)]))
        return "".join(out)

    def check(self, text, tables):
        _check(self.run, [self.nft, "-c", "-f", "-"], data=nft_ruleset_load_script(text, tables))

    def load(self, text, tables):
        _check(self.run, [self.nft, "-f", "-"], data=nft_ruleset_load_script(text, tables))

    def remove(self, tables):
        """Delete those of ``tables`` that exist, in one transaction; returns the ones deleted."""
        gone = [t for t in tables if t in self.tables()]
        if gone:
            _check(self.run, [self.nft, "-f", "-"], data="".join(f"delete table {t}\n" for t in gone))
        return gone

    def drops(self, tables):
        return nft_counted_drops(_check(self.run, [self.nft, "-j", "list", "ruleset"]), tables)

    def counters(self, tables):
        """(packets, bytes, mode, interface) summed over the counted drop rules of ``tables``."""
        rows = self.drops(tables)
        if not rows:
            missing = sorted(set(tables) - self.tables())
            if missing:
                raise NetfilterError(
                    f"table(s) {', '.join(missing)} do not exist; load the ruleset with "
                    f"xdplab.testbed.netfilter_drop (mode: ruleset)"
                )
            raise NetfilterError(f"the ruleset's tables ({', '.join(tables)}) have no drop rule with a counter before the drop")
        iif = next((r["iifname"] for r in rows if r["iifname"]), None)
        return sum(r["packets"] for r in rows), sum(r["bytes"] for r in rows), RULESET_MODE, iif
