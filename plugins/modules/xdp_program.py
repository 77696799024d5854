#!/usr/bin/python
# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: xdp_program
short_description: Attach or detach an XDP program on a network interface
version_added: 0.1.0
author:
  - xdplab.testbed developers (!UNKNOWN)
description:
  - Loads one program of a BPF object file with libbpf (through ctypes, no bpftool or pins needed), sets its
    C(.rodata) configuration variables by name, and attaches it to an interface given by B(name).
  - If another program is attached in the same mode it is replaced atomically (C(XDP_FLAGS_REPLACE)); if it is
    attached in another mode it is detached first, because the kernel does not allow native and generic XDP at
    the same time on one device.
  - Idempotent. Nothing is done when the attached program has the same name, mode, C(.rodata) values (read back
    from the attached program's C(.rodata) map) and was loaded from an object with the same SHA-256. The checksum
    is recorded at attach time in O(state_dir)/prog-ID.json, keyed by the kernel's program id, which is unique
    across network namespaces; the record also holds the program tag and load time and is ignored when they do
    not match. A program attached by something else (no record) is therefore always replaced.
  - On a kernel without BTF (no C(/sys/kernel/btf/vmlinux)) or without global data (before 5.2; probed by
    loading a 4-instruction program that stores into an array map's value), the C(.rodata) variables cannot be
    set at load time. With O(variant=auto) the module then loads the non-CO-RE variant instead, the object
    C(DIR/nocore/PROGRAM-VAR1VALUE1-VAR2VALUE2.bpf.o) next to O(object) (variables in name order, for example
    C(nocore/xdp_bench_drop-count_mode0-touch_mode1.bpf.o)), built with the settings as compile-time
    constants by C(make -C bpf nocore install-nocore) or role M(xdplab.testbed.bpf_programs) (its
    C(bpf_programs_nocore)). The return value RV(variant) and the attach record say which ran.
  - A program that is not an XDP program (for example a C(SEC("tc")) one) is refused before anything changes.
  - Works inside a network namespace (for example under C(ip netns exec) or the C(xdplab.testbed.netns)
    connection); the interface name is resolved in the namespace the module runs in.
extends_documentation_fragment: []
attributes:
  check_mode:
    support: full
    description: Opens and validates the object, reports what would change, loads nothing into the kernel.
  diff_mode:
    support: full
    description: Before and after show the program name, mode and C(.rodata) variables.
options:
  interface:
    description:
      - Name of the network interface, in the network namespace the module runs in. Never an ifindex.
    type: str
    required: true
  state:
    description:
      - V(present) attaches O(program), V(absent) detaches whatever XDP program is attached.
      - An interface that does not exist has nothing attached, so V(absent) succeeds there, with a warning.
    type: str
    choices: [present, absent]
    default: present
  object:
    description:
      - Path of the BPF object file on the target (for example C(bpf/build/xdp_bench.bpf.o)).
      - Required when O(state=present).
    type: path
  program:
    description:
      - Name of the program (the C function name) in O(object), for example V(xdp_bench_drop).
      - Required when O(state=present).
    type: str
  mode:
    description:
      - V(native) is driver mode (C(XDP_FLAGS_DRV_MODE)), V(skb) generic mode, V(hw) offload.
    type: str
    choices: [native, skb, hw]
    default: native
  variables:
    description:
      - C(.rodata) variables to set before load, by name, for example C(touch_mode) and C(redirect_ifindex).
      - Values are integers. A variable whose name ends in C(_ifindex) may also be given an interface name,
        which is resolved to its ifindex in the module's network namespace.
      - Variables not given keep the value compiled into the object.
    type: dict
    default: {}
  map_entries:
    description:
      - "Entries to put in the program's maps after load and before attach, C({map name: {key: value}}), integer
        keys and values (4 bytes each), for example the egress port of a devmap
        (C({tx_ports: {0: veth-dut1}}), bpf/xdp_forward.bpf.c). A value may be an interface name, resolved to its
        ifindex in the module's network namespace; the kernel resolves a devmap's ifindex in the namespace of the
        process that updates it, so the egress port must be on this host (another host's port is refused here)."
      - "A cpumap entry (C(BPF_MAP_TYPE_CPUMAP), key = the CPU) takes a mapping C({qsize: N, program: NAME}) instead:
        the queue size to that CPU and, optionally, the program of the same O(object) that the CPU runs on each
        frame (its ELF section must be C(xdp/cpumap)); it is loaded with O(program) and its file descriptor
        is written in the entry's C(struct bpf_cpumap_val). For example C({cpu_map: {0: {qsize: 2048, program:
        xdp_cpumap_fwd}}, tx_ports: {0: veth-dut1}}) for bpf/xdp_redirect_cpu.bpf.c."
      - "A key may be an interface name too, resolved to its ifindex the same way: a devmap keyed by the egress
        ifindex (C({tx_ports: {veth-dut1: veth-dut1}}), bpf/xdp_router.bpf.c)."
      - The maps are those of O(program) and of the programs its cpumap entries run (a devmap that only the
        cpumap program uses is found there).
      - Part of the idempotency test, the attached program's entries are read back and compared (a cpumap entry
        reads back its queue size and its program's name).
    type: dict
    default: {}
  variant:
    description:
      - Which build of the program to load. V(core) is O(object) with its C(.rodata) variables set at load time;
        V(nocore) is its non-CO-RE variant (see the description) with the variables compiled in; V(auto) picks
        V(nocore) when the kernel lacks BTF or global data, else V(core).
      - With V(nocore), every variable the variant does not compile in must keep the value O(object) has.
    type: str
    choices: [auto, core, nocore]
    default: auto
  state_dir:
    description:
      - Directory for the attach records (object checksum per program id). C(/run) is a tmpfs, so records
        disappear with the programs at reboot.
    type: path
    default: /run/xdplab/xdp
