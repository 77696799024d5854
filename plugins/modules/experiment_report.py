#!/usr/bin/python
# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: experiment_report
short_description: Turn an experiment's trial records into a CSV, a Markdown report and the paper's figures (PNG)
version_added: 0.1.0
description:
  - Reads the JSON-lines trial records an experiment wrote (one line per trial, written by
    M(xdplab.testbed.trial_record); schema C(docs/trial_record.schema.json), version 1, and records written before
    the schema existed), aggregates the repetitions of each matrix point (mean, stdev, ns per packet, per-queue
    spread, offered load, loss, the count mode of XDP trials) and writes C(report.csv) and C(report.md) next to
    them.
  - The limit of each point (the generator, the DUT or the line rate) aggregates the verdicts the records carry; it
    was decided once, when the trial was recorded.
  - A line of the records file that cannot be read (not JSON, not an object, an unknown schema version) is a warning
    naming C(file:line); it is left in the file as it is.
  - Where a reference CSV of the paper is given, a column shows the paper's number for the same system and
    core count, for comparison only (another testbed).
  - With O(figures), draws each figure as a PNG with gnuplot (terminal pngcairo) next to the report, one line
    per series (the median of the repetitions with min-max error bars), the paper's numbers as dashed lines in
    the colour of the matching system, and a footnote naming both testbeds. The gnuplot script (C(NAME.gp)) and
    its data files (C(NAME.dat), C(NAME.ref.dat)) stay beside the PNG; C(cd DEST && gnuplot NAME.gp) redraws it.
    C(report.md) gains a section per figure (the image link, the medians, which limit each series hit and the
    provenance of every series).
  - Runs on the controller (where the records are); figures need gnuplot there (Debian package gnuplot-nox).
author:
  - xdplab.testbed developers (!UNKNOWN)
