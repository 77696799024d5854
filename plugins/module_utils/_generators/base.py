# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Process bookkeeping of generator backends that run a local process: _process.Process under its generator names.

A run is identified by (run_dir, name): `<name>.state.json` holds the pid, the process start time (to tell
our process from a recycled pid) and the parameters; `<name>.out` holds the process's stdout (JSON lines),
`<name>.err` its stderr, `<name>.exit.json` how it ended (written by its supervisor, see _process).
"""

from __future__ import annotations

import os

from ansible_collections.xdplab.testbed.plugins.module_utils import _addresses as addresses
from ansible_collections.xdplab.testbed.plugins.module_utils._process import (
    Process,
    ProcessError,
    json_records,
    proc_start_time,
)

__all__ = [
    "ADDRESS_LISTS",
    "GeneratorError",
    "ProcessRun",
    "address_lists",
    "json_records",
    "proc_start_time",
    "refuse_address_lists",
]

# bytes of a generator's stdout searched for its start record (its first line; libbpf may warn before it on stderr)
START_RECORD_SCAN = 4096


class GeneratorError(Exception):
    """A generator could not be started, queried or stopped; the message says what to do.

    `process` carries the {pid, exit_status, signal, signal_name, stderr_tail} of a generator that died.
    """

    def __init__(self, msg, process=None):
        super().__init__(msg)
        self.process = process


# the generator's address-list options (issue 27): option -> what the list replaces
ADDRESS_LISTS = {"destinations": "dst_ip", "sources": "src_ip"}


def address_lists(params):
    """{option: (addresses, description)} of the address-list options given (destinations, sources); each spec's
    exclude gets the module's exclude (the lab's local and connected nets) too. GeneratorError on bad input."""
    out = {}
    for option in ADDRESS_LISTS:
        spec = params.get(option)
        if not spec:
            continue
        try:
            out[option] = addresses.address_list(spec, option, params.get("exclude") or ())
        except addresses.AddressError as exc:
            raise GeneratorError(str(exc)) from None
    return out


def refuse_address_lists(params, backend, instead):
    """A backend that cannot send address lists says so, and what to do instead, before anything starts."""
    given = [option for option in ADDRESS_LISTS if params.get(option)]
    if given:
        raise GeneratorError(
            "backend %s cannot send the address lists of %s (only xdp_live can, today): %s"
            % (backend, " and ".join(given), instead)
        )


class ProcessRun(Process):
    """Files and process of one generator run; `backend` names the backend that owns it.

    Its address lists (xdp_live: --dst-list, --src-list) are files of the run too: `<name>.destinations.txt`,
    `<name>.sources.txt`."""

    def list_path(self, option):
        return os.path.join(self.run_dir, "%s.%s.txt" % (self.name, option))

    def paths(self):
        return super().paths() + [self.list_path(option) for option in ADDRESS_LISTS]

    @property
    def backend(self):
        return self.kind

    @backend.setter
    def backend(self, name):
        self.kind = name

    def load_state(self):
        try:
            return super().load_state()
        except ProcessError as exc:
            raise GeneratorError(str(exc)) from None

    def spawn(self, command, params, settle=0.5, start_record=False):
        """Start the generator; GeneratorError (naming its exit status or signal) if it fails at start.

        It settles for `settle` seconds, or until its first JSON line of type start when `start_record` (a generator
        that prints one once it sends: xdplab-trafficgen 0.3.0); an older build without it settles the whole time."""
        try:
            return self.start(command, params, settle=settle, ready=self.printed_start if start_record else None)
        except ProcessError as exc:
            raise GeneratorError(str(exc)) from None

    def printed_start(self):
        """Whether the process has printed its start record (the beginning of its stdout: cheap to poll)."""
        try:
            with open(self.out_path, "rb") as f:
                head = f.read(START_RECORD_SCAN)
        except OSError:
            return False
        # whole lines only (a line without its newline yet is still being written)
        return any(line.startswith(b'{"type":"start"') for line in head.split(b"\n")[:-1])
