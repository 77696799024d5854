# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a virtual lab splits its host's CPUs between the lab's roles (issue 28).

On the virtual lab every party of the testbed runs on one machine, so the CPUs are the testbed: the DUT's receive
CPUs (one RX queue and one NAPI thread each, the experiments' "cores"), the generator's sender threads, the NAPI
threads that receive what the DUT sends back to the generator, the NAPI threads that only feed DPDK's or AF_XDP's
sockets (what a NIC's DMA does on hardware: the "NIC CPUs"), and the housekeeping CPUs where Ansible, the samplers
and the report run. ``plan(online, request)`` decides it once, from the online CPUs and what the inventory asked:

- ``"auto"``: sized to the host. Housekeeping gets the first CPU; the DUT up to the paper's 6 CPUs, as many as leave
  one generator sender CPU per DUT queue; the senders are consecutive CPUs, so they hold every residue of
  ``cpu % queues`` (veth delivers a frame to the RX queue ``sending CPU % queue count``, the rule xdp_live states);
  what is left goes first to the generator's receive CPUs, then to NIC CPUs (at most one per DUT queue each), and
  the rest back to housekeeping. On 2 CPUs it is the lab's historical layout: CPU 1 for the DUT, CPU 0 for
  everything else.
- a mapping with any of ``dut``, ``generator``, ``generator_rx``, ``nic``, ``housekeeping`` (CPU lists, or the
  kernel's list text ``"1-4"``) and ``max_dut_cpus``: the given roles as given, the others planned from the CPUs
  that are left, as ``auto`` would.

Where a role has no CPU of its own it shares one, and ``shared`` says which roles share which CPUs, in words the
report prints. Errors (``LayoutError``) name the field and the value and say what to do; nothing here changes the
machine.
"""

from __future__ import annotations

from ansible_collections.xdplab.testbed.plugins.module_utils._cpus import CpuListError, format_cpu_list, parse_cpu_list

#: the paper's largest DUT (Figure 3: 1-6 cores)
PAPER_MAX_DUT_CPUS = 6
ROLES = ("housekeeping", "dut", "generator", "generator_rx", "nic")
ROLE_WORDS = {
    "housekeeping": "housekeeping (Ansible, samplers, report)",
    "dut": "the DUT's receive CPUs",
    "generator": "the generator's senders",
    "generator_rx": "the generator's receive NAPI (returning traffic)",
    "nic": "the NIC's work for DPDK and AF_XDP (their NAPI threads)",
}
REQUEST_KEYS = frozenset(ROLES) | {"max_dut_cpus"}


class LayoutError(ValueError):
    """A CPU layout that cannot be planned or is wrong; the message names the field and says what to do."""


def _cpus(field, value):
    if isinstance(value, (list, tuple)):
        out = []
        for i, c in enumerate(value):
            if isinstance(c, bool) or (not isinstance(c, int) and not str(c).strip().isdigit()):
                raise LayoutError(f"xdplab_cpu_layout.{field}[{i}]: {c!r} is not a CPU number")
            out.append(int(c))
        if len(set(out)) != len(out):
            raise LayoutError(f"xdplab_cpu_layout.{field}: {list(value)} names a CPU twice")
        return out
    try:
        return parse_cpu_list(value)
    except CpuListError as exc:
        raise LayoutError(f"xdplab_cpu_layout.{field}: {exc}") from None


def _request(request):
    if request is None or request == "auto":
        return {}
    if not isinstance(request, dict):
        raise LayoutError(
            f"xdplab_cpu_layout must be 'auto' or a mapping of {', '.join(ROLES)} to CPU lists, got {request!r}"
        )
    unknown = sorted(set(request) - REQUEST_KEYS)
    if unknown:
        raise LayoutError(
            f"xdplab_cpu_layout: unknown key(s) {', '.join(unknown)}; it takes {', '.join(sorted(REQUEST_KEYS))}"
        )
    out = {k: _cpus(k, v) for k, v in request.items() if k in ROLES and v is not None}
    if "max_dut_cpus" in request:
        m = request["max_dut_cpus"]
        if isinstance(m, bool) or not str(m).isdigit() or int(m) < 1:
            raise LayoutError(f"xdplab_cpu_layout.max_dut_cpus: {m!r} must be a whole number >= 1")
        out["max_dut_cpus"] = int(m)
    return out


#: why the DUT, the generator's senders and housekeeping may not share a CPU (the words of every overlap error)
OVERLAP_WHY = "the DUT, the generator's senders and housekeeping need CPUs of their own (they may share only on a 2-CPU host)"


def sharing_forbidden(online_count):
    """The pairs of roles that must not share a CPU on one machine of ``online_count`` CPUs (None: not known).

    The DUT never shares; the generator and housekeeping share only where the host has no third CPU (2 CPUs)."""
    pairs = [("dut", "generator"), ("dut", "housekeeping")]
    if online_count is None or online_count > 2:
        pairs.append(("generator", "housekeeping"))
    return pairs


def overlaps(cpus_by_role, online_count):
    """[(role, role, [CPUs both have])] for the pairs of ``sharing_forbidden`` that overlap in ``cpus_by_role``."""
    out = []
    for a, b in sharing_forbidden(online_count):
        both = sorted(set(cpus_by_role.get(a) or ()) & set(cpus_by_role.get(b) or ()))
        if both:
            out.append((a, b, both))
    return out


def _check_given(given, online):
    for role, cpus in given.items():
        if role == "max_dut_cpus":
            continue
        offline = [c for c in cpus if c not in online]
        if offline:
            raise LayoutError(
                f"xdplab_cpu_layout.{role}: CPU {format_cpu_list(offline)} is not online on this host "
                f"(online: {format_cpu_list(online)}); pick online CPUs or bring them online"
            )
    for a, b, both in overlaps(given, len(online)):
        raise LayoutError(f"xdplab_cpu_layout: {a} and {b} overlap on CPU {format_cpu_list(both)}; {OVERLAP_WHY}")
    never_on_dut = {
        "generator_rx": "the generator's receive work must not run on the DUT's CPUs",
        "nic": "leave nic out to keep the NIC's work on the DUT's CPUs, or give it CPUs the DUT does not count",
    }
    for role, what_to_do in never_on_dut.items():
        both = sorted(set(given.get(role, ())) & set(given.get("dut", ())))
        if both:
            raise LayoutError(f"xdplab_cpu_layout: {role} and dut overlap on CPU {format_cpu_list(both)}; {what_to_do}")


def plan(online, request="auto"):
    """The layout: {role: [CPUs]} for every role in ROLES, plus ``shared`` (sentences), ``online`` and ``request``.

    ``online``: the host's online CPUs (a list, or the kernel's text "0-15"). ``generator_rx`` or ``nic`` may be
    empty: the generator's receive NAPI then runs on its sender CPUs, the NIC's work on the DUT's CPUs.
    """
    online = sorted(_cpus("online", online))
    given = _request(request)
    if not given and len(online) < 2:
        raise LayoutError(
            f"xdplab_cpu_layout: auto needs at least 2 online CPUs (one for the DUT, one for everything else); "
            f"this host has {len(online)} ({format_cpu_list(online) or 'none'}). Give the host more CPUs"
        )
    _check_given(given, online)
    max_dut = min(given.get("max_dut_cpus", PAPER_MAX_DUT_CPUS), PAPER_MAX_DUT_CPUS)
    taken = set()
    for role in ROLES:
        taken.update(given.get(role, ()))
    free = [c for c in online if c not in taken]
    layout = {role: list(given[role]) for role in ROLES if role in given}

    if "housekeeping" not in layout:
        layout["housekeeping"] = free[:1]
        free = free[1:]
    if "dut" not in layout:
        # each DUT queue needs a sender CPU of its own, unless the generator was given
        per_dut = 1 if "generator" in layout else 2
        n = min(max_dut, len(free) // per_dut) or min(1, len(free))
        if n == 0:
            raise LayoutError(
                f"xdplab_cpu_layout: no CPU is left for the DUT (online {format_cpu_list(online)}, taken "
                f"{format_cpu_list(sorted(taken | set(layout['housekeeping'])))}); free a CPU or name dut"
            )
        layout["dut"], free = free[:n], free[n:]
    queues = len(layout["dut"])
    if "generator" not in layout:
        layout["generator"], free = free[:queues], free[queues:]
        if not layout["generator"]:
            # 2 CPUs: the generator shares the housekeeping CPU
            layout["generator"] = list(layout["housekeeping"])
    if "generator_rx" not in layout:
        n = min(queues, len(free) - len(free) // 2)
        layout["generator_rx"], free = free[:n], free[n:]
    if "nic" not in layout:
        n = min(queues, len(free))
        layout["nic"], free = free[:n], free[n:]
    if "housekeeping" not in given:
        layout["housekeeping"] = sorted(layout["housekeeping"] + free)
    if not layout["housekeeping"]:
        raise LayoutError("xdplab_cpu_layout.housekeeping: empty; Ansible and the samplers need a CPU")
    missing = [q for q in range(queues) if not any(c % queues == q for c in layout["generator"])]
    if missing:
        raise LayoutError(
            f"xdplab_cpu_layout.generator: CPUs {format_cpu_list(layout['generator'])} reach no DUT queue "
            f"{', '.join(map(str, missing))}: veth delivers a frame to RX queue (sending CPU % {queues}); give the "
            f"generator CPUs that cover every residue modulo {queues}, e.g. {queues} consecutive CPUs"
        )
    layout["shared"] = shared_words(layout)
    layout["online"] = format_cpu_list(online)
    layout["request"] = "auto" if not given else "given: " + ", ".join(sorted(k for k in given if k in ROLES))
    return layout


def shared_words(layout):
    """Sentences naming the roles that share a CPU (empty: every role has CPUs of its own)."""
    out = []
    by_cpu = {}
    for role in ROLES:
        for c in layout.get(role) or ():
            by_cpu.setdefault(c, []).append(role)
    groups = {}
    for c, roles in sorted(by_cpu.items()):
        if len(roles) > 1:
            groups.setdefault(tuple(roles), []).append(c)
    for roles, cpus in groups.items():
        out.append(f"CPU {format_cpu_list(cpus)} is shared by " + " and ".join(ROLE_WORDS[r] for r in roles))
    if not layout.get("generator_rx"):
        out.append("the generator receives returning traffic on its sender CPUs (no CPU left for its receive NAPI)")
    if not layout.get("nic"):
        out.append(
            "DPDK and AF_XDP pay for the NIC here: the NAPI threads that feed their sockets run on the DUT's CPUs "
            "(no CPU left for the NIC's work)"
        )
    return out


def napi_cpus(layout, role, fallback):
    """CPUs for a role's NAPI threads: the role's own, else ``fallback``'s (round-robin over queues)."""
    return list(layout.get(role) or layout.get(fallback) or [])


def summary(layout):
    """One line for a report's testbed line and a record's provenance: 'dut 1-6, generator 7-12, ...'."""
    parts = []
    for role in ROLES:
        cpus = layout.get(role) or []
        parts.append(f"{role} {format_cpu_list(cpus) if cpus else '-'}")
    return "; ".join(parts)
