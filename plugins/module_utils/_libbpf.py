# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A small ctypes binding of libbpf.so.1: only what the xdplab modules need.

Nothing here depends on bpffs pins: programs and maps are found through the
interface (netlink, via bpf_xdp_query) and the kernel's object ids, so the code
works inside ``ip netns exec`` where /sys/fs/bpf is not mounted.

libbpf >= 1.0 semantics are assumed (libbpf.so.1): functions returning int
return ``-errno``; functions returning pointers return NULL and set errno.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno as _errno
import hashlib
import os
import sys
import tempfile

XDP_FLAGS_UPDATE_IF_NOEXIST = 1 << 0
XDP_FLAGS_SKB_MODE = 1 << 1
XDP_FLAGS_DRV_MODE = 1 << 2
XDP_FLAGS_HW_MODE = 1 << 3
XDP_FLAGS_REPLACE = 1 << 4

XDP_ATTACHED_NONE = 0
XDP_ATTACHED_DRV = 1
XDP_ATTACHED_SKB = 2
XDP_ATTACHED_HW = 3
XDP_ATTACHED_MULTI = 4

# mode name (as the modules spell it) -> attach flag
MODE_FLAGS = {"native": XDP_FLAGS_DRV_MODE, "skb": XDP_FLAGS_SKB_MODE, "hw": XDP_FLAGS_HW_MODE}

BPF_MAP_TYPE_ARRAY = 2
BPF_MAP_TYPE_PERCPU_ARRAY = 6
BPF_MAP_TYPE_DEVMAP = 14
BPF_MAP_TYPE_CPUMAP = 16
MAP_TYPE_NAMES = {
    1: "hash",
    2: "array",
    3: "prog_array",
    4: "perf_event_array",
    5: "percpu_hash",
    6: "percpu_array",
    9: "lru_hash",
    10: "lru_percpu_hash",
    14: "devmap",
    16: "cpumap",
    17: "xskmap",
    27: "ringbuf",
}

BPF_PROG_TYPE_SOCKET_FILTER = 1
BPF_PROG_TYPE_XDP = 6
PROG_TYPE_NAMES = {
    0: "unspec",
    1: "socket_filter",
    2: "kprobe",
    3: "sched_cls (tc)",
    4: "sched_act",
    5: "tracepoint",
    6: "xdp",
    7: "perf_event",
    8: "cgroup_skb",
}

BTF_KIND_VAR = 14
BTF_KIND_DATASEC = 15
BPF_OBJ_NAME_LEN = 16


class LibbpfError(Exception):
    """A libbpf call failed. ``errno`` is the positive errno, ``log`` the captured libbpf output."""

    def __init__(self, message, errno=None, log=""):
        self.errno = errno
        self.log = log or ""
        if errno:
            message = f"{message}: {os.strerror(errno)} (errno {errno})"
        super().__init__(message)

    def log_tail(self, lines=25):
        """Last ``lines`` lines of libbpf's output (e.g. the verifier log)."""
        return "\n".join(self.log.rstrip().splitlines()[-lines:])


class _BpfXdpAttachOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("old_prog_fd", ctypes.c_int)]


class _BpfXdpQueryOpts(ctypes.Structure):
    _fields_ = [
        ("sz", ctypes.c_size_t),
        ("prog_id", ctypes.c_uint32),
        ("drv_prog_id", ctypes.c_uint32),
        ("hw_prog_id", ctypes.c_uint32),
        ("skb_prog_id", ctypes.c_uint32),
        ("attach_mode", ctypes.c_uint8),
    ]


class _BpfProgInfo(ctypes.Structure):
    """Head of struct bpf_prog_info (linux/bpf.h); the kernel accepts a shorter struct."""

    _fields_ = [
        ("type", ctypes.c_uint32),
        ("id", ctypes.c_uint32),
        ("tag", ctypes.c_uint8 * 8),
        ("jited_prog_len", ctypes.c_uint32),
        ("xlated_prog_len", ctypes.c_uint32),
        ("jited_prog_insns", ctypes.c_uint64),
        ("xlated_prog_insns", ctypes.c_uint64),
        ("load_time", ctypes.c_uint64),
        ("created_by_uid", ctypes.c_uint32),
        ("nr_map_ids", ctypes.c_uint32),
        ("map_ids", ctypes.c_uint64),
        ("name", ctypes.c_char * BPF_OBJ_NAME_LEN),
        ("ifindex", ctypes.c_uint32),
        ("gpl_compatible", ctypes.c_uint32),
        ("netns_dev", ctypes.c_uint64),
        ("netns_ino", ctypes.c_uint64),
        ("nr_jited_ksyms", ctypes.c_uint32),
        ("nr_jited_func_lens", ctypes.c_uint32),
        ("jited_ksyms", ctypes.c_uint64),
        ("jited_func_lens", ctypes.c_uint64),
        ("btf_id", ctypes.c_uint32),
        ("_pad", ctypes.c_uint32),
    ]


