# Copyright: (c) 2025, xdplab.testbed developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: netns
short_description: Run tasks inside a Linux network namespace on the controller
description:
  - Executes every task (modules, fact gathering, raw commands) inside a named Linux network
    namespace on the Ansible controller, so a namespace can be used as an inventory host.
  - Commands are wrapped as C(ip netns exec NAME /bin/sh -c 'CMD'). C(ip netns exec) also
    remounts C(/sys) inside a private mount namespace, so C(/sys/class/net) (and therefore
    C(ansible_interfaces) and the other network facts) shows the namespace's own devices.
  - C(/sys/fs/bpf) is not mounted inside that private mount namespace; BPF pins made in the
    root namespace are not visible to tasks run through this connection.
  - Files are transferred exactly like the C(ansible.builtin.local) connection, because the
    namespace shares the controller's filesystem.
  - The namespace must exist (see C(ip netns list)); the virtual lab is created with
    C(ansible-playbook playbooks/vlab.yml).
author:
  - xdplab.testbed developers (!UNKNOWN)
version_added: 0.1.0
extends_documentation_fragment:
  - connection_pipelining
options:
  netns_name:
    description:
      - Name of the network namespace (as listed by C(ip netns list), a file in C(/run/netns)).
      - When not set, the host's address (C(ansible_host), or the inventory hostname) is used.
    type: str
    vars:
      - name: ansible_netns_name
  netns_ip_command:
    description:
      - Path of the iproute2 C(ip) binary used to enter the namespace.
      - When not set, C(ip) is searched in C(PATH), then C(/usr/sbin/ip), C(/sbin/ip), C(/usr/bin/ip), C(/bin/ip).
    type: str
    vars:
      - name: ansible_netns_ip_command
  netns_shell:
    description:
      - Shell started inside the namespace to run the command string.
    type: str
    default: /bin/sh
    vars:
      - name: ansible_netns_shell
  become_success_timeout:
    description:
      - Number of seconds to wait for become to succeed when enabled (as for C(ansible.builtin.local)).
    type: int
    default: 10
    vars:
      - name: ansible_local_become_success_timeout
  become_strip_preamble:
    description:
      - Strip internal become output preceding command execution (as for C(ansible.builtin.local)).
    type: bool
    default: true
    vars:
      - name: ansible_local_become_strip_preamble
notes:
  - Must run as root on the controller (entering a network namespace and remounting C(/sys)
    needs C(CAP_SYS_ADMIN)); C(become) on the task applies inside the namespace, not to C(ip netns exec).
  - Set C(ansible_python_interpreter) to C({{ ansible_playbook_python }}) to reuse the
    controller's Python (and its libraries such as netaddr) inside the namespace.
"""

EXAMPLES = r"""
# inventory (YAML)
# vlab:
#   vars:
#     ansible_connection: xdplab.testbed.netns
#     ansible_python_interpreter: "{{ ansible_playbook_python }}"
#   hosts:
#     dut:
#       ansible_host: xdplab-dut          # the namespace name
#     tg:
#       ansible_host: any-host-name
#       ansible_netns_name: xdplab-tg     # overrides ansible_host