requirements:
  - libbpf.so.1 (Debian package libbpf1) on the target
  - root (CAP_BPF and CAP_NET_ADMIN)
notes:
  - C(/sys/fs/bpf) is not used; programs and maps are found through the interface and kernel object ids.
seealso:
  - module: xdplab.testbed.xdp_stats
"""

EXAMPLES = r"""
- name: Drop everything arriving on the DUT interface, reading the payload
  xdplab.testbed.xdp_program:
    interface: dut0
    object: /usr/local/lib/xdplab/lib/bpf/xdp_bench.bpf.o
    program: xdp_bench_drop
    mode: native
    variables:
      touch_mode: 1

- name: Redirect to another interface, given by name
  xdplab.testbed.xdp_program:
    interface: dut0
    object: /usr/local/lib/xdplab/lib/bpf/xdp_bench.bpf.o
    program: xdp_bench_redirect
    variables:
      redirect_ifindex: dut1

- name: Receive on this CPU, forward from CPU 0 (a cpumap entry with its program, then a devmap)
  xdplab.testbed.xdp_program:
    interface: veth-dut0
    object: /usr/local/lib/xdplab/lib/bpf/xdp_redirect_cpu.bpf.o
    program: xdp_redirect_cpu
    variables:
      remote_cpu: 0
    map_entries:
      cpu_map: {0: {qsize: 2048, program: xdp_cpumap_fwd}}
      tx_ports: {0: veth-dut1}

- name: Detach
  xdplab.testbed.xdp_program:
    interface: dut0
    state: absent
"""

RETURN = r"""
id:
  description: Kernel id of the attached program (null after O(state=absent)).
  returned: always
  type: int
  sample: 139
tag:
  description: Program tag (hex), as shown by C(ip -d link) and C(bpftool prog).
  returned: always
  type: str
  sample: 78fa086e301da3eb
name:
  description: Program name (full function name; the kernel itself keeps only 15 characters).
  returned: always
  type: str
  sample: xdp_bench_drop
mode:
  description: Attach mode.
  returned: always
  type: str
  sample: native
interface:
  description: Interface name.
  returned: always
  type: str
  sample: dut0
ifindex:
  description: Interface index in the module's network namespace.
  returned: always
  type: int
  sample: 3
object_sha256:
  description: SHA-256 of the object file the attached program was loaded from (null if unknown).
  returned: always
  type: str
  sample: 0c5d6f3e...
