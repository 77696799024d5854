# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that arrange the trials of several DUTs: who measures when, and which generator port is whose.

The schedule is static and computed once, on every DUT, from every DUT's pending trials: rounds. A round
holds at most one trial of each lane; a lane is the DUTs that must not measure at the same time (those
sharing a generator host, or all of them with mode serial). The experiment role includes one round after
the other for every DUT at once, so the trials of one round run side by side and two rounds never
overlap (roles/experiment/tasks/trials.yml, docs/ARCHITECTURE.md "Several DUTs").
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

MODES = ("generator", "serial")


def _lanes(duts, mode):
    lanes = {}
    for dut in sorted(duts):
        spec = duts[dut]
        if not isinstance(spec, dict) or "pending" not in spec:
            raise AnsibleFilterError("experiment_schedule: %s: needs {generator, pending}, got %r" % (dut, spec))
        key = "all DUTs" if mode == "serial" else str(spec.get("generator") or dut)
        lanes.setdefault(key, []).append(dut)
    return lanes


def experiment_schedule(duts, mode="generator"):
    """Rounds of trials: in each, at most one trial per lane; DUTs of a lane take turns trial by trial.

    duts: {dut: {generator: host, pending: [trial, ...]}}. Returns {rounds, lanes: {lane: [dut]},
    duts: {dut: {"<round>": trial}}} (round numbers as strings: keys of a mapping that survives
    Ansible's templating).
    """
    if mode not in MODES:
        raise AnsibleFilterError("experiment_schedule: mode must be one of %s, got %r" % (", ".join(MODES), mode))
    if not isinstance(duts, dict):
        raise AnsibleFilterError("experiment_schedule: expects a mapping {dut: {generator, pending}}, got %r" % (duts,))
    lanes = _lanes(duts, mode)
    out = {dut: {} for dut in duts}
    rounds = 0
    for members in lanes.values():
        queues = [list(duts[dut]["pending"] or []) for dut in members]
        slot = 0
        # round-robin over the lane's DUTs: dut1 trial 1, dut2 trial 1, dut1 trial 2, ...
        while any(queues):
            for dut, queue in zip(members, queues):
                if queue:
                    out[dut][str(slot)] = queue.pop(0)
                    slot += 1
        rounds = max(rounds, slot)
    return {"rounds": rounds, "lanes": lanes, "duts": out}


def _port_of(gen):
    """The generator ports one DUT claims: [(port id, how the inventory named it)]."""
    options = gen.get("options") or {}
    interface = gen.get("interface")
    if gen.get("backend") == "trex":
        ports = [str(p) for p in options.get("ports") or []]
        if options.get("port") is not None:
            tx = int(options["port"])
        elif str(interface) in ports:
            tx = ports.index(str(interface))
        elif str(interface).isdigit():
            tx = int(interface)
        else:
            tx = str(interface)
        claims = [(tx, "%s (sends)" % (interface if options.get("port") is None else "port %s" % tx))]
        claims += [(int(p), "port %s (receives)" % p) for p in options.get("rx_ports") or []]
        return claims
    return [(str(interface), str(interface))]


def generator_port_conflicts(duts):
    """Messages for every generator port that two DUTs claim: [] when every DUT has its own.

    duts: {dut: {host, backend, interface, options}} (each DUT's generator as the experiment role sees it:
    the generator host's xdplab_generator_* with the DUT's xdplab_dut_generator over them).
    """
    if not isinstance(duts, dict):
        raise AnsibleFilterError("generator_port_conflicts: expects a mapping {dut: generator}, got %r" % (duts,))
    owners = {}
    for dut in sorted(duts):
        gen = duts[dut] or {}
        for port, named in _port_of(gen):
            owners.setdefault((str(gen.get("host")), port), []).append((dut, named))
    errors = []
    for (host, port), claims in sorted(owners.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        if len(claims) < 2:
            continue
        who = " and ".join("%s (%s)" % (dut, named) for dut, named in claims)
        errors.append(
            "%s claim the same port %s of generator %s: give each DUT its own port "
            "(xdplab_dut_generator.interface, or with T-Rex options.port / options.rx_ports)" % (who, port, host)
        )
    return errors


class FilterModule:
    def filters(self):
        return {"experiment_schedule": experiment_schedule, "generator_port_conflicts": generator_port_conflicts}
