# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one JSON-lines reader of the collection.

Two kinds of JSON-lines text are read here:

- a records file (``trials.jsonl``): every non-blank line must be one JSON object. A line that is
  not is *corrupt*: it yields a warning naming ``file:line`` and is left out of the records. The
  reader never writes: the line stays in the file as it is, for a human to look at.
- a process's stdout (``stream=True``: the generator, the AF_XDP bench, the T-Rex runner): JSON
  objects between other output (libbpf's messages, a banner); lines that do not start with ``{``
  are that other output and are passed over silently. The last line may have been cut by a kill
  of the process in the middle of a write: that is said in a warning of kind ``cut`` and is not
  counted as corruption.

``parse``/``read`` return ``(records, warnings)``; ``parse_numbered``/``read_numbered`` return
``([(line number, record)], warnings)`` for callers that name lines themselves. A warning is a
``LineWarning`` whose ``str()`` is the message (``trials.jsonl:7: not valid JSON (...): left in
the file, not read``).
"""

from __future__ import annotations

import json
import os

CORRUPT = "corrupt"
CUT = "cut"
NOT_AN_OBJECT = "not_an_object"


class LineWarning:
    """A line that was not read as a record: where it is, what kind of problem, and why."""

    __slots__ = ("detail", "kind", "line", "source")

    def __init__(self, source, line, kind, detail):
        self.source, self.line, self.kind, self.detail = source, line, kind, detail

    @property
    def corrupt(self):
        """True for a corrupt line of a records file (a line cut by a kill of a process is not corruption)."""
        return self.kind in (CORRUPT, NOT_AN_OBJECT)

    def __str__(self):
        return "%s:%d: %s" % (self.source, self.line, self.detail)

    def __repr__(self):
        return "LineWarning(%r, %d, %r, %r)" % (self.source, self.line, self.kind, self.detail)

    def __eq__(self, other):
        return isinstance(other, LineWarning) and repr(self) == repr(other)

    def __hash__(self):
        return hash(repr(self))


def _excerpt(line, width=60):
    return line if len(line) <= width else line[:width] + "..."


def parse_numbered(text, source="<text>", stream=False):
    """([(line number, record)], warnings) of a JSON-lines text; line numbers count from 1."""
    records, warnings = [], []
    lines = (text or "").splitlines()
    # the last line of a stream without its newline may be cut by a kill mid-write
    last = len(lines) if lines and not (text or "").endswith(("\n", "\r")) else None
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        if stream and not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            if stream and number == last:
                warnings.append(
                    LineWarning(
                        source, number, CUT, "last line cut short (the process was stopped while writing it): %r" % _excerpt(line)
                    )
                )
            else:
                why = getattr(exc, "msg", None) or str(exc)
                warnings.append(
                    LineWarning(
                        source, number, CORRUPT, "not valid JSON (%s): %r; left as it is, not read" % (why, _excerpt(line))
                    )
                )
            continue
        if not isinstance(value, dict):
            what = "a JSON %s, not an object: left as it is, not read" % type(value).__name__
            warnings.append(LineWarning(source, number, NOT_AN_OBJECT, what))
            continue
        records.append((number, value))
    return records, warnings


def parse(text, source="<text>", stream=False):
    """(records, warnings) of a JSON-lines text (see the module's docstring)."""
    numbered, warnings = parse_numbered(text, source, stream)
    return [rec for _n, rec in numbered], warnings


def read_numbered(path, stream=False, missing_ok=False):
    """parse_numbered of a file (undecodable bytes replaced); a missing file raises unless missing_ok."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        if missing_ok:
            return [], []
        raise
    return parse_numbered(text, path, stream)


def read(path, stream=False, missing_ok=False):
    """(records, warnings) of a file; a missing file raises FileNotFoundError unless missing_ok."""
    numbered, warnings = read_numbered(path, stream, missing_ok)
    return [rec for _n, rec in numbered], warnings


def append_line(path, line):
    """Append one JSON line (a str without its newline) and make it durable (flush + fsync) before returning.

    For the result files a module writes alone (A/B verdicts, NDR/PDR searches); trial records go through module
    trial_record, which also locks the file against concurrent writers.
    """
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())