variables:
  description: C(.rodata) variables of the attached program, read back from the kernel.
  returned: always
  type: dict
  sample: {touch_mode: 1, redirect_ifindex: 0}
map_entries:
  description: "The entries of O(map_entries) read back from the attached program's maps (C({map: {key: value}}))."
  returned: always
  type: dict
  sample: {tx_ports: {"0": 3}, cpu_map: {"0": {qsize: 2048, program: xdp_cpumap_fwd}}}
variant:
  description: Which build was loaded, V(core) or V(nocore) (null after O(state=absent)).
  returned: always
  type: str
  sample: nocore
object:
  description: The object file the attached program was loaded from (the non-CO-RE variant's file for V(nocore)).
  returned: always
  type: str
  sample: /usr/local/lib/xdplab/lib/bpf/nocore/xdp_bench_drop-count_mode0-touch_mode1.bpf.o
kernel_features:
  description: What the kernel offers, as probed for O(variant=auto) (empty otherwise).
  returned: always
  type: dict
  sample: {release: 6.1.192-xdplab-nobtf, btf_vmlinux: false, global_data: true}
previous:
  description: The program that was attached before this run (null if none).
  returned: always
  type: dict
  sample: {id: 120, name: xdp_bench_pass, mode: native}
"""

import contextlib
import errno
import json
import os
import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _libbpf as libbpf

KERNEL_NAME_LEN = libbpf.BPF_OBJ_NAME_LEN - 1
# the section of a program that a cpumap entry runs (libbpf loads it with expected_attach_type BPF_XDP_CPUMAP)
CPUMAP_SECTION = "xdp/cpumap"


def interface_index(name):
    """ifindex of ``name`` in the current network namespace, or ValueError with the list of interfaces."""
    try:
        return socket.if_nametoindex(name)
    except OSError:
        names = ", ".join(n for _i, n in socket.if_nameindex())
        raise ValueError(
            f"interface {name} does not exist in this network namespace; "
            f"run the task in the namespace that holds it (connection xdplab.testbed.netns); "
            f"interfaces here: {names}"
        ) from None


def resolve_variables(variables):
    """Turn option values into ints; ``*_ifindex`` variables may be interface names."""
    out = {}
    for name, value in (variables or {}).items():
        if isinstance(value, bool):
            raise ValueError(f"variable {name}: expected an integer, got a boolean")
        if isinstance(value, int):
            out[name] = value
            continue
        text = str(value).strip()
        try:
            out[name] = int(text, 0)
        except ValueError:
            if name.endswith("_ifindex"):
                out[name] = interface_index(text)
            else:
                raise ValueError(
                    f"variable {name}: {value!r} is not an integer (only *_ifindex variables take interface names)"
                ) from None
    return out


def resolve_cpumap_value(where, value):
    """{qsize: int > 0, program: name or None} of a cpumap entry given as a mapping."""
    unknown = sorted(set(value) - {"qsize", "program"})
    if unknown or "qsize" not in value:
        raise ValueError(
            f"{where}: a cpumap entry is {{qsize: N, program: NAME}} (program optional), got {value!r}"
        )
    try:
        qsize = int(str(value["qsize"]).strip(), 0)
    except ValueError:
        qsize = 0
    if isinstance(value["qsize"], bool) or qsize <= 0:
        raise ValueError(f"{where}.qsize: the queue size to the CPU must be a positive integer, got {value['qsize']!r}")
    program = value.get("program")
    return {"qsize": qsize, "program": str(program) if program else None}


def resolve_map_entries(entries):
    """{map: {int key: int value}} from the option; a value that is not an integer is an interface name here,
    a mapping is a cpumap entry ({qsize, program})."""
    out = {}
    for name, table in (entries or {}).items():
        if not isinstance(table, dict):
            raise ValueError(f"map_entries.{name}: expected a mapping of key to value, got {table!r}")
        resolved = {}
        for key, value in table.items():
            try:
                k = int(str(key).strip(), 0)
            except ValueError:
                # a devmap keyed by ifindex (bpf/xdp_router's tx_ports): the key may be an interface name too
                try:
                    k = interface_index(str(key).strip())
                except ValueError as exc:
                    raise ValueError(
                        f"map_entries.{name}: key {key!r} is neither an integer nor an interface name here: {exc}"
                    ) from None
            if isinstance(value, dict):
                resolved[k] = resolve_cpumap_value(f"map_entries.{name}[{key}]", value)
                continue
            if isinstance(value, bool):
                raise ValueError(f"map_entries.{name}[{key}]: expected an integer or an interface name")
            try:
                v = int(str(value).strip(), 0)
            except ValueError:
                v = interface_index(str(value).strip())
            resolved[k] = v
        out[str(name)] = resolved
    return out


def cpumap_programs(entries):
    """Names of the programs that cpumap entries of ``entries`` (resolved) run."""
    return sorted({v["program"] for table in entries.values() for v in table.values() if isinstance(v, dict) and v["program"]})


def cpumap_value(raw, wanted):
    """{qsize, program} of a cpumap entry read back (struct bpf_cpumap_val: qsize, then the program's id)."""
    qsize = int.from_bytes(raw[:4], "little")
    prog_id = int.from_bytes(raw[4:8], "little") if len(raw) >= 8 else 0
    program = libbpf.prog_info(prog_id)["name"] if prog_id else None
    # the kernel keeps 15 characters of the name: the full one asked for when they agree
    asked = wanted.get("program") if isinstance(wanted, dict) else None
    if program and asked and kernel_name(asked) == program:
        program = asked
    return {"qsize": qsize, "program": program}


def program_maps(prog_id, wanted):
    """{map name: map info} of the attached program's maps and of the programs its cpumap entries in ``wanted`` run."""
    maps = {}
    for mid in libbpf.prog_info(prog_id)["map_ids"]:
        info = libbpf.map_info(mid)
        maps.setdefault(info["name"], info)
    for name, table in wanted.items():
        info = maps.get(libbpf_name(name))
        if not info or info["type"] != libbpf.BPF_MAP_TYPE_CPUMAP:
            continue
        for key in table:
            raw = libbpf.lookup_bytes(info["id"], key)
            entry_prog = int.from_bytes(raw[4:8], "little") if raw and len(raw) >= 8 else 0
            if entry_prog:
                for mid in libbpf.prog_info(entry_prog)["map_ids"]:
                    other = libbpf.map_info(mid)
                    maps.setdefault(other["name"], other)
    return maps


def read_map_entries(prog_id, wanted):
    """The attached program's entries for the maps and keys of ``wanted`` ({map: {key: value or None}})."""
    maps = program_maps(prog_id, wanted)
    out = {}
    for name, table in wanted.items():
        info = maps.get(libbpf_name(name))
        entries = {}
        for key, asked in table.items():
            if not info:
                entries[key] = None
            elif info["type"] == libbpf.BPF_MAP_TYPE_CPUMAP:
                raw = libbpf.lookup_bytes(info["id"], key)
                entries[key] = cpumap_value(raw, asked) if raw else None
            else:
                entries[key] = libbpf.lookup_int(info["id"], key)
        out[name] = entries
    return out


def libbpf_name(name):
    """The kernel keeps 15 characters of a map's name."""
    return name[: libbpf.BPF_OBJ_NAME_LEN - 1]


# the object's checksum, as module bpf_object_info reports it
file_sha256 = libbpf.file_sha256


NOCORE_DIR = "nocore"


def nocore_path(directory, program, compiled):
    """The non-CO-RE variant file of ``program`` with the compiled-in variables ``compiled`` (name -> int)."""
    suffix = "".join(f"-{name}{int(value)}" for name, value in sorted(compiled.items()))
    return os.path.join(directory, NOCORE_DIR, f"{program}{suffix}.bpf.o")


def nocore_variables(directory, program):
    """Names of the variables compiled into the non-CO-RE variants of ``program`` (from the file names), or None."""
    try:
        names = sorted(os.listdir(os.path.join(directory, NOCORE_DIR)))
    except OSError:
        return None
    prefix = program + "-"
    for fname in names:
        if fname.startswith(prefix) and fname.endswith(".bpf.o"):
            parts = fname[len(prefix) : -len(".bpf.o")].split("-")
            return sorted(part.rstrip("0123456789") for part in parts)
    return None


def kernel_name(name):
    return name[:KERNEL_NAME_LEN]


class AttachRecords:
    """Records of what was attached, one JSON file per kernel program id (ids are global, not per netns)."""

    def __init__(self, directory):
        self.directory = directory

    def path(self, prog_id):
        return os.path.join(self.directory, f"prog-{int(prog_id)}.json")

    def read(self, info):
        """The record for program ``info`` (from libbpf.prog_info) if it really describes that program."""
        try:
            with open(self.path(info["id"])) as fh:
                rec = json.load(fh)
        except (OSError, ValueError):
            return None
        if rec.get("tag") != info["tag"] or rec.get("load_time") != info["load_time"]:
            return None
        return rec

    def write(self, info, record):
        os.makedirs(self.directory, mode=0o755, exist_ok=True)
        record = dict(record, id=info["id"], tag=info["tag"], load_time=info["load_time"], written=time.time())
        tmp = self.path(info["id"]) + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(record, fh, sort_keys=True)
        os.replace(tmp, self.path(info["id"]))

    def remove(self, prog_id):
        with contextlib.suppress(OSError):
            os.unlink(self.path(prog_id))

    def prune(self):
        """Drop records of programs that no longer exist."""
        try:
            names = os.listdir(self.directory)
        except OSError:
            return
        for fname in names:
            if not (fname.startswith("prog-") and fname.endswith(".json")):
                continue
            try:
                prog_id = int(fname[5:-5])
                os.close(libbpf.prog_fd_by_id(prog_id))
            except ValueError:
                continue
            except libbpf.LibbpfError as exc:
                if exc.errno == errno.ENOENT:
                    self.remove(prog_id)


class XdpProgram:
    """Does the work of the module; main() only wires it to AnsibleModule."""

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.interface = self.params["interface"]
        self.records = AttachRecords(self.params["state_dir"])
        self.result = {"changed": False, "interface": self.interface, "kernel_features": {}, "map_entries": {}}
        try:
            self.ifindex = interface_index(self.interface)
        except ValueError as exc:
            if self.params["state"] != "absent":
                self.fail(str(exc))
            # nothing can be attached to an interface that is not there: absent already holds
            self.ifindex = None
            self.module.warn(f"{exc}; nothing to detach")
        self.result["ifindex"] = self.ifindex

    def fail(self, msg, **kwargs):
        self.module.fail_json(msg=msg, **dict(self.result, **kwargs))

    # --- what is attached now -------------------------------------------
    def current(self):
        """Description of the attached program, or None."""
        prog_id, mode = libbpf.attached_program(self.ifindex)
        if not prog_id:
            return None
        info = libbpf.prog_info(prog_id)
        rec = self.records.read(info) or {}
        variables = {}
        ro = libbpf.find_prog_map(prog_id, suffix=".rodata")
        raw = libbpf.read_array(ro["id"])[0] if ro else b""
        name = info["name"]
        if rec.get("program") and kernel_name(rec["program"]) == name:
            name = rec["program"]
        layout = rec.get("layout") or {}
        if raw and layout:
            variables = libbpf.decode_variables(raw, {k: tuple(v) for k, v in layout.items()})
        elif rec.get("variant") == "nocore":
            variables = dict(rec.get("variables") or {})
        return {
            "id": prog_id,
            "tag": info["tag"],
            "name": name,
            "mode": mode,
            "object_sha256": rec.get("object_sha256"),
            "object": rec.get("object"),
            "rodata": raw,
            "variables": variables,
            "variant": rec.get("variant", "core" if rec else None),
        }

    @staticmethod
    def diff_view(desc):
        if not desc:
            return {}
        return {"program": desc["name"], "mode": desc["mode"], "variables": desc["variables"]}

    def report(self, desc):
        keys = ("id", "tag", "name", "mode", "object_sha256", "variables", "variant", "object")
        for key in keys:
            self.result[key] = desc.get(key) if desc else None
        if desc is None:
            self.result["variables"] = {}

    # --- state=present ----------------------------------------------------
    def open_object(self):
        path = self.params["object"]
        if not os.path.isfile(path):
            self.fail(
                f"BPF object {path} does not exist on the target; build it with `make -C bpf` "
                f"or install it with the xdplab.testbed.bpf_programs role"
            )
        try:
            obj = libbpf.BpfObject(path)
        except libbpf.LibbpfError as exc:
            self.fail(f"{exc}. {exc.log_tail(10)}".strip())
        return obj

    def pick_variant(self):
        """'core' or 'nocore', as O(variant) says or, for auto, as the kernel's features say."""
        self.result["kernel_features"] = {}
        if self.params["variant"] != "auto":
            return self.params["variant"]
        features = libbpf.kernel_features()
        self.result["kernel_features"] = features
        return "core" if features["btf_vmlinux"] and features["global_data"] else "nocore"

    def nocore_object(self, obj, program, defaults, variables):
        """Path of the non-CO-RE variant for these variables; fails naming what is missing."""
        directory = os.path.dirname(os.path.abspath(obj.path))
        why = self.nocore_reason()
        compiled = nocore_variables(directory, program)
        if compiled is None:
            self.fail(
                f"no non-CO-RE variant of {program} in {os.path.join(directory, NOCORE_DIR)}{why}; build them with "
                f"role xdplab.testbed.bpf_programs (bpf_programs_nocore: true) or make -C bpf nocore install-nocore"
            )
        fixed = sorted(n for n in variables if n not in compiled and variables[n] != defaults.get(n))
        if fixed:
            self.fail(
                f"the non-CO-RE variant of {program}{why} compiles in only {', '.join(compiled)}: "
                f"{', '.join(f'{n}={variables[n]}' for n in fixed)} cannot be set without global data (.rodata, 5.2+)"
            )
        path = nocore_path(directory, program, {n: variables.get(n, defaults.get(n, 0)) for n in compiled})
        if not os.path.isfile(path):
            self.fail(
                f"no non-CO-RE variant {path} for {program} with these variables{why}; variants are built for "
                f"the values of bpf/Makefile's NOCORE_* lists"
            )
        return path

    def nocore_reason(self):
        feats = self.result.get("kernel_features") or {}
        lacks = [what for key, what in (("btf_vmlinux", "BTF"), ("global_data", "global data")) if feats and not feats[key]]
        return f" (kernel {feats['release']} has no {' and no '.join(lacks)})" if lacks else ""

    def check_program(self, obj, program):
        problem = obj.xdp_program_problem(program)
        if problem:
            self.fail(problem)

    def check_cpumap_programs(self, obj, names):
        """Every program a cpumap entry names is in the object and is a cpumap program (before anything changes)."""
        in_object = obj.program_names()
        for name in names:
            if name not in in_object:
                self.fail(f"map_entries: the cpumap program {name} is not in {obj.path}; programs: {', '.join(in_object)}")
            section = obj.section_name(name)
            if section != CPUMAP_SECTION:
                self.fail(
                    f"map_entries: {name} in {obj.path} is in section {section}, not {CPUMAP_SECTION}: the kernel runs "
                    f'only programs loaded for a cpumap (SEC("{CPUMAP_SECTION}")) from a cpumap entry'
                )

    def present(self):
        program, mode = self.params["program"], self.params["mode"]
        try:
            wanted_vars = resolve_variables(self.params["variables"])
            wanted_maps = resolve_map_entries(self.params["map_entries"])
        except ValueError as exc:
            self.fail(str(exc))
        obj = self.open_object()
        try:
            self.check_program(obj, program)
            self.check_cpumap_programs(obj, cpumap_programs(wanted_maps))
            layout = obj.datasec_layout()
            unknown = sorted(set(wanted_vars) - set(layout))
            if unknown:
                self.fail(
                    f"unknown .rodata variable(s) {', '.join(unknown)} for {obj.path}; "
                    f"variables: {', '.join(sorted(layout)) or '(none)'}"
                )
            defaults = obj.rodata_variables()
            variables = dict(defaults, **wanted_vars)
            variant = self.pick_variant()
            if variant == "nocore":
                path = self.nocore_object(obj, program, defaults, variables)
                obj.close()
                obj = libbpf.BpfObject(path)
                self.check_program(obj, program)
                layout = {}
            sha = file_sha256(obj.path)
            desired = {
                "name": program,
                "mode": mode,
                "variables": variables,
                "object_sha256": sha,
                "variant": variant,
                "object": os.path.abspath(obj.path),
                "map_entries": wanted_maps,
            }
            before = self.current()
            if before and not before["variables"] and layout:
                before["variables"] = libbpf.decode_variables(before["rodata"], layout)
            self.result["previous"] = {"id": before["id"], "name": before["name"], "mode": before["mode"]} if before else None
            if before and self.same(before, desired, layout):
                self.report(before)
                self.result["map_entries"] = read_map_entries(before["id"], wanted_maps)
                if not self.module.check_mode:
                    self.records.prune()
                return
            self.result["changed"] = True
            if self.module._diff:
                self.result["diff"] = {"before": self.diff_view(before), "after": self.diff_view(desired)}
            if self.module.check_mode:
                self.report(dict(desired, id=None, tag=None))
                self.result["map_entries"] = desired["map_entries"]
                return
            self.attach(obj, desired, layout, before)
        finally:
            obj.close()

    def same(self, before, desired, layout):
        """The idempotency test: name, mode, .rodata values and object checksum all equal."""
        if before["object_sha256"] is None or before["object_sha256"] != desired["object_sha256"]:
            return False
        if kernel_name(before["name"]) != kernel_name(desired["name"]) or before["mode"] != desired["mode"]:
            return False
        if desired["map_entries"] and read_map_entries(before["id"], desired["map_entries"]) != desired["map_entries"]:
            return False
        if desired["variant"] == "nocore":
            # the variant file (its checksum) holds the compiled-in values; the record says which were asked
            return before["variant"] == "nocore" and before["variables"] == desired["variables"]
        current_vars = libbpf.decode_variables(before["rodata"], layout)
        return current_vars == desired["variables"]

    def attach(self, obj, desired, layout, before):
        mode = desired["mode"]
        try:
            if desired["variant"] == "core":
                obj.set_rodata(desired["variables"])
            prog = obj.only_load(desired["name"], also=cpumap_programs(desired["map_entries"]))
            obj.load()
        except libbpf.LibbpfError as exc:
            tail = exc.log_tail(30)
            self.fail(
                f"the kernel rejected {desired['name']} from {obj.path}: {exc}. Verifier log (tail):\n{tail}",
                verifier_log=tail,
            )
        for name, table in desired["map_entries"].items():
            try:
                fd = obj.map_fd(name)
                for key, value in table.items():
                    libbpf.update_elem(fd, key, self.entry_value(obj, value))
            except libbpf.LibbpfError as exc:
                self.fail(f"cannot set map_entries.{name} of {desired['name']} ({table}): {exc}; a devmap takes the "
                          f"ifindex of an interface on this host that can transmit XDP frames (ndo_xdp_xmit), a "
                          f"cpumap a CPU number below its max_entries that this host has, with {{qsize, program}}")
        prog_fd = obj.program_fd(prog)
        old_fd = None
        # a failed attach changed nothing, unless the old program was already detached
        self.result["changed"] = False
        try:
            if before and before["mode"] == mode:
                old_fd = libbpf.prog_fd_by_id(before["id"])
            elif before:
                # native and generic XDP cannot coexist on one device: detach the old one first
                libbpf.xdp_detach(self.ifindex, before["mode"])
                self.records.remove(before["id"])
                self.result["changed"] = True
            libbpf.xdp_attach(self.ifindex, prog_fd, mode, old_prog_fd=old_fd)
        except libbpf.LibbpfError as exc:
            self.fail(self.attach_error(exc, mode), kernel_log=exc.log_tail(10))
        finally:
            if old_fd is not None:
                os.close(old_fd)
        self.result["changed"] = True
        prog_id, attached_mode = libbpf.attached_program(self.ifindex)
        info = libbpf.prog_info(fd=prog_fd)
        if prog_id != info["id"]:
            self.fail(f"attached program id {prog_id} is not the one just loaded ({info['id']}); another tool raced us")
        self.records.write(
            info,
            {
                "program": desired["name"],
                "object": os.path.abspath(obj.path),
                "object_sha256": desired["object_sha256"],
                "mode": attached_mode,
                "interface": self.interface,
                "ifindex": self.ifindex,
                "variables": desired["variables"],
                "variant": desired["variant"],
                "map_entries": {m: {str(k): v for k, v in t.items()} for m, t in desired["map_entries"].items()},
                "layout": {k: list(v) for k, v in layout.items()},
            },
        )
        if before:
            self.records.remove(before["id"])
        self.records.prune()
        self.report(self.current())
        self.result["map_entries"] = read_map_entries(info["id"], desired["map_entries"])

    @staticmethod
    def entry_value(obj, value):
        """A map value as update_elem takes it: an int, or a cpumap entry's struct bpf_cpumap_val (qsize, prog fd)."""
        if not isinstance(value, dict):
            return value
        prog_fd = obj.program_fd(obj.find_program(value["program"])) if value["program"] else 0
        return int(value["qsize"]).to_bytes(4, "little") + int(prog_fd).to_bytes(4, "little", signed=True)

    def attach_error(self, exc, mode):
        kernel = exc.log_tail(5)
        hint = f" Kernel said: {kernel}" if kernel else ""
        if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL) and mode == "native":
            return f"driver of {self.interface} does not support native XDP; use mode: skb ({exc}).{hint}"
        if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL) and mode == "hw":
            return f"driver of {self.interface} does not support XDP offload; use mode: native or skb ({exc}).{hint}"
        if exc.errno == errno.EEXIST:
            return f"the XDP program on {self.interface} changed while attaching; run the task again ({exc}).{hint}"
        if exc.errno == errno.EBUSY:
            return (
                f"an XDP program is attached to {self.interface} in another mode; "
                f"detach it with state: absent first ({exc}).{hint}"
            )
        if exc.errno in (errno.EPERM, errno.EACCES):
            return f"not allowed to attach XDP to {self.interface}; run as root (become: true) ({exc}).{hint}"
        return f"attaching to {self.interface} failed: {exc}.{hint}"

    # --- state=absent -----------------------------------------------------
    def absent(self):
        before = self.current() if self.ifindex else None
        self.result["previous"] = {"id": before["id"], "name": before["name"], "mode": before["mode"]} if before else None
        self.report(None)
        self.result["mode"] = None
        if not before:
            return
        self.result["changed"] = True
        if self.module._diff:
            self.result["diff"] = {"before": self.diff_view(before), "after": {}}
        if self.module.check_mode:
            return
        try:
            old_fd = libbpf.prog_fd_by_id(before["id"])
            try:
                libbpf.xdp_detach(self.ifindex, before["mode"], old_prog_fd=old_fd)
            finally:
                os.close(old_fd)
        except libbpf.LibbpfError as exc:
            self.fail(f"detaching XDP from {self.interface} failed: {exc}", kernel_log=exc.log_tail(10))
        self.records.remove(before["id"])

    def run(self):
        try:
            if self.params["state"] == "present":
                self.present()
            else:
                self.absent()
        except libbpf.LibbpfError as exc:
            self.fail(str(exc), libbpf_log=exc.log_tail(20))
        return self.result


def main():
    module = AnsibleModule(
        argument_spec={
            "interface": {"type": "str", "required": True},
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
            "object": {"type": "path"},
            "program": {"type": "str"},
            "mode": {"type": "str", "choices": ["native", "skb", "hw"], "default": "native"},
            "variables": {"type": "dict", "default": {}},
            "map_entries": {"type": "dict", "default": {}},
            "state_dir": {"type": "path", "default": "/run/xdplab/xdp"},
            "variant": {"type": "str", "choices": ["auto", "core", "nocore"], "default": "auto"},
        },
        required_if=[("state", "present", ("object", "program"))],
        supports_check_mode=True,
    )
    module.exit_json(**XdpProgram(module).run())


if __name__ == "__main__":
    main()
