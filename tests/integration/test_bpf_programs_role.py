"""Role xdplab.testbed.bpf_programs run for real, its directories in tmp_path.

Check mode on a target where nothing was ever built, and the users' programs (bpf_programs_custom, issue 26):
the example builds and installs, a second run changes nothing, a source that does not compile and a program
not in the object fail naming what the user gave, a prebuilt object is installed as it is.

A first `--check` run against a new host is what a careful user does first; it used to fail at
`make -q -C <build dir>` because check mode does not make the build directory. The role's
directories point into tmp_path, so nothing outside it changes, and check mode must create nothing.
"""

import hashlib
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")

# no_traffic: make test runs this file beside molecule's scenarios (pyproject.toml)
pytestmark = [pytest.mark.root, pytest.mark.no_traffic]

PLAY = """---
- name: Throwaway play for the bpf_programs role
  hosts: localhost
  connection: local
  gather_facts: true
  roles:
    - role: xdplab.testbed.bpf_programs
  post_tasks:
    - name: Hand the published fact to the test
      ansible.builtin.copy:
        content: "{{ bpf_programs_installed | to_json }}"
        dest: "{{ fact_file }}"
        mode: "0644"
      check_mode: false
"""


def test_check_mode_on_a_target_never_built_plans_the_build_and_creates_nothing(tmp_path):
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    build, prefix = tmp_path / "build", tmp_path / "prefix"
    extra = {
        "bpf_programs_build_dir": str(build),
        "bpf_programs_prefix": str(prefix),
        "bpf_programs_install_packages": False,
        "ansible_python_interpreter": sys.executable,
        "fact_file": str(tmp_path / "installed.json"),
    }
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    done = subprocess.run(
        [PLAYBOOK, "-i", "localhost,", "--check", "-e", json.dumps(extra), str(play)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    # the yaml callback folds long messages: compare with whitespace collapsed
    assert f"would build {build} and install to {prefix}" in " ".join(done.stdout.split()), done.stdout[-4000:]
    # nothing was built, so the published fact says every file is missing
    installed = json.loads((tmp_path / "installed.json").read_text())
    assert installed["trafficgen"]["exists"] is False and not any(o["exists"] for o in installed["objects"].values())
    assert not build.exists() and not prefix.exists(), "check mode must create nothing"


EXAMPLE = os.path.join(ROOT, "examples", "xdp_udp_port_filter.bpf.c")
with open(EXAMPLE, "rb") as _fh:
    EXAMPLE_BYTES = _fh.read()

CUSTOM_PLAY = """---
- name: Throwaway play for the bpf_programs role's custom programs
  hosts: localhost
  connection: local
  gather_facts: false
  roles:
    - role: xdplab.testbed.bpf_programs
  post_tasks:
    - name: Hand the published fact to the test
      ansible.builtin.copy:
        content: "{{ bpf_programs_custom_installed | to_json }}"
        dest: "{{ fact_file }}"
        mode: "0644"
      check_mode: false
      changed_when: false
"""


def run_role(tmp, custom, *args, check=False):
    """Run the role with bpf_programs_custom (its build and prefix directories shared by the module's tests)."""
    play = tmp / "custom_play.yml"
    play.write_text(CUSTOM_PLAY)
    extra = {
        "bpf_programs_build_dir": str(tmp / "build"),
        "bpf_programs_prefix": str(tmp / "prefix"),
        "bpf_programs_install_packages": False,
        "bpf_programs_custom": custom,
        "ansible_python_interpreter": sys.executable,
        "fact_file": str(tmp / "custom_installed.json"),
    }
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    done = subprocess.run(
        [PLAYBOOK, "-i", "localhost,", "-e", json.dumps(extra), *args, str(play)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if check:
        assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    return done


def changed_count(stdout):
    match = re.search(r"^localhost\s*:.*?changed=(\d+)", stdout, re.M)
    assert match, stdout[-3000:]
    return int(match.group(1))


def sha256(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The whole role run once with the example and a prebuilt object, then once more; the tree both built."""
    tmp = tmp_path_factory.mktemp("bpf_custom")
    prebuilt = tmp / "pre" / "xdp_bare_drop.bpf.o"
    make = subprocess.run(
        ["make", "-C", os.path.join(ROOT, "bpf"), f"BUILD={tmp / 'pre'}", str(prebuilt)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert make.returncode == 0, make.stdout + make.stderr
    custom = [
        {"name": "udp_port_filter", "source": EXAMPLE, "program": "xdp_udp_port_filter"},
        {"name": "bare", "object": str(prebuilt), "program": "xdp_bare_drop"},
    ]
    first = run_role(tmp, custom, check=True)
    installed = json.loads((tmp / "custom_installed.json").read_text())
    second = run_role(tmp, custom, check=True)
    return {"tmp": tmp, "custom": custom, "prebuilt": prebuilt, "first": first, "second": second, "installed": installed}


def test_the_example_builds_installs_and_a_second_run_changes_nothing(built):
    tmp, installed = built["tmp"], built["installed"]
    obj = tmp / "prefix" / "lib" / "bpf" / "custom" / "udp_port_filter.bpf.o"
    assert obj.is_file()
    entry = installed["udp_port_filter"]
    assert entry["object"] == str(obj) and entry["built"] is True and entry["source"] == EXAMPLE
    assert entry["source_sha256"] == sha256(EXAMPLE) and entry["object_sha256"] == sha256(obj)
    assert entry["programs"] == [{"name": "xdp_udp_port_filter", "section": "xdp", "type": "xdp"}]
    assert (tmp / "build" / "custom" / "udp_port_filter.bpf.c").read_bytes() == EXAMPLE_BYTES
    assert changed_count(built["first"].stdout) > 0
    assert changed_count(built["second"].stdout) == 0, built["second"].stdout[-6000:]


def test_a_prebuilt_object_is_installed_as_it_is(built):
    obj = built["tmp"] / "prefix" / "lib" / "bpf" / "custom" / "bare.bpf.o"
    entry = built["installed"]["bare"]
    assert obj.read_bytes() == built["prebuilt"].read_bytes()
    assert entry["built"] is False and entry["source"] == str(built["prebuilt"])
    assert entry["source_sha256"] == entry["object_sha256"] == sha256(obj)
    assert [p["name"] for p in entry["programs"]] == ["xdp_bare_drop"]


def test_check_mode_plans_a_changed_source_and_changes_nothing(built, tmp_path):
    source = tmp_path / "filter.bpf.c"
    source.write_text(EXAMPLE_BYTES.decode().replace("port_last = 75", "port_last = 76"))
    done = run_role(built["tmp"], [{"name": "udp_port_filter", "source": str(source), "program": "xdp_udp_port_filter"}],
                    "--check", "--tags", "bpf_programs_custom", check=True)  # fmt: skip
    assert "would build or copy the custom programs udp_port_filter" in " ".join(done.stdout.split()), done.stdout[-4000:]
    copied = built["tmp"] / "build" / "custom" / "udp_port_filter.bpf.c"
    assert copied.read_bytes() == EXAMPLE_BYTES, "check mode must change nothing"


def test_a_source_that_does_not_compile_fails_with_the_compiler_and_the_users_file(built, tmp_path):
    source = tmp_path / "broken_filter.bpf.c"
    source.write_text(EXAMPLE_BYTES.decode().replace("return XDP_PASS;\n}", "return XDP_PASS\n}"))
    done = run_role(built["tmp"], [{"name": "broken", "source": str(source), "program": "xdp_udp_port_filter"}],
                    "--tags", "bpf_programs_custom")  # fmt: skip
    out = " ".join(done.stdout.split())
    assert done.returncode != 0, done.stdout[-4000:]
    assert f"custom program broken: {source} does not compile" in out, done.stdout[-4000:]
    assert f"{source}:" in out and "error: expected ';'" in out, done.stdout[-4000:]
    assert not (built["tmp"] / "prefix" / "lib" / "bpf" / "custom" / "broken.bpf.o").exists()


def test_a_program_not_in_the_object_fails_naming_those_that_are(built):
    done = run_role(built["tmp"], [{"name": "udp_port_filter", "source": EXAMPLE, "program": "xdp_no_such"}],
                    "--tags", "bpf_programs_custom")  # fmt: skip
    out = " ".join(done.stdout.split())
    assert done.returncode != 0, done.stdout[-4000:]
    assert f"custom program udp_port_filter ({EXAMPLE}): program xdp_no_such is not in" in out, done.stdout[-4000:]
    assert "programs in the object: xdp_udp_port_filter" in out, done.stdout[-4000:]


def test_a_missing_file_and_a_relative_path_fail_in_preflight(built, tmp_path):
    done = run_role(built["tmp"], [{"name": "gone", "source": str(tmp_path / "gone.bpf.c"), "program": "xdp_x"}],
                    "--tags", "bpf_programs_custom")  # fmt: skip
    assert done.returncode != 0 and f"no such file on the controller: gone: {tmp_path}/gone.bpf.c" in done.stdout
    done = run_role(built["tmp"], [{"name": "rel", "source": "examples/x.bpf.c", "program": "xdp_x"}],
                    "--tags", "bpf_programs_custom")  # fmt: skip
    assert done.returncode != 0 and "examples/x.bpf.c is not an absolute path" in " ".join(done.stdout.split())


def frame(dport, proto=17, vlan=False, frag=0):
    """An Ethernet + IPv4 (+ UDP) frame to dport, optionally 802.1Q-tagged or a non-first fragment."""
    eth = b"\x02" * 6 + b"\x04" * 6 + ((b"\x81\x00" + b"\x00\x05") if vlan else b"") + b"\x08\x00"
    ip = bytes([0x45, 0, 0, 46, 0, 0]) + frag.to_bytes(2, "big") + bytes([64, proto, 0, 0]) + bytes([10, 0, 0, 1, 10, 0, 0, 2])
    return eth + ip + (1024).to_bytes(2, "big") + dport.to_bytes(2, "big") + (26).to_bytes(2, "big") + b"\0\0" + b"x" * 18


def test_the_installed_example_drops_udp_to_the_port_range_and_passes_the_rest(built):
    """BPF_PROG_RUN of the object the role installed: nothing is attached anywhere."""
    from ansible_collections.xdplab.testbed.plugins.module_utils import _libbpf as libbpf

    xdp_drop, xdp_pass = 1, 2
    with libbpf.BpfObject(built["installed"]["udp_port_filter"]["object"]) as obj:
        prog = obj.only_load("xdp_udp_port_filter")
        obj.load()
        fd = obj.program_fd(prog)
        cases = {
            "port 12": (frame(12), xdp_drop),
            "port 75": (frame(75), xdp_drop),
            "port 76": (frame(76), xdp_pass),
            "port 11": (frame(11), xdp_pass),
            "VLAN, port 40": (frame(40, vlan=True), xdp_drop),
            "TCP to port 40": (frame(40, proto=6), xdp_pass),
            "a later fragment": (frame(40, frag=10), xdp_pass),
            "a runt": (frame(40)[:30], xdp_pass),
        }
        got = {what: libbpf.test_run(fd, data)[0] for what, (data, _want) in cases.items()}
    assert got == {what: want for what, (_data, want) in cases.items()}
