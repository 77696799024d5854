# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The work of the module trial_record (one trial's record appended to the results file): class TrialRecorder and its
argument spec, here so that the trial runner's phases (plugin_utils/_trial.py) and the action plugin trial_record
write records in the controller's worker without the module file."""

from __future__ import annotations

import errno
import fcntl
import json
import os

from ansible_collections.xdplab.testbed.plugins.module_utils import _jsonl, _record


class TrialRecorder:
    """Builds one trial's record and appends it to the results file unless it is there already."""

    def __init__(self, module):
        self.module = module
        self.p = module.params

    def build(self):
        p = self.p
        try:
            return _record.build_record(
                experiment=p["experiment"],
                trial=p["trial"],
                status=p["status"],
                started_at=p["started_at"],
                measurement=p["measurement"],
                cpu=p["cpu"],
                generator=p["generator"],
                provenance=p["provenance"],
                kept_up_share=p["kept_up_share"],
                link_speed_gbit=p["link_speed_gbit"],
                failure=p["failure"],
                tcp=p["tcp"],
                forwarding=p["forwarding"],
                latency=p["latency"],
                ddos=p["ddos"],
            )
        except _record.RecordError as exc:
            self.module.fail_json(msg="trial_record: %s" % exc)

    def recorded(self, rec, warn=True):
        """(line, record) of the same trial with the same status already in the file, and the file's line count."""
        numbered, warnings = _jsonl.read_numbered(self.p["path"], missing_ok=True)
        for warning in warnings if warn else ():
            self.module.warn(str(warning))
        lines = 0
        try:
            with open(self.p["path"], "rb") as f:
                lines = sum(1 for _line in f)
        except FileNotFoundError:
            pass
        for number, old in numbered:
            if old.get("trial_id") != rec["trial_id"] or old.get("status", _record.STATUS_OK) != rec["status"]:
                continue
            # each failed attempt is its own record (a trial that fails again keeps both errors)
            if rec["status"] == _record.STATUS_OK or old.get("started_at") == rec.get("started_at"):
                return number, old, lines
        return None, None, lines

    @staticmethod
    def _fsync_dir(path):
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def append(self, rec, line):
        """Append one line atomically: one write under an exclusive lock, fsync'd. Returns (line number, existing)."""
        path = self.p["path"]
        directory = os.path.dirname(os.path.abspath(path))
        try:
            os.makedirs(directory, exist_ok=True)
            created = not os.path.exists(path)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            self.module.fail_json(msg="cannot open the results file %s for appending: %s" % (path, exc))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            # under the lock: another writer may have recorded the trial meanwhile
            number, old, lines = self.recorded(rec, warn=False)
            if old is not None:
                return number, old
            data = line.encode() + b"\n"
            size = os.fstat(fd).st_size
            if size:
                with open(path, "rb") as f:
                    f.seek(size - 1)
                    if f.read(1) != b"\n":
                        data = b"\n" + data  # a cut last line stays as it is, on its own line
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(errno.EIO, "short write (%d of %d bytes)" % (written, len(data)))
            os.fsync(fd)
        except OSError as exc:
            self.module.fail_json(msg="cannot append the trial record to %s: %s" % (path, exc))
        finally:
            os.close(fd)
        if created:
            self._fsync_dir(directory)
        return lines + 1, None

    def run(self):
        rec = self.build()
        try:
            line = json.dumps(rec, sort_keys=True, allow_nan=False)
        except ValueError as exc:
            self.module.fail_json(msg="the trial record holds a value JSON cannot carry (%s): NaN or infinity in an input" % exc)
        number, old, lines = self.recorded(rec)
        result = {"changed": False, "path": self.p["path"], "record": old, "line": number}
        if old is not None:
            return result
        result.update(changed=True, record=rec, line=lines + 1)
        if self.module._diff:
            header = "%s (trial %s, %s)" % (self.p["path"], rec["trial_id"], rec["status"])
            result["diff"] = {"before": "", "after": line + "\n", "before_header": header, "after_header": header}
        if self.module.check_mode:
            return result
        number, old = self.append(rec, line)
        if old is not None:  # recorded by another writer between the check and the lock
            result.update(changed=False, record=old, line=number)
            result.pop("diff", None)
        else:
            result["line"] = number
        return result


# the module's arguments, also validated by its action plugin when it runs on the controller (plugins/action)
ARGUMENT_SPEC = dict(
    path=dict(type="path", required=True),
    experiment=dict(type="str", required=True),
    trial=dict(type="dict", required=True),
    status=dict(type="str", choices=["ok", "failed"], default="ok"),
    started_at=dict(type="str"),
    measurement=dict(type="dict"),
    cpu=dict(type="dict"),
    generator=dict(type="dict"),
    tcp=dict(type="dict"),
    forwarding=dict(type="dict"),
    latency=dict(type="dict"),
    ddos=dict(type="dict"),
    provenance=dict(type="dict", default={}),
    kept_up_share=dict(type="float", default=_record.KEPT_UP_SHARE),
    link_speed_gbit=dict(type="float"),
    failure=dict(type="dict"),
)
REQUIRED_IF = [("status", "failed", ("failure",))]