options:
  results:
    description: Path of the JSON-lines trial records (required unless O(side_by_side) is given).
    type: path
  side_by_side:
    description:
      - Several DUTs' records in one table instead (issue 12), a mapping of a DUT's name to the path of its trial
        records (C(results/EXPERIMENT/DUT/trials.jsonl)). Each DUT's records are aggregated as for its own report
        (mean, stdev, offered load, limit of each matrix point); the table has one row per point any DUT measured
        and one column per DUT, in the order given. Writes C(side_by_side.csv) and C(side_by_side.md) into
        O(dest) (required with it). O(figures) are not drawn in this mode; each DUT's own report draws them.
      - A DUT whose records file does not exist yet is left out with a warning (it ran no trial).
    type: dict
  dest:
    description: Directory for report.csv and report.md (default, the directory of O(results)).
    type: path
  title:
    description: Title of the Markdown table.
    type: str
    default: Results
  reference:
    description: Path of a reference CSV with a C(cores) column (for example drop_vs_cores.csv).
    type: path
  reference_columns:
    description:
      - Map of system name to the reference CSV column holding its pps (for example xdp -> xdp_drop_pps), or to a
        mapping with keys C(column) (the CSV column) and C(match) (a partial point, axis -> value), so the paper's
        number is shown only beside matching rows (the paper's XDP drop series is touch no_touch).
    type: dict
    default: {}
  figures:
    description:
      - Figures to draw, one PNG each (C(DEST/NAME.png)). A figure is a mapping with the keys below.
      - C(name) (required) file name stem; C(title); C(x) and C(y) (required) field paths of a record such as
        C(point.cores), C(point.offered_mpps), C(result.pps), C(result.cpu_busy) (a bare name is a point field);
        C(x_scale), C(y_scale) multiply them (C(1e-6) turns pps into Mpps).
      - C(series) list of point fields whose values name a line (default C([system])), for example
        C([system, touch]); the legend shows the system's label from the records' provenance and the other
        fields only where they vary within a system. C(labels) maps a series id (its values joined by C(/), for
        example C(xdp/read)) to a legend label.
      - C(filter) maps a field (a point field or a dotted path) to a value or a list of values; other trials are
        left out.
      - C(xlabel), C(ylabel) axis labels (give the units); C(logscale) list of axes (C([x]), C([y]), C([x, y]));
        C(xrange), C(yrange) C([min, max]) (null for automatic); C(xtics) list of tick positions; C(width),
        C(height) pixels (default 1400x900, at least 1200x800); C(font_size) (default 14, at least 12);
        C(errorbars) (default true); C(key) where the legend goes, C(below) (default, ours in the left column
        and the paper's in the right one), C(outside) (right of the plot) or C(inside).
      - C(reference) the paper's numbers, drawn dashed; a mapping with C(file) (a CSV; relative to
        O(reference_dir)), C(x) (its x column), C(columns) (mapping of a legend label to a column name or to
        C({column, match}), where C(match) is a partial point (for example system xdp and touch no_touch),
        naming the series whose colour the paper's line takes), C(y_scale) (default the figure's),
        C(x_scale), C(rows) (mapping of a CSV column to value(s), only those rows), C(source) (who measured it,
        the legend's prefix, default C(paper)), C(testbed) (its testbed, default O(reference_label) or the
        README's) and C(label_suffix) (text after the label; default the testbed in parentheses).
      - A legend below the plot whose labels need more room widens the picture (the height stays).
    type: list
    elements: dict
    default: []
  reference_dir:
    description:
      - Directory of the figures' relative reference files (default, the directory of O(reference), else the
        current directory). Its C(README.md) names the paper's testbed (line "Testbed of the paper:").
    type: path
  reference_label:
    description:
      - The paper's testbed as the figures name it (legend suffix and footnote), for example
        C(E5-1650 v4, ConnectX-5). Default, read from the C(README.md) beside the reference files.
    type: str
  link_speed_gbit:
    description:
      - Speed of the DUT's link in Gbit/s, for records written before the schema existed only (a record's
        C(provenance.dut.link_speed_gbit) wins); their verdict did not know the line rate, so a trial the DUT kept up
        with, offered at 95% or more of the link's line rate, is marked as limited by the line rate here (with the
        same code that decides it for new records). Records of schema 1 carry their verdict, line rate included
        (M(xdplab.testbed.trial_record)'s O(xdplab.testbed.trial_record#module:link_speed_gbit)).
        Unknown (the virtual lab's veth) by default.
    type: float
  ratios:
    description:
      - "Ratio rows (issue 27): our ratio of two systems beside the paper's ratio, which is what compares across
        testbeds (XDP/Linux, full/single table, XDP/IPVS, TCP_RR held under attack). A section C(Ratios) of
        C(report.md) (with a sentence saying so) and C(ratios.csv) beside C(report.csv); the HTML pages of
        M(xdplab.testbed.results_report) show that CSV. Not with O(side_by_side)."
      - "Each ratio is a mapping: C(name) (required, the first column); C(numerator) and C(denominator) (required),
        each C({match: {field: value(s)}}) (point fields such as C(system), or dotted paths); C(per), a list of
        axes (for example C([cores])): one row per value both sides measured (none: one row); C(y), the field
        compared (default C(result.pps)). Ours: the median of C(y) over the numerator's trials at that value over the
        median over the denominator's. A C(per) axis the denominator's C(match) fixes (C(attack_pps: 0)) does not
        split it: every row is over that one denominator."
      - "C(compare) (optional): V(ratio) (default) or V(ns_added), the nanoseconds per packet the numerator adds
        over the denominator (C(1e9/numerator - 1e9/denominator), C(y) a rate; the paper's too): the routing
        experiment's per-packet cost of the full table."
      - "C(paper) (optional): C(file) (a CSV, relative to O(reference_dir)), C(numerator_column),
        C(denominator_column), C(x) (its x column, matched against the C(per) axis C(axis), default the first),
        C(x_scale) (the CSV's x times it is compared with our value; default 1), C(denominator_at) (a fixed x of the
        CSV for the paper's denominator) and C(at) (the CSV's x of the paper's ratio when C(per) is empty). The paper's
        ratio is empty where the CSV has no row at that x or a cell is empty."
      - A ratio none of whose trials match both sides is left out with a note under the table; a spec that is wrong
        or a CSV column that does not exist fails before anything is written.
    type: list
    elements: dict
    default: []
  gnuplot:
    description: The gnuplot executable (a name on PATH or a path).
    type: str
    default: gnuplot
notes:
  - O(results) and O(side_by_side) are mutually exclusive.
  - Check mode computes the tables and figures and reports whether the files would change, without writing them
    or running gnuplot.
  - A figure is redrawn only when its script or data changed or its PNG is missing (idempotent).
  - Fails before writing anything when a figure spec is wrong or O(figures) is set and gnuplot is missing
    (install the Debian package gnuplot-nox).
"""

EXAMPLES = r"""
- name: Tables of the drop experiment
  xdplab.testbed.experiment_report:
    results: results/paper_drop/trials.jsonl
    title: XDP_DROP by DUT cores
    reference: "{{ playbook_dir }}/reference/drop_vs_cores.csv"
    reference_columns:
      xdp: xdp_drop_pps
  delegate_to: localhost
  register: report

- name: Print it
  ansible.builtin.debug:
    msg: "{{ report.markdown.splitlines() }}"

- name: Two DUTs side by side, one column each
  xdplab.testbed.experiment_report:
    side_by_side:
      dut1: results/paper_drop/dut1/trials.jsonl
      dut2: results/paper_drop/dut2/trials.jsonl
    dest: results/paper_drop
    title: Drop rate, dut1 beside dut2
  delegate_to: localhost

- name: Tables and the paper's figures
  xdplab.testbed.experiment_report:
    results: results/paper_drop/dut/trials.jsonl
    title: Packet drop rate by DUT cores
    reference_dir: "{{ playbook_dir }}/reference"
    figures:
      - name: paper_drop_mpps
        title: Packet drop rate by number of DUT cores (64-byte UDP)
        x: point.cores
        y: result.pps
        y_scale: 1.0e-6
        series: [system, touch]
        xlabel: DUT cores (receive queues)
        ylabel: Drop rate (Mpps)
        logscale: [y]
        reference:
          file: drop_vs_cores.csv
          x: cores
          columns:
            XDP drop: {column: xdp_drop_pps, match: {system: xdp, touch: no_touch}}
            DPDK rxonly: {column: dpdk_rxonly_pps, match: {system: dpdk_vector}}
  delegate_to: localhost
  register: report
"""

RETURN = r"""
rows:
  description:
    - One aggregated row per matrix point.
    - With O(side_by_side), a row holds the point's axes, C(paper_mpps) and C(duts), a mapping of each DUT that
      measured the point to its C(repetitions), C(mpps_mean), C(mpps_stdev), C(offered_mpps) and C(limit).
    - C(offered_mpps) is the mean of each trial's one offered rate (C(loss.offered_pps)); C(offered_basis) says what
      it was counted over, C(window) or C(run) (comma-separated when the repetitions differ).
  returned: always
  type: list
  elements: dict
  sample:
    - system: xdp
      action: drop
      touch: no_touch
      packet_len: 64
      cores: 1
      repetitions: 3
      mpps_mean: 5.912
      mpps_stdev: 0.021
      ns_per_packet: 169.1
      queue_spread: 1.0
      offered_mpps: 6.2
      offered_basis: window
      loss_pct: 4.6
      limit: dut
      lost_at: dut_rx_ring
      count_mode: program
      paper_mpps: 23.86
markdown:
  description: The Markdown table with its notes and provenance.
  returned: always
  type: str
csv:
  description: The CSV text.
  returned: always
  type: str
files:
  description:
    - Paths of the written (or, in check mode, to be written) files, C(report.csv) and C(report.md) first, then
      each figure's PNG, gnuplot script and data files (with O(side_by_side), C(side_by_side.csv) and
      C(side_by_side.md)).
  returned: always
  type: list
  elements: str
figures:
  description: Paths of the figures' PNG files (drawn, or in check mode to be drawn), in the order of O(figures).
  returned: always
  type: list
  elements: str
  sample: [results/paper_drop/dut/paper_drop_mpps.png]
figure_details:
  description: Per figure, its series (legend label, colour, trials, points x/median/min/max/n) and reference lines.
  returned: always
  type: list
  elements: dict
  sample:
    - name: paper_drop_mpps
      title: Packet drop rate by number of DUT cores
      series:
        - {id: xdp/no_touch, label: "XDP, no_touch", colour: "#1f5fbf", trials: 3,
           points: [{x: 1, median: 5.6, min: 5.2, max: 6.0, n: 3}]}
      reference:
        - {label: "paper: XDP drop (E5-1650 v4, ConnectX-5)", column: xdp_drop_pps, matches: xdp/no_touch,
           points: [{x: 1, y: 23.86}]}
skipped_figures:
  description: Names of figures not drawn because no trial record matched them (their filter, x and y).
  returned: always
  type: list
  elements: str
trials:
  description: Number of trial records read (of every DUT, with O(side_by_side)).
  returned: always
  type: int
not_measured:
  description:
    - Trials that ran to their end and were not a rate - forwarding trials whose far side received under 0.1 % of what
      the generator offered, recorded with status failed and C(failure.verdict) - and that no later record measured.
    - They are left out of the table and named in the Markdown's section "Trials that were not a rate".
  returned: without O(side_by_side)
  type: list
  elements: dict
  sample:
    - {trial_id: 3f2a9c, point: {system: xdp_redirect, packet_len: 64, cores: 1}, repetition: 1,
       error: "nothing came back: the generator offered 1702759 pps and the far side received 0 pps ..."}
ratios:
  description:
    - The ratio rows (O(ratios)), C(ratios.csv)'s rows with C(per), a mapping of each C(per) axis to its value.
  returned: always
  type: list
  elements: dict
  sample:
    - {ratio: XDP / Linux, at: cores 1, per: {cores: 1}, ours: 2.8, paper: 3.08, numerator: 2800000.0,
       denominator: 1000000.0, numerator_trials: 3, denominator_trials: 3, paper_numerator: 5356000.0,
       paper_denominator: 1740000.0}
skipped_lines:
  description:
    - Lines of the records file that were not read, each also a warning naming C(file:line) - not valid JSON (for
      example cut by a crash), not a JSON object, or a record of a schema this collection does not read.
    - The file is never changed by the report; such lines stay in it as they are.
  returned: always
  type: int
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.xdplab.testbed.plugins.module_utils import _fib_routes as fib_routes
from ansible_collections.xdplab.testbed.plugins.module_utils import _figures as figs
from ansible_collections.xdplab.testbed.plugins.module_utils import _ratios as ratios
from ansible_collections.xdplab.testbed.plugins.module_utils import _report as report


class ExperimentReport:
    def __init__(self, module):
        self.module = module
        self.p = module.params

    def _reference(self):
        if not self.p["reference"]:
            return {}
        try:
            with open(self.p["reference"]) as f:
                text = f.read()
        except OSError as exc:
            self.module.fail_json(msg="cannot read reference %s: %s" % (self.p["reference"], exc))
        try:
            return report.reference_series(text, self.p["reference_columns"])
        except (KeyError, TypeError, ValueError) as exc:
            self.module.fail_json(msg="reference_columns do not fit %s: %r" % (self.p["reference"], exc))

    def _write(self, path, text):
        try:
            with open(path) as f:
                if f.read() == text:
                    return False
        except FileNotFoundError:
            pass
        if not self.module.check_mode:
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        return True

    def _specs(self):
        """Validated figure specs (before anything is written), and gnuplot's path when there are figures."""
        specs = []
        try:
            for i, spec in enumerate(self.p["figures"]):
                specs.append(figs.validate_spec(spec, i))
        except figs.SpecError as exc:
            self.module.fail_json(msg=str(exc))
        names = [s["name"] for s in specs]
        if len(set(names)) != len(names):
            self.module.fail_json(msg="figure names must be unique (they name the files), got %s" % names)
        gnuplot = None
        if specs:
            gnuplot = self.module.get_bin_path(self.p["gnuplot"])
            if not gnuplot:
                self.module.fail_json(
                    msg="gnuplot (%s) not found on the controller: the figures are drawn with it. Install the Debian "
                    "package gnuplot-nox (apt-get install gnuplot-nox), or leave out the figures option" % self.p["gnuplot"]
                )
        return specs, gnuplot

    def _ratio_specs(self):
        """Validated ratio specs and the text of each one's paper CSV (before anything is written)."""
        specs, texts = [], []
        for i, spec in enumerate(self.p["ratios"]):
            try:
                spec = ratios.validate(spec, i)
            except ratios.RatioError as exc:
                self.module.fail_json(msg=str(exc))
            text = None
            if spec["paper"]:
                path = os.path.join(self._reference_dir(), spec["paper"]["file"])
                try:
                    with open(path) as f:
                        text = f.read()
                    ratios.paper_table(text, spec["paper"], "ratios[%d] (%s)" % (i, spec["name"]))
                except OSError as exc:
                    self.module.fail_json(
                        msg="ratios[%d] (%s): cannot read %s: %s (see reference_dir)" % (i, spec["name"], path, exc)
                    )
                except ratios.RatioError as exc:
                    self.module.fail_json(msg=str(exc))
            specs.append(spec)
            texts.append(text)
        return specs, texts

    def _reference_dir(self):
        if self.p["reference_dir"]:
            return self.p["reference_dir"]
        return os.path.dirname(os.path.abspath(self.p["reference"])) if self.p["reference"] else os.getcwd()

    def _figures(self, records, specs):
        """Figure objects (None where no record matched), reading their reference CSVs."""
        ref_dir = self._reference_dir()
        out = []
        for spec in specs:
            text, testbed = None, (None, None)
            if spec["reference"]:
                path = os.path.join(ref_dir, spec["reference"]["file"])
                try:
                    with open(path) as f:
                        text = f.read()
                except OSError as exc:
                    self.module.fail_json(
                        msg="figure %s: cannot read reference %s: %s (see reference_dir)" % (spec["name"], path, exc)
                    )
                readme = os.path.join(os.path.dirname(path), "README.md")
                if os.path.exists(readme):
                    with open(readme) as f:
                        testbed = figs.paper_testbed(f.read())
                if self.p["reference_label"]:
                    testbed = (self.p["reference_label"], self.p["reference_label"])
            try:
                out.append(figs.build(records, spec, text, testbed))
            except figs.SpecError as exc:
                self.module.fail_json(msg="figure %s: %s" % (spec["name"], exc))
        return out

    def _draw(self, figure, dest, gnuplot):
        """Write the figure's script and data; run gnuplot where they changed or the PNG is missing."""
        changed = False
        for fname, text in figure.files.items():
            changed = self._write(os.path.join(dest, fname), text) or changed
        png = os.path.join(dest, figure.png)
        if not changed and os.path.exists(png):
            return False
        if self.module.check_mode:
            return True
        script = figure.spec["name"] + ".gp"
        rc, out, err = self.module.run_command([gnuplot, script], cwd=dest)
        if rc != 0 or not os.path.exists(png):
            self.module.fail_json(
                msg="gnuplot failed to draw %s (rc %d): %s" % (png, rc, (err or out).strip()[-2000:]),
                cmd="cd %s && %s %s" % (dest, gnuplot, script),
            )
        return True

    def _load(self, path):
        try:
            records, warnings = report.load(path, self.p["link_speed_gbit"])
        except OSError as exc:
            self.module.fail_json(msg="cannot read the trial records %s: %s" % (path, exc))
        for warning in warnings:
            self.module.warn(str(warning))
        return records, warnings

    def run_side_by_side(self):
        if self.p["figures"]:
            self.module.fail_json(msg="figures are drawn by each DUT's own report, not with side_by_side: leave figures out")
        duts = list(self.p["side_by_side"])
        records_by_dut, skipped, provenance = {}, 0, {}
        for dut in duts:
            path = self.p["side_by_side"][dut]
            if not os.path.exists(path):
                self.module.warn("side_by_side: no trial records of %s at %s (it ran no trial); left out" % (dut, path))
                continue
            records, warnings = self._load(path)
            records_by_dut[dut] = records
            provenance[dut] = report.provenance_lines(records)
            skipped += len(warnings)
        shown = [d for d in duts if d in records_by_dut]
        axes, rows = report.side_by_side(records_by_dut, self._reference())
        markdown = report.side_by_side_markdown(axes, rows, shown, self.p["title"], provenance)
        csv_text = report.side_by_side_csv(axes, rows, shown)
        dest = self.p["dest"]
        files, changed = self._write_tables(dest, "side_by_side", csv_text, markdown)
        return dict(
            changed=changed,
            rows=rows,
            markdown=markdown,
            csv=csv_text,
            files=files,
            trials=sum(len(r) for r in records_by_dut.values()),
            skipped_lines=skipped,
            figures=[],
            figure_details=[],
            skipped_figures=[],
            ratios=[],
        )

    def _write_tables(self, dest, stem, csv_text, markdown):
        """<dest>/<stem>.csv and <stem>.md (dest made unless in check mode): ([csv path, md path], changed)."""
        if not self.module.check_mode:
            os.makedirs(dest, exist_ok=True)
        files = [os.path.join(dest, stem + ".csv"), os.path.join(dest, stem + ".md")]
        changed = self._write(files[0], csv_text)
        changed = self._write(files[1], markdown) or changed
        return files, changed

    def run(self):
        if self.p["side_by_side"] is not None:
            if self.p["ratios"]:
                self.module.fail_json(msg="ratios are shown by each DUT's own report, not with side_by_side: leave ratios out")
            return self.run_side_by_side()
        specs, gnuplot = self._specs()
        ratio_specs, ratio_texts = self._ratio_specs()
        try:
            records, warnings = report.load(self.p["results"], self.p["link_speed_gbit"])
        except FileNotFoundError:
            self.module.fail_json(msg="no trial records at %s: run the experiment first" % self.p["results"])
        except OSError as exc:
            self.module.fail_json(msg="cannot read the trial records %s: %s" % (self.p["results"], exc))
        for warning in warnings:
            self.module.warn(str(warning))
        reference = self._reference()
        figures = self._figures(records, specs)
        drawn = [f for f in figures if f is not None]
        skipped = [s["name"] for s, f in zip(specs, figures) if f is None]
        for name in skipped:
            self.module.warn("figure %s: no trial record has its x and y (and matches its filter); not drawn" % name)
        rows = report.aggregate(records, reference)
        markdown = report.to_markdown(
            rows,
            self.p["title"],
            report.provenance_lines(records),
            figs.figures_markdown(drawn, {f.spec["name"]: f.png for f in drawn}, skipped),
        )
        ratio_rows, no_ratio = [], []
        for i, (spec, text) in enumerate(zip(ratio_specs, ratio_texts)):
            rows_of = ratios.ratio_rows(records, spec, text, i)
            ratio_rows += rows_of
            if not rows_of:
                no_ratio.append(spec["name"])
        if ratio_specs:
            markdown = markdown.rstrip("\n") + "\n\n" + ratios.to_markdown(ratio_rows, no_ratio)
        # the routing experiment's route tables and lookups (records with result.details.routing only, issue 27)
        route_tables = fib_routes.routing_markdown(records)
        if route_tables:
            markdown = markdown.rstrip("\n") + "\n\n" + route_tables
        # forwarding trials whose far side got nothing back (failed, with a verdict): named, not a rate (h35v)
        not_measured = report.load_not_measured(self.p["results"])
        if not_measured:
            markdown = markdown.rstrip("\n") + "\n\n" + report.not_measured_markdown(not_measured)
        csv_text = report.to_csv(rows)
        dest = self.p["dest"] or os.path.dirname(os.path.abspath(self.p["results"]))
        files, changed = self._write_tables(dest, "report", csv_text, markdown)
        if ratio_specs:
            files.append(os.path.join(dest, "ratios.csv"))
            changed = self._write(files[-1], ratios.to_csv(ratio_rows)) or changed
        pngs = []
        for figure in drawn:
            changed = self._draw(figure, dest, gnuplot) or changed
            pngs.append(os.path.join(dest, figure.png))
            files += [pngs[-1]] + [os.path.join(dest, n) for n in figure.files]
        return dict(
            changed=changed,
            rows=rows,
            markdown=markdown,
            csv=csv_text,
            files=files,
            trials=len(records),
            not_measured=[
                {"trial_id": r["trial_id"], "point": r["point"], "repetition": r["repetition"], "error": r["failure"]["error"]}
                for r in not_measured
            ],
            skipped_lines=len(warnings),
            figures=pngs,
            figure_details=[f.summary() for f in drawn],
            skipped_figures=skipped,
            ratios=ratio_rows,
        )


def main():
    module = AnsibleModule(
        argument_spec=dict(
            results=dict(type="path"),
            side_by_side=dict(type="dict"),
            dest=dict(type="path"),
            title=dict(type="str", default="Results"),
            reference=dict(type="path"),
            reference_columns=dict(type="dict", default={}),
            figures=dict(type="list", elements="dict", default=[]),
            reference_dir=dict(type="path"),
            reference_label=dict(type="str"),
            link_speed_gbit=dict(type="float"),
            gnuplot=dict(type="str", default="gnuplot"),
            ratios=dict(type="list", elements="dict", default=[]),
        ),
        required_one_of=[("results", "side_by_side")],
        mutually_exclusive=[("results", "side_by_side")],
        required_by={"side_by_side": "dest"},
        supports_check_mode=True,
    )
    module.exit_json(**ExperimentReport(module).run())


if __name__ == "__main__":
    main()