# ad hoc:
# ansible -i 'xdplab-dut,' -c xdplab.testbed.netns all -m ansible.builtin.command -a 'ip -j link'
"""

import os
import re
import shlex
import shutil

import ansible.constants as C
from ansible.errors import AnsibleConnectionFailure
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.connection.local import Connection as LocalConnection
from ansible.utils.display import Display

display = Display()

NETNS_RUN_DIR = "/run/netns"
IP_CANDIDATES = ("/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip")
# what `ip netns add` accepts: a file name in /run/netns (no slash, not . or ..)
_NAME_RE = re.compile(r"^[A-Za-z0-9_.:@+-]{1,255}$")
CREATE_HINT = "create the virtual lab first: ansible-playbook playbooks/vlab.yml"


def list_namespaces(run_dir=NETNS_RUN_DIR):
    """Names of the named network namespaces (what `ip netns list` shows)."""
    try:
        return sorted(os.listdir(run_dir))
    except FileNotFoundError:
        return []


def check_namespace(name, run_dir=NETNS_RUN_DIR, euid=None):
    """Raise AnsibleConnectionFailure unless NAME is a usable namespace for the current user."""
    if euid is None:
        euid = os.geteuid()
    if euid != 0:
        raise AnsibleConnectionFailure(
            "the xdplab.testbed.netns connection must run as root on the controller "
            f"(euid is {euid}): entering network namespace '{name}' needs CAP_SYS_ADMIN; "
            "run ansible-playbook as root (e.g. with sudo)"
        )
    if not name or not _NAME_RE.match(name) or name in (".", ".."):
        raise AnsibleConnectionFailure(
            f"invalid network namespace name {name!r}: set ansible_host or ansible_netns_name "
            "to a name shown by `ip netns list`"
        )
    if not os.path.exists(os.path.join(run_dir, name)):
        existing = list_namespaces(run_dir)
        shown = ", ".join(existing) if existing else "none"
        raise AnsibleConnectionFailure(
            f"network namespace '{name}' does not exist; {CREATE_HINT} (existing namespaces: {shown})"
        )


def find_ip_command(configured=None):
    if configured:
        return configured
    found = shutil.which("ip")
    if found:
        return found
    for candidate in IP_CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    raise AnsibleConnectionFailure(
        "the iproute2 'ip' command was not found on the controller; install iproute2 "
        "(apt-get install iproute2) or set ansible_netns_ip_command"
    )


def wrap_command(cmd, name, ip_cmd="ip", shell="/bin/sh"):
    """Return the command string that runs CMD (a shell string) inside namespace NAME."""
    if isinstance(cmd, (list, tuple)):
        cmd = " ".join(shlex.quote(to_text(part)) for part in cmd)
    cmd = to_text(cmd)
    return " ".join(
        [shlex.quote(ip_cmd), "netns", "exec", shlex.quote(name), shlex.quote(shell), "-c", shlex.quote(cmd)]
    )


class Connection(LocalConnection):
    """Local connection whose commands run inside a network namespace."""

    transport = "xdplab.testbed.netns"
    has_pipelining = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._netns_checked = None

    @property
    def netns_name(self):
        name = None
        try:
            name = self.get_option("netns_name")
        except KeyError:
            name = None
        if not name:
            name = self._play_context.remote_addr
        return to_text(name) if name else name

    def _connect(self):
        name = self.netns_name
        if self._netns_checked != name:
            check_namespace(name)
            self._netns_checked = name
        if not self._connected:
            display.vvv(f"ESTABLISH NETNS CONNECTION INTO {name}", host=name)
        return super()._connect()

    def exec_command(self, cmd, in_data=None, sudoable=True):
        self._connect()
        name = self.netns_name
        ip_cmd = find_ip_command(self.get_option("netns_ip_command"))
        shell = self.get_option("netns_shell") or (C.DEFAULT_EXECUTABLE or "/bin/sh").split()[0]
        wrapped = wrap_command(cmd, name, ip_cmd=ip_cmd, shell=shell)
        display.vvv(f"NETNS {name}", host=name)
        rc, stdout, stderr = super().exec_command(wrapped, in_data=in_data, sudoable=sudoable)
        if rc != 0 and not os.path.exists(os.path.join(NETNS_RUN_DIR, name)):
            # the namespace vanished between tasks (e.g. the lab was torn down)
            raise AnsibleConnectionFailure(f"network namespace '{name}' does not exist any more; {CREATE_HINT}")
        return rc, stdout, stderr

    def put_file(self, in_path, out_path):
        # same filesystem: copy exactly like the local connection
        self._connect()
        super().put_file(in_path, out_path)

    def fetch_file(self, in_path, out_path):
        self._connect()
        super().fetch_file(in_path, out_path)

    def reset(self):
        self._netns_checked = None

    def close(self):
        self._netns_checked = None
        super().close()
