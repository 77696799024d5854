# Copyright: xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The A/B comparison's plan: two variants as data -> the blocks the experiment runs, in order.

A variant is a mapping of the keys in VARIANT_KEYS: matrix axes of the experiment role (what the point of a
trial is), settings of the system entry (count, simd, or any key under system_settings), a sysctl set, NIC
settings (xdplab.testbed.nic_settings options), generator options (traffic_generator backend_options) and
a kernel (a name of role kernel's kernel_variants: the DUT boots it before each of its blocks). Samples
are interleaved, one per block (A B, B A, A B, ...: counterbalanced); with a kernel variant a block is a boot, of samples_per_boot
samples. Every bad input is refused here, in the read-only first play, before anything changes.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.xdplab.testbed.plugins.filter.experiment import counterbalanced

POINT_KEYS = ("system", "action", "touch", "packet_len", "cores", "offered_mpps")
SYSTEM_KEYS = ("count", "simd", "copy_mode", "mode")
OTHER_KEYS = ("system_settings", "sysctl", "nic", "generator", "kernel", "name")
VARIANT_KEYS = POINT_KEYS + SYSTEM_KEYS + OTHER_KEYS
MIN_SAMPLES = 3


def _variant(label, variant, point, systems):
    if not isinstance(variant, dict) or not variant:
        raise AnsibleFilterError(
            "ab_compare: variant %s must be a non-empty mapping of %s, got %r" % (label, ", ".join(VARIANT_KEYS), variant)
        )
    unknown = sorted(set(variant) - set(VARIANT_KEYS))
    if unknown:
        raise AnsibleFilterError(
            "ab_compare: variant %s has unknown key(s) %s; a variant sets only %s"
            % (label, ", ".join(unknown), ", ".join(VARIANT_KEYS))
        )
    for key in ("system_settings", "sysctl", "nic", "generator"):
        if key in variant and not isinstance(variant[key], dict):
            raise AnsibleFilterError("ab_compare: variant %s: %s must be a mapping, got %r" % (label, key, variant[key]))
    full = dict(point)
    full.update({k: variant[k] for k in POINT_KEYS if k in variant})
    if "system" not in full:
        raise AnsibleFilterError(
            "ab_compare: no system for variant %s: set ab_compare_point.system or the variant's system" % label
        )
    if systems is not None and full["system"] not in systems:
        raise AnsibleFilterError(
            "ab_compare: variant %s: system %r is not in experiment_systems (%s)"
            % (label, full["system"], ", ".join(sorted(systems)))
        )
    settings = dict(variant.get("system_settings") or {})
    settings.update({k: variant[k] for k in SYSTEM_KEYS if k in variant})
    # a variant with its own system settings runs as a system entry of its own (<system>_ab_<label>)
    base_system = full["system"]
    if settings:
        full["system"] = "%s_ab_%s" % (base_system, label)
    if "sysctl" in variant:
        for name, value in variant["sysctl"].items():
            if (
                not isinstance(name, str)
                or not name.replace(".", "").replace("_", "").replace("-", "").replace("/", "").isalnum()
            ):
                raise AnsibleFilterError(
                    "ab_compare: variant %s: %r is not a sysctl name (net.core.busy_poll, ...)" % (label, name)
                )
            if isinstance(value, (dict, list)) or value is None:
                raise AnsibleFilterError("ab_compare: variant %s: sysctl %s needs a scalar value, got %r" % (label, name, value))
    return {
        "label": label,
        "name": str(variant.get("name") or label),
        "point": dict(full, variant=label),
        # the variant's matrix for one block: every axis one value (the block number is added per block)
        "matrix": {k: [v] for k, v in dict(full, variant=label).items()},
        "base_system": base_system,
        "system_settings": settings,
        "sysctl": {k: str(v) for k, v in (variant.get("sysctl") or {}).items()},
        "nic": dict(variant.get("nic") or {}),
        "generator": dict(variant.get("generator") or {}),
        "kernel": variant.get("kernel"),
        "given": dict(variant),
    }


def ab_compare_plan(a, b, point=None, samples=15, samples_per_boot=None, same=False, systems=None):
    """The A/B plan: {variants: {A, B}, blocks: [{variant, block, size}], design, samples, kernel}.

    Refused: an unknown variant key, a system not in experiment_systems, N < 3 (of samples, or of boots
    with a kernel variant), A identical to B unless same (an A/A run) is asked for, different sysctl
    names or NIC keys on the two sides (each block sets its own, so both must name the same), a kernel
    on one side only.
    """
    point = dict(point or {})
    unknown = sorted(set(point) - set(POINT_KEYS))
    if unknown:
        raise AnsibleFilterError(
            "ab_compare: ab_compare_point has unknown axis(es) %s; axes: %s" % (", ".join(unknown), ", ".join(POINT_KEYS))
        )
    va, vb = _variant("A", a, point, systems), _variant("B", b, point, systems)

    def _same_point(v):
        return dict({k: x for k, x in v["point"].items() if k != "variant"}, system=v["base_system"])

    identical = all(va[k] == vb[k] for k in ("system_settings", "sysctl", "nic", "generator", "kernel")) and _same_point(
        va
    ) == _same_point(vb)
    if identical and not same:
        raise AnsibleFilterError(
            "ab_compare: A and B are the same variant (%r) but a difference was asked for: give B what differs, "
            "or set ab_compare_same: true for an A/A run" % (va["given"],)
        )
    if same and not identical:
        raise AnsibleFilterError(
            "ab_compare: ab_compare_same (an A/A run) is set but A and B differ: %r vs %r" % (va["given"], vb["given"])
        )
    for key in ("sysctl", "nic"):
        if set(va[key]) != set(vb[key]):
            raise AnsibleFilterError(
                "ab_compare: A and B must set the same %s keys (each block sets its own): A %s, B %s"
                % (key, sorted(va[key]), sorted(vb[key]))
            )
    if (va["kernel"] is None) != (vb["kernel"] is None):
        raise AnsibleFilterError(
            "ab_compare: a kernel variant needs a kernel on both sides (A %r, B %r)" % (va["kernel"], vb["kernel"])
        )
    try:
        samples = int(samples)
    except (TypeError, ValueError):
        raise AnsibleFilterError("ab_compare: ab_compare_samples must be a whole number, got %r" % (samples,)) from None
    if samples < MIN_SAMPLES:
        raise AnsibleFilterError(
            "ab_compare: N = %d samples per variant; at least %d are needed for an interval" % (samples, MIN_SAMPLES)
        )
    kernel = va["kernel"] is not None
    if kernel:
        try:
            size = int(samples_per_boot)
        except (TypeError, ValueError):
            raise AnsibleFilterError(
                "ab_compare: a kernel variant needs ab_compare_samples_per_boot (a whole number), got %r" % (samples_per_boot,)
            ) from None
        if size < 1 or samples % size:
            raise AnsibleFilterError(
                "ab_compare: ab_compare_samples (%d) must be a multiple of ab_compare_samples_per_boot (%d)" % (samples, size)
            )
        boots = samples // size
        if boots < MIN_SAMPLES:
            raise AnsibleFilterError(
                "ab_compare: %d boot(s) per kernel: the boot is the unit of a kernel comparison and at least %d are needed "
                "(more samples, or fewer per boot)" % (boots, MIN_SAMPLES)
            )
        design = "in blocks of %d samples per boot, %d boots each, interleaved" % (size, boots)
    else:
        size, boots = 1, samples
        design = "interleaved"
    # counterbalanced: A B, B A, A B, ... (the same order as the trials of one run, experiment_trials interleave)
    blocks = counterbalanced([[{"variant": v, "block": i + 1, "size": size} for v in ("A", "B")] for i in range(boots)])
    # only matrix axes and system settings differ: one run of the experiment role, interleaved by repetition
    one_run = not kernel and all(not v[k] for v in (va, vb) for k in ("sysctl", "nic", "generator"))
    return {
        "variants": {"A": va, "B": vb},
        "blocks": blocks,
        "design": design,
        "samples": samples,
        "kernel": kernel,
        "same": bool(same),
        "one_run": one_run,
    }


class FilterModule:
    def filters(self):
        return {"ab_compare_plan": ab_compare_plan}