class _BpfMapInfo(ctypes.Structure):
    """Head of struct bpf_map_info (linux/bpf.h)."""

    _fields_ = [
        ("type", ctypes.c_uint32),
        ("id", ctypes.c_uint32),
        ("key_size", ctypes.c_uint32),
        ("value_size", ctypes.c_uint32),
        ("max_entries", ctypes.c_uint32),
        ("map_flags", ctypes.c_uint32),
        ("name", ctypes.c_char * BPF_OBJ_NAME_LEN),
        ("ifindex", ctypes.c_uint32),
        ("btf_vmlinux_value_type_id", ctypes.c_uint32),
        ("netns_dev", ctypes.c_uint64),
        ("netns_ino", ctypes.c_uint64),
        ("btf_id", ctypes.c_uint32),
        ("btf_key_type_id", ctypes.c_uint32),
        ("btf_value_type_id", ctypes.c_uint32),
        ("_pad", ctypes.c_uint32),
        ("map_extra", ctypes.c_uint64),
    ]


class _BpfInsn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("regs", ctypes.c_uint8), ("off", ctypes.c_int16), ("imm", ctypes.c_int32)]


class _BpfTestRunOpts(ctypes.Structure):
    _fields_ = [
        ("sz", ctypes.c_size_t),
        ("data_in", ctypes.c_void_p),
        ("data_out", ctypes.c_void_p),
        ("data_size_in", ctypes.c_uint32),
        ("data_size_out", ctypes.c_uint32),
        ("ctx_in", ctypes.c_void_p),
        ("ctx_out", ctypes.c_void_p),
        ("ctx_size_in", ctypes.c_uint32),
        ("ctx_size_out", ctypes.c_uint32),
        ("retval", ctypes.c_uint32),
        ("repeat", ctypes.c_int),
        ("duration", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("cpu", ctypes.c_uint32),
        ("batch_size", ctypes.c_uint32),
    ]


class _BtfType(ctypes.Structure):
    _fields_ = [("name_off", ctypes.c_uint32), ("info", ctypes.c_uint32), ("size_or_type", ctypes.c_uint32)]


class _BtfVarSecinfo(ctypes.Structure):
    _fields_ = [("type", ctypes.c_uint32), ("offset", ctypes.c_uint32), ("size", ctypes.c_uint32)]


_LIB = None


def _signature(lib, name, restype, argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = argtypes
    return fn


def load_library():
    """Load libbpf.so.1 once (raises LibbpfError with an install hint)."""
    global _LIB
    if _LIB is not None:
        return _LIB
    candidates = ["libbpf.so.1", ctypes.util.find_library("bpf")]
    last = None
    for cand in candidates:
        if not cand:
            continue
        try:
            lib = ctypes.CDLL(cand, use_errno=True)
            break
        except OSError as exc:
            last = exc
    else:
        raise LibbpfError(f"cannot load libbpf.so.1 ({last}); install libbpf (Debian: apt-get install libbpf1)")

    vp, cp, i, u32 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint32
    _signature(lib, "bpf_object__open_file", vp, [cp, vp])
    _signature(lib, "bpf_object__close", None, [vp])
    _signature(lib, "bpf_object__load", i, [vp])
    _signature(lib, "bpf_object__btf", vp, [vp])
    _signature(lib, "bpf_object__find_program_by_name", vp, [vp, cp])
    _signature(lib, "bpf_object__next_program", vp, [vp, vp])
    _signature(lib, "bpf_object__next_map", vp, [vp, vp])
    _signature(lib, "bpf_program__name", cp, [vp])
    _signature(lib, "bpf_program__section_name", cp, [vp])
    _signature(lib, "bpf_program__set_autoload", i, [vp, ctypes.c_bool])
    _signature(lib, "bpf_program__fd", i, [vp])
    _signature(lib, "bpf_map__name", cp, [vp])
    _signature(lib, "bpf_map__initial_value", vp, [vp, ctypes.POINTER(ctypes.c_size_t)])
    _signature(lib, "btf__find_by_name_kind", i, [vp, cp, u32])
    _signature(lib, "btf__type_by_id", ctypes.POINTER(_BtfType), [vp, u32])
    _signature(lib, "btf__name_by_offset", cp, [vp, u32])
    _signature(lib, "bpf_xdp_attach", i, [i, i, u32, ctypes.POINTER(_BpfXdpAttachOpts)])
    _signature(lib, "bpf_xdp_detach", i, [i, u32, ctypes.POINTER(_BpfXdpAttachOpts)])
    _signature(lib, "bpf_xdp_query", i, [i, i, ctypes.POINTER(_BpfXdpQueryOpts)])
    _signature(lib, "bpf_prog_get_fd_by_id", i, [u32])
    _signature(lib, "bpf_map_get_fd_by_id", i, [u32])
    # bpf_prog_get_info_by_fd appeared in libbpf 1.2; 1.1 only has bpf_obj_get_info_by_fd
    info_name = "bpf_prog_get_info_by_fd" if hasattr(lib, "bpf_prog_get_info_by_fd") else "bpf_obj_get_info_by_fd"
    lib.xdplab_get_info = _signature(lib, info_name, i, [i, vp, ctypes.POINTER(u32)])
    _signature(lib, "bpf_map_lookup_elem", i, [i, vp, vp])
    _signature(lib, "bpf_map_update_elem", i, [i, vp, vp, ctypes.c_uint64])
    _signature(lib, "bpf_object__find_map_by_name", vp, [vp, cp])
    _signature(lib, "bpf_map__fd", i, [vp])
    _signature(lib, "libbpf_num_possible_cpus", i, [])
    _signature(lib, "bpf_program__type", i, [vp])
    _signature(lib, "bpf_map_create", i, [i, cp, u32, u32, u32, vp])
    _signature(lib, "bpf_prog_load", i, [i, cp, cp, ctypes.POINTER(_BpfInsn), ctypes.c_size_t, vp])
    _signature(lib, "bpf_prog_test_run_opts", i, [i, ctypes.POINTER(_BpfTestRunOpts)])
    _signature(lib, "libbpf_probe_bpf_map_type", i, [i, vp])
    _LIB = lib
    return lib


def _check(ret, what, log=""):
    """libbpf 1.x int convention: negative return is -errno."""
    if ret < 0:
        raise LibbpfError(what, errno=-ret, log=log)
    return ret


def _errno_or(default=_errno.EINVAL):
    return ctypes.get_errno() or default


@contextlib.contextmanager
def capture_stderr():
    """Redirect fd 2 (where libbpf prints, including the verifier log) into a buffer.

    Yields a list that holds the captured text once the block exits.
    """
    out = []
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield out
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            out.append(tmp.read().decode("utf-8", "replace"))


def file_sha256(path):
    """SHA-256 (hex) of a file's content."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _close(fd):
    if fd is not None and fd >= 0:
        with contextlib.suppress(OSError):
            os.close(fd)


class BpfObject:
    """An opened (not yet loaded) BPF object file. Use as a context manager."""

    def __init__(self, path):
        self.lib = load_library()
        self.path = path
        self.log = ""
        if not os.path.isfile(path):
            raise LibbpfError(f"BPF object {path} does not exist", errno=_errno.ENOENT)
        with capture_stderr() as log:
            ctypes.set_errno(0)
            obj = self.lib.bpf_object__open_file(os.fsencode(path), None)
            err = ctypes.get_errno()
        self.log = log[0] if log else ""
        if not obj:
            raise LibbpfError(f"cannot open BPF object {path}", errno=err or _errno.EINVAL, log=self.log)
        self.obj = obj
        self.loaded = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.obj:
            self.lib.bpf_object__close(self.obj)
            self.obj = None

    # --- programs -------------------------------------------------------
    def program_names(self):
        names = []
        prog = self.lib.bpf_object__next_program(self.obj, None)
        while prog:
            names.append(self.lib.bpf_program__name(prog).decode())
            prog = self.lib.bpf_object__next_program(self.obj, prog)
        return names

    def find_program(self, name):
        prog = self.lib.bpf_object__find_program_by_name(self.obj, name.encode())
        if not prog:
            raise LibbpfError(
                f"program {name!r} not found in {self.path}; programs in the object: {', '.join(self.program_names())}",
                errno=_errno.ENOENT,
            )
        return prog

    def only_load(self, name, also=()):
        """Load only program ``name`` and the programs named in ``also`` (for example a cpumap entry's program);
        the others get autoload=false. Returns the handle of ``name``."""
        wanted = self.find_program(name)
        loaded = [wanted] + [self.find_program(other) for other in also]
        prog = self.lib.bpf_object__next_program(self.obj, None)
        while prog:
            _check(self.lib.bpf_program__set_autoload(prog, prog in loaded), "bpf_program__set_autoload")
            prog = self.lib.bpf_object__next_program(self.obj, prog)
        return wanted

    def section_name(self, name):
        """ELF section of program ``name`` (SEC("xdp/cpumap") is xdp/cpumap)."""
        return self.lib.bpf_program__section_name(self.find_program(name)).decode()

    def program_type(self, name):
        """(type number, type name) of program ``name``, from its ELF section (SEC("xdp") is xdp)."""
        ptype = self.lib.bpf_program__type(self.find_program(name))
        return ptype, PROG_TYPE_NAMES.get(ptype, f"type {ptype}")

    def programs(self):
        """Every program of the object, in object order: [{name, section, type}] (type as PROG_TYPE_NAMES says)."""
        out = []
        prog = self.lib.bpf_object__next_program(self.obj, None)
        while prog:
            ptype = self.lib.bpf_program__type(prog)
            out.append(
                {
                    "name": self.lib.bpf_program__name(prog).decode(),
                    "section": self.lib.bpf_program__section_name(prog).decode(),
                    "type": PROG_TYPE_NAMES.get(ptype, f"type {ptype}"),
                }
            )
            prog = self.lib.bpf_object__next_program(self.obj, prog)
        return out

    def xdp_program_problem(self, name):
        """None when ``name`` is an XDP program of this object, else why not, naming the programs that are there."""
        names = self.program_names()
        if name not in names:
            return f"program {name} is not in {self.path}; programs in the object: {', '.join(names) or '(none)'}"
        ptype, type_name = self.program_type(name)
        if ptype != BPF_PROG_TYPE_XDP:
            xdp = [n for n in names if self.program_type(n)[0] == BPF_PROG_TYPE_XDP]
            return (
                f"program {name} in {self.path} is a {type_name} program, not an XDP program "
                f'(its section must be SEC("xdp")); XDP programs in the object: {", ".join(xdp) or "(none)"}'
            )
        return None

    def program_fd(self, prog):
        return _check(self.lib.bpf_program__fd(prog), "program has no fd (not loaded)")

    # --- .rodata --------------------------------------------------------
    def _find_map(self, suffix):
        m = self.lib.bpf_object__next_map(self.obj, None)
        while m:
            name = self.lib.bpf_map__name(m).decode()
            if name == suffix or name.endswith(suffix):
                return m
            m = self.lib.bpf_object__next_map(self.obj, m)
        return None

    def datasec_layout(self, section=".rodata"):
        """{variable name: (offset, size)} of a data section, from the object's BTF DATASEC secinfo."""
        btf = self.lib.bpf_object__btf(self.obj)
        if not btf:
            raise LibbpfError(f"{self.path} has no BTF; compile it with clang -g", errno=_errno.ENOENT)
        sec_id = self.lib.btf__find_by_name_kind(btf, section.encode(), BTF_KIND_DATASEC)
        if sec_id < 0:
            return {}
        sec = self.lib.btf__type_by_id(btf, sec_id)
        vlen = sec.contents.info & 0xFFFF
        base = ctypes.addressof(sec.contents) + ctypes.sizeof(_BtfType)
        layout = {}
        for idx in range(vlen):
            info = _BtfVarSecinfo.from_address(base + idx * ctypes.sizeof(_BtfVarSecinfo))
            var = self.lib.btf__type_by_id(btf, info.type)
            name = self.lib.btf__name_by_offset(btf, var.contents.name_off).decode()
            layout[name] = (info.offset, info.size)
        return layout

    def rodata_variables(self):
        """Initial values of the .rodata variables (unsigned little-endian ints)."""
        layout = self.datasec_layout()
        m = self._find_map(".rodata")
        if m is None or not layout:
            return {}
        size = ctypes.c_size_t(0)
        ptr = self.lib.bpf_map__initial_value(m, ctypes.byref(size))
        raw = ctypes.string_at(ptr, size.value)
        return decode_variables(raw, layout)

    def set_rodata(self, values):
        """Set .rodata variables by name before load. Unknown names raise LibbpfError listing the known ones."""
        if not values:
            return
        layout = self.datasec_layout()
        unknown = sorted(set(values) - set(layout))
        if unknown:
            raise LibbpfError(
                f"unknown .rodata variable(s) {', '.join(unknown)} in {self.path}; "
                f"variables: {', '.join(sorted(layout)) or '(none)'}",
                errno=_errno.ENOENT,
            )
        m = self._find_map(".rodata")
        size = ctypes.c_size_t(0)
        ptr = self.lib.bpf_map__initial_value(m, ctypes.byref(size))
        if not ptr:
            raise LibbpfError("cannot access the .rodata initial value", errno=_errno_or())
        for name, value in values.items():
            off, vsize = layout[name]
            if off + vsize > size.value:
                raise LibbpfError(f".rodata variable {name} lies outside the section", errno=_errno.ERANGE)
            ctypes.memmove(ptr + off, encode_int(name, value, vsize), vsize)

    def map_fd(self, name):
        """fd of the loaded object's map ``name`` (LibbpfError naming the maps when there is none)."""
        m = self.lib.bpf_object__find_map_by_name(self.obj, name.encode())
        if not m:
            raise LibbpfError(f"{self.path} has no map {name}", errno=_errno.ENOENT)
        return _check(self.lib.bpf_map__fd(m), f"map {name} has no fd (object not loaded)")

    # --- load -----------------------------------------------------------
    def load(self):
        with capture_stderr() as log:
            ret = self.lib.bpf_object__load(self.obj)
        self.log += log[0] if log else ""
        if ret < 0:
            raise LibbpfError(f"loading {self.path} failed (verifier or kernel rejected it)", errno=-ret, log=self.log)
        self.loaded = True


def encode_int(name, value, size):
    value = int(value)
    lo, hi = -(1 << (8 * size - 1)), (1 << (8 * size)) - 1
    if not lo <= value <= hi:
        raise LibbpfError(f"value {value} of {name} does not fit in {size} bytes", errno=_errno.ERANGE)
    return value.to_bytes(size, "little", signed=value < 0)


def decode_variables(raw, layout):
    """Decode variables as unsigned little-endian ints from a section image."""
    out = {}
    for name, (off, size) in layout.items():
        if off + size <= len(raw):
            out[name] = int.from_bytes(raw[off : off + size], "little")
    return out


# --- attach / detach / query ----------------------------------------------
def xdp_query(ifindex):
    """{'attach_mode': int, 'prog_id', 'drv_prog_id', 'skb_prog_id', 'hw_prog_id'} of an interface."""
    lib = load_library()
    opts = _BpfXdpQueryOpts(sz=ctypes.sizeof(_BpfXdpQueryOpts))
    with capture_stderr() as log:
        ret = lib.bpf_xdp_query(ifindex, 0, ctypes.byref(opts))
    _check(ret, f"bpf_xdp_query(ifindex {ifindex})", log=log[0] if log else "")
    return {
        "attach_mode": opts.attach_mode,
        "prog_id": opts.prog_id,
        "drv_prog_id": opts.drv_prog_id,
        "skb_prog_id": opts.skb_prog_id,
        "hw_prog_id": opts.hw_prog_id,
    }


def attached_program(ifindex):
    """(prog_id, mode name) of the XDP program attached to ifindex, or (0, None)."""
    q = xdp_query(ifindex)
    for mode, key in (("native", "drv_prog_id"), ("skb", "skb_prog_id"), ("hw", "hw_prog_id")):
        if q[key]:
            return q[key], mode
    if q["prog_id"]:
        mode = {XDP_ATTACHED_DRV: "native", XDP_ATTACHED_SKB: "skb", XDP_ATTACHED_HW: "hw"}.get(q["attach_mode"])
        return q["prog_id"], mode
    return 0, None


def xdp_attach(ifindex, prog_fd, mode, old_prog_fd=None):
    """Attach prog_fd. With old_prog_fd, atomically replace that program (XDP_FLAGS_REPLACE);
    without, only attach if nothing is attached (XDP_FLAGS_UPDATE_IF_NOEXIST)."""
    lib = load_library()
    flags = MODE_FLAGS[mode]
    opts = _BpfXdpAttachOpts(sz=ctypes.sizeof(_BpfXdpAttachOpts), old_prog_fd=0)
    if old_prog_fd is not None:
        flags |= XDP_FLAGS_REPLACE
        opts.old_prog_fd = old_prog_fd
    else:
        flags |= XDP_FLAGS_UPDATE_IF_NOEXIST
    with capture_stderr() as log:
        ret = lib.bpf_xdp_attach(ifindex, prog_fd, flags, ctypes.byref(opts))
    _check(ret, f"bpf_xdp_attach(ifindex {ifindex}, mode {mode})", log=log[0] if log else "")


def xdp_detach(ifindex, mode, old_prog_fd=None):
    lib = load_library()
    flags = MODE_FLAGS[mode]
    opts = _BpfXdpAttachOpts(sz=ctypes.sizeof(_BpfXdpAttachOpts), old_prog_fd=0)
    if old_prog_fd is not None:
        flags |= XDP_FLAGS_REPLACE
        opts.old_prog_fd = old_prog_fd
    with capture_stderr() as log:
        ret = lib.bpf_xdp_detach(ifindex, flags, ctypes.byref(opts))
    _check(ret, f"bpf_xdp_detach(ifindex {ifindex}, mode {mode})", log=log[0] if log else "")


# --- ids -> fds -> info ------------------------------------------------------
def prog_fd_by_id(prog_id):
    lib = load_library()
    return _check(lib.bpf_prog_get_fd_by_id(prog_id), f"bpf_prog_get_fd_by_id({prog_id})")


def map_fd_by_id(map_id):
    lib = load_library()
    return _check(lib.bpf_map_get_fd_by_id(map_id), f"bpf_map_get_fd_by_id({map_id})")


def _prog_info_fd(fd):
    lib = load_library()
    info = _BpfProgInfo()
    ln = ctypes.c_uint32(ctypes.sizeof(info))
    _check(lib.xdplab_get_info(fd, ctypes.byref(info), ctypes.byref(ln)), "bpf_prog_get_info_by_fd")
    nr = info.nr_map_ids
    map_ids = []
    if nr:
        arr = (ctypes.c_uint32 * nr)()
        info2 = _BpfProgInfo()
        info2.nr_map_ids = nr
        info2.map_ids = ctypes.addressof(arr)
        ln = ctypes.c_uint32(ctypes.sizeof(info2))
        _check(lib.xdplab_get_info(fd, ctypes.byref(info2), ctypes.byref(ln)), "bpf_prog_get_info_by_fd")
        map_ids = list(arr[: min(nr, info2.nr_map_ids)])
    return {
        "id": info.id,
        "type": info.type,
        "tag": bytes(info.tag).hex(),
        "name": info.name.decode("utf-8", "replace"),
        "load_time": info.load_time,
        "map_ids": map_ids,
        "btf_id": info.btf_id,
    }


def prog_info(prog_id=None, fd=None):
    """{'id', 'type', 'tag' (hex, like bpftool/ip), 'name' (kernel's, max 15 chars), 'load_time', 'map_ids'}."""
    if fd is not None:
        return _prog_info_fd(fd)
    pfd = prog_fd_by_id(prog_id)
    try:
        return _prog_info_fd(pfd)
    finally:
        _close(pfd)


def _map_info_fd(fd):
    lib = load_library()
    info = _BpfMapInfo()
    ln = ctypes.c_uint32(ctypes.sizeof(info))
    _check(lib.xdplab_get_info(fd, ctypes.byref(info), ctypes.byref(ln)), "bpf_map_get_info_by_fd")
    return {
        "id": info.id,
        "type": info.type,
        "type_name": MAP_TYPE_NAMES.get(info.type, str(info.type)),
        "name": info.name.decode("utf-8", "replace"),
        "key_size": info.key_size,
        "value_size": info.value_size,
        "max_entries": info.max_entries,
        "map_flags": info.map_flags,
    }


def map_info(map_id):
    """{'id', 'type', 'type_name', 'name', 'key_size', 'value_size', 'max_entries', 'map_flags'} of a map id."""
    fd = map_fd_by_id(map_id)
    try:
        return _map_info_fd(fd)
    finally:
        _close(fd)


def num_possible_cpus():
    lib = load_library()
    return _check(lib.libbpf_num_possible_cpus(), "libbpf_num_possible_cpus")


def _lookup(fd, key, key_size, buf):
    lib = load_library()
    k = ctypes.create_string_buffer(int(key).to_bytes(key_size, "little"), key_size)
    ret = lib.bpf_map_lookup_elem(fd, k, buf)
    _check(ret, f"bpf_map_lookup_elem(key {key})")


def update_elem(fd, key, value, key_size=4, value_size=4):
    """Set one entry of a map (integer key and value, little-endian; or ``value`` as the raw bytes of a struct,
    for example a cpumap's bpf_cpumap_val), from the caller's network namespace: a devmap resolves an ifindex
    value in the namespace of the process that updates it."""
    lib = load_library()
    k = ctypes.create_string_buffer(int(key).to_bytes(key_size, "little"), key_size)
    raw = bytes(value) if isinstance(value, (bytes, bytearray)) else int(value).to_bytes(value_size, "little")
    v = ctypes.create_string_buffer(raw, len(raw))
    _check(lib.bpf_map_update_elem(fd, k, v, 0), f"bpf_map_update_elem(key {key}, value {value})")


def lookup_int(map_id, key):
    """Integer value of ``key`` in map ``map_id``, or None when the entry is empty (ENOENT)."""
    raw = lookup_bytes(map_id, key)
    return None if raw is None else int.from_bytes(raw[:4], "little")


def lookup_bytes(map_id, key):
    """Raw value of ``key`` in map ``map_id`` (value_size bytes), or None when the entry is empty (ENOENT)."""
    fd = map_fd_by_id(map_id)
    try:
        info = _map_info_fd(fd)
        buf = ctypes.create_string_buffer(info["value_size"])
        try:
            _lookup(fd, key, info["key_size"], buf)
        except LibbpfError as exc:
            if exc.errno == _errno.ENOENT:
                return None
            raise
        return buf.raw
    finally:
        _close(fd)


def read_array(map_id):
    """Values of an array map (one bytes object per key)."""
    fd = map_fd_by_id(map_id)
    try:
        info = _map_info_fd(fd)
        buf = ctypes.create_string_buffer(info["value_size"])
        out = []
        for key in range(info["max_entries"]):
            _lookup(fd, key, info["key_size"], buf)
            out.append(buf.raw)
        return out
    finally:
        _close(fd)


def read_percpu_array(map_id):
    """Values of a per-CPU array map: list indexed by key of lists indexed by CPU of bytes.

    Each per-CPU value occupies round_up(value_size, 8) bytes in the lookup buffer.
    """
    fd = map_fd_by_id(map_id)
    try:
        info = _map_info_fd(fd)
        if info["type"] != BPF_MAP_TYPE_PERCPU_ARRAY:
            raise LibbpfError(f"map {info['name']} (id {map_id}) is {info['type_name']}, not percpu_array")
        ncpu = num_possible_cpus()
        stride = (info["value_size"] + 7) // 8 * 8
        buf = ctypes.create_string_buffer(stride * ncpu)
        out = []
        for key in range(info["max_entries"]):
            _lookup(fd, key, info["key_size"], buf)
            raw = buf.raw
            out.append([raw[c * stride : c * stride + info["value_size"]] for c in range(ncpu)])
        return out
    finally:
        _close(fd)


def find_prog_map(prog_id, name=None, suffix=None):
    """Map info of the map of prog_id called ``name`` (or whose name ends with ``suffix``), or None."""
    for mid in prog_info(prog_id)["map_ids"]:
        info = map_info(mid)
        if (name is not None and info["name"] == name) or (suffix is not None and info["name"].endswith(suffix)):
            return info
    return None


# --- kernel features ---------------------------------------------------------
BTF_VMLINUX = "/sys/kernel/btf/vmlinux"


def _insn(code, dst=0, src=0, off=0, imm=0):
    return _BpfInsn(code=code, regs=(dst & 0xF) | ((src & 0xF) << 4), off=off, imm=imm)


def probe_global_data():
    """Does the kernel take global data (a program addressing an array map's value, BPF_PSEUDO_MAP_VALUE, 5.2+)?

    The same probe as libbpf's FEAT_GLOBAL_DATA: an array map, then an XDP program of 4 instructions that
    stores into the map's value through ``ld_imm64 r1, map_value``. True if the kernel loads it, False if it
    refuses it (EINVAL on a kernel before 5.2); other failures (EPERM: not root) raise LibbpfError.
    """
    lib = load_library()
    map_fd = _check(lib.bpf_map_create(BPF_MAP_TYPE_ARRAY, b"xdplab_probe", 4, 32, 1, None), "bpf_map_create (probe)")
    try:
        pseudo_map_value, ld_imm64, st_mem_dw, mov64_imm, exit_ = 2, 0x18, 0x7A, 0xB7, 0x95
        insns = (_BpfInsn * 5)(
            _insn(ld_imm64, dst=1, src=pseudo_map_value, imm=map_fd),
            _insn(0, imm=16),  # second half of ld_imm64: the offset in the value
            _insn(st_mem_dw, dst=1, off=0, imm=42),
            _insn(mov64_imm, dst=0, imm=0),
            _insn(exit_),
        )
        ctypes.set_errno(0)
        with capture_stderr():
            fd = lib.bpf_prog_load(BPF_PROG_TYPE_XDP, b"xdplab_probe", b"GPL", insns, len(insns), None)
        if fd >= 0:
            os.close(fd)
            return True
        if -fd in (_errno.EPERM, _errno.EACCES):
            raise LibbpfError("probing global data (bpf_prog_load) needs root (CAP_BPF)", errno=-fd)
        return False
    finally:
        _close(map_fd)


BPF_F_TEST_XDP_LIVE_FRAMES = 1 << 1


def probe_map_type(map_type):
    """Does the kernel create maps of ``map_type`` (libbpf_probe_bpf_map_type)?"""
    lib = load_library()
    ret = lib.libbpf_probe_bpf_map_type(map_type, None)
    return _check(ret, f"libbpf_probe_bpf_map_type({map_type})") == 1


def probe_live_frames():
    """Does BPF_PROG_RUN take BPF_F_TEST_XDP_LIVE_FRAMES (5.18+)? Runs an XDP_DROP program once in that mode."""
    lib = load_library()
    mov64_imm, exit_, xdp_drop = 0xB7, 0x95, 1
    insns = (_BpfInsn * 2)(_insn(mov64_imm, dst=0, imm=xdp_drop), _insn(exit_))
    with capture_stderr():
        fd = lib.bpf_prog_load(BPF_PROG_TYPE_XDP, b"xdplab_probe", b"GPL", insns, len(insns), None)
    _check(fd, "bpf_prog_load (live-frames probe)")
    try:
        try:
            test_run(fd, bytes(64), repeat=1, flags=BPF_F_TEST_XDP_LIVE_FRAMES)
        except LibbpfError as exc:
            if exc.errno in (_errno.EINVAL, _errno.EOPNOTSUPP):
                return False
            raise
        return True
    finally:
        _close(fd)


def kernel_features():
    """What the running kernel offers the lab's programs: release, BTF of vmlinux, global data (probed)."""
    return {
        "release": os.uname().release,
        "btf_vmlinux": os.path.exists(BTF_VMLINUX),
        "global_data": probe_global_data(),
    }


def test_run(prog_fd, data, repeat=1, flags=0):
    """BPF_PROG_RUN: run prog_fd ``repeat`` times on ``data``; returns (return value, output frame).

    With ``flags`` BPF_F_TEST_XDP_LIVE_FRAMES there is no output frame (the kernel refuses one): (0, b"")."""
    lib = load_library()
    buf_in = ctypes.create_string_buffer(bytes(data), len(data))
    buf_out = ctypes.create_string_buffer(len(data) + 256)
    opts = _BpfTestRunOpts(sz=ctypes.sizeof(_BpfTestRunOpts))
    opts.data_in = ctypes.cast(buf_in, ctypes.c_void_p)
    opts.data_size_in = len(data)
    if not flags & BPF_F_TEST_XDP_LIVE_FRAMES:
        opts.data_out = ctypes.cast(buf_out, ctypes.c_void_p)
        opts.data_size_out = len(buf_out)
    opts.repeat = repeat
    opts.flags = flags
    _check(lib.bpf_prog_test_run_opts(prog_fd, ctypes.byref(opts)), f"BPF_PROG_RUN of program fd {prog_fd}")
    return opts.retval, buf_out.raw[: opts.data_size_out]
