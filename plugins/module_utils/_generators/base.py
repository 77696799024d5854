# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Process bookkeeping of generator backends that run a local process: _process.Process under its generator names.

A run is identified by (run_dir, name): `<name>.state.json` holds the pid, the process start time (to tell
our process from a recycled pid) and the parameters; `<name>.out` holds the process's stdout (JSON lines),
`<name>.err` its stderr, `<name>.exit.json` how it ended (written by its supervisor, see _process).
"""

from __future__ import annotations

from ansible_collections.xdplab.testbed.plugins.module_utils._process import (
    Process,
    ProcessError,
    json_records,
    proc_start_time,
)

__all__ = ["GeneratorError", "ProcessRun", "json_records", "proc_start_time"]


class GeneratorError(Exception):
    """A generator could not be started, queried or stopped; the message says what to do.

    `process` carries the {pid, exit_status, signal, signal_name, stderr_tail} of a generator that died.
    """

    def __init__(self, msg, process=None):
        super().__init__(msg)
        self.process = process


class ProcessRun(Process):
    """Files and process of one generator run; `backend` names the backend that owns it."""

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

    def spawn(self, command, params, settle=0.5):
        """Start the generator; GeneratorError (naming its exit status or signal) if it fails at start."""
        try:
            return self.start(command, params, settle=settle)
        except ProcessError as exc:
            raise GeneratorError(str(exc)) from None
