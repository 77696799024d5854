# xdplab.testbed: two commands on a fresh Debian 12 machine, as root.
#   make paper-drop   the XDP_DROP experiment on the virtual lab, then its table
#   make test         every test (lint, unit, kernel integration, molecule)
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
INVENTORY ?= inventories/vlab
ARGS ?=
ANSIBLE_PLAYBOOK := $(VENV)/bin/ansible-playbook
comma := ,
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# where experiments write their records and reports (playbooks/group_vars/all reads it)
export XDPLAB_RESULTS_DIR ?= $(CURDIR)/results

.PHONY: report vm-lab vm-lab-up vm-lab-down test-vm-lab test-kernel-nobtf paper-drop paper-drop-cpu paper-forward paper-latency paper-routing paper-ddos afxdp xdp-pass-tcp site test lint sanity unit integration molecule bench testbed-down system-deps clean help

help:
	@echo "make paper-drop   the drop experiment (XDP, DPDK, AF_XDP, Linux) on the virtual lab (ARGS='-e ...' to override)"
	@echo "make paper-drop-cpu  DUT CPU usage by offered load"
	@echo "make paper-forward  forwarding by cores (paper_forward_systems in playbooks/vars/paper_forward.yml: XDP_TX, XDP_REDIRECT devmap, Linux routing, DPDK testpmd mac, AF_XDP l2fwd), counted where frames return"
	@echo "make paper-latency  latency at 100 pps and 1 Mpps (in-band stamps), the floor beside the systems, CDF"
	@echo "make paper-routing  routing (issue 27): XDP router (bpf_fib_lookup) vs Linux, one route vs a full BGP table, by cores and destinations"
	@echo "make paper-ddos     TCP_RR trans/s under a UDP flood by attack rate: no XDP, the XDP filter (cpumap), xdp-filter, control"
	@echo "make afxdp        the AF_XDP RFC table (seeds/001): rxdrop/txpush/l2fwd x XDP_SKB/XDP_DRV x 64/1500 B"
	@echo "make xdp-pass-tcp what XDP_PASS costs TCP (seeds/002): iperf3 into the DUT, CPU per Gbit/s by program"
	@echo "make site         build the testbed from bare machines (INVENTORY=inventories/lab)"
	@echo "make test         lint + unit + integration + molecule"
	@echo "make report       every table, figure and HTML page of docs/results from its records (REPORT_ROOT=results: yours)"
	@echo "make bench        every script in benchmarks/ to the end, outputs and summary in results/bench/ (exit 1 only when one failed)"
	@echo "make testbed-down stop generators, detach programs, remove the virtual lab"
	@echo "make vm-lab       the VM lab end to end: up, testbed_up, a small paper_drop and paper_forward, both tables, down (TCG: functional)"
	@echo "make vm-lab-up    two qemu VMs (tg, dut) reached over SSH, inventories/vm (docs/VM_LAB.md); make vm-lab-down removes them"
	@echo "make paper-lb     the load balancer (issue 27): xdp_lb (Katran-like, IPIP, XDP_TX) vs IPVS (sh, tunnel) by cores, IPIP packets counted at the generator"

# -- environment -----------------------------------------------------------------------------
$(VENV)/bin/activate:
	@$(PYTHON) -m venv --help >/dev/null 2>&1 && $(PYTHON) -c 'import ensurepip' 2>/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv; }
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip

$(VENV)/.run-deps: requirements.txt | $(VENV)/bin/activate
	$(VENV)/bin/pip install -q -r requirements.txt
	touch $@

$(VENV)/.test-deps: requirements-test.txt requirements.txt | $(VENV)/bin/activate
	$(VENV)/bin/pip install -q -r requirements-test.txt
	touch $@ $(VENV)/.run-deps

# -- the experiments -----------------------------------------------------------------------------
# Each target runs one playbook, then prints its report. The playbook installs the system packages (role
# vlab), builds bpf/ (role bpf_programs), runs the matrix and writes the report. Whatever the exit (error,
# Ctrl-C), testbed_down.yml leaves the machine as found; finished trials stay in results/ and a re-run resumes.
# $(call experiment,<playbook>,<report file>,<what else to point at, after the report's path>)
define experiment
	@trap '$(ANSIBLE_PLAYBOOK) -i $(INVENTORY) playbooks/testbed_down.yml >/dev/null 2>&1 || true' EXIT; \
	$(ANSIBLE_PLAYBOOK) -i $(INVENTORY) playbooks/$(1).yml $(ARGS)
	@echo; for f in $(XDPLAB_RESULTS_DIR)/$(1)/*/$(2); do cat "$$f"; echo; echo "($$f$(3))"; done
endef

# the main experiment: drop rate by DUT cores
paper-drop: $(VENV)/.run-deps
	$(call experiment,paper_drop,report.md,$(comma) records in $$(dirname $$f)/trials.jsonl)

# the CPU-usage experiment (DUT CPU busy % by offered load)
paper-drop-cpu: $(VENV)/.run-deps
	$(call experiment,paper_drop_cpu,report.md,)

# the forwarding experiment (issue 9): forwarded Mpps by cores, counted at the generator's receive port
paper-forward: $(VENV)/.run-deps
	$(call experiment,paper_forward,report.md,$(comma) figure paper_forward_mpps.png beside it)

# the DoS experiment (issue 27): TCP_RR trans/s under a UDP flood, without XDP, with the XDP filter, xdp-filter, control
paper-ddos: $(VENV)/.run-deps
	$(call experiment,paper_ddos,ddos.md,$(comma) figure paper_ddos_tcp_rr.png and report.md beside it)

# the latency experiment (issue 9): percentiles per system and load beside the paper's table, the floor, the CDF
paper-latency: $(VENV)/.run-deps
	$(call experiment,paper_latency,latency.md,$(comma) figure latency_cdf.png beside it)

# the routing experiment (issue 27): XDP router vs Linux, single route vs the full BGP table, by cores; destinations sweep
paper-routing: $(VENV)/.run-deps
	$(call experiment,paper_routing,report.md,$(comma) figures paper_routing_mpps.png and paper_routing_destinations.png beside it)
# the load-balancer experiment (issue 27, item 3): xdp_lb vs IPVS by cores, one VIP per core, counted at the generator;
# the ratio XDP/IPVS beside the paper's (where the DUT's kernel lacks IPVS the report says so and xdp_lb runs alone)
.PHONY: paper-lb
paper-lb: $(VENV)/.run-deps
	$(call experiment,paper_lb,report.md,$(comma) figure paper_lb_mpps.png beside it)

# the seeds' own experiments (issue 10): the AF_XDP table beside seeds/001's, and the cost of XDP_PASS on TCP
# (seeds/002: headline with its 95 % CI, the seed's verdict row, CPU per Gbit/s figure)
afxdp: $(VENV)/.run-deps
	$(call experiment,afxdp,afxdp_report.md,)

xdp-pass-tcp: $(VENV)/.run-deps
	$(call experiment,xdp_pass_tcp,tcp_report.md,$(comma) figure tcp_cpu_per_gbit.png beside it)

# every table, figure and HTML page of a results tree from its trial records (issue 29): docs/results by default,
# REPORT_ROOT=results for your own; docs/results/index.html is the report, test_results_report.py checks it is current
REPORT_ROOT ?= docs/results
report: $(VENV)/.run-deps
	@command -v gnuplot >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=900 gnuplot-nox >/dev/null
	$(ANSIBLE_PLAYBOOK) -i $(INVENTORY) playbooks/report.yml -e results_report_root=$(abspath $(REPORT_ROOT)) $(ARGS)
	@echo "$(abspath $(REPORT_ROOT))/index.html"

# build the testbed (kernel, T-Rex, tuning, bpf/, DPDK) and check it: INVENTORY=inventories/lab
site: $(VENV)/.run-deps
	$(ANSIBLE_PLAYBOOK) -i $(INVENTORY) playbooks/site.yml $(ARGS)

testbed-down: $(VENV)/.run-deps
	$(ANSIBLE_PLAYBOOK) -i $(INVENTORY) playbooks/testbed_down.yml

# the lab of two qemu VMs (role vm_lab, inventories/vm; docs/VM_LAB.md): up builds or reuses the cached Debian image
# and boots tg and dut (TCG unless -e vm_lab_accel=auto proves KVM), down leaves nothing but the image cache
vm-lab-up: $(VENV)/.run-deps
	$(ANSIBLE_PLAYBOOK) -i inventories/vm playbooks/vm_lab.yml $(ARGS)

vm-lab-down: $(VENV)/.run-deps
	$(ANSIBLE_PLAYBOOK) -i inventories/vm playbooks/vm_lab.yml -e vm_lab_state=absent $(ARGS)

# The whole VM lab (issue 25, docs/VM_LAB.md): up, testbed_up, a small paper_drop and paper_forward on the DUT VM over
# SSH, both tables, and down: always, also when a step fails or on Ctrl-C (the exit code is the first failure's).
# Under TCG these are functional checks, not performance. Results in $(VM_LAB_RESULTS)/<start, UTC>/.
VM_LAB_RESULTS ?= $(XDPLAB_RESULTS_DIR)/vm-lab
# one core, 64 B, one repetition, a 3-sample window; every drop system the guest has (xdplab_drop_systems of
# inventories/vm), the two XDP forwarding systems (XDP_TX back out of ens4, XDP_REDIRECT from ens4 to ens5) and the
# load balancer against IPVS (issue 27: the DUT VM's Debian kernel has IPVS, the controller's may not)
VM_LAB_MATRIX ?= {"paper_drop_cores": [1], "paper_drop_packet_len": [64], "paper_drop_touch": ["no_touch"], \
  "paper_drop_repetitions": 1, "paper_forward_cores": [1], "paper_forward_packet_len": [64], \
  "paper_forward_repetitions": 1, "xdplab_forward_systems": ["xdp_tx", "xdp_redirect"], \
  "paper_lb_cores": [1], "paper_lb_repetitions": 1, "xdplab_lb_systems": ["xdp_lb", "ipvs"], \
  "experiment_warmup": 2, "experiment_samples": 3}
VM_LAB_PLAY = $(ANSIBLE_PLAYBOOK) -i inventories/vm
# the experiments import testbed_up.yml, which the step before them ran: its tuning, bpf/ and the controller's packages
# are skipped there (a converged pass over SSH to a TCG guest still takes minutes)
VM_LAB_SKIP := tuning,bpf_programs,controller
vm-lab: $(VENV)/.run-deps
	@set -o pipefail; out=$(VM_LAB_RESULTS)/$$(date -u +%Y%m%dT%H%MZ); mkdir -p $$out; \
	echo "make vm-lab: two qemu VMs (tg, dut) over SSH; a small matrix (1 core, 64 B, 1 repetition, 3 samples);"; \
	echo "  under TCG (no nested KVM) every figure is a functional check, not performance. Logs and records: $$out"; \
	step() { local t=$$SECONDS name=$$1; shift; echo "== $$name: $$*"; \
	  if "$$@" > $$out/$$name.log 2>&1; then echo "   $$name ok in $$((SECONDS - t)) s ($$(grep -A3 '^PLAY RECAP' $$out/$$name.log | grep -o 'dut .*' | tr -s ' '))" | tee -a $$out/times.txt; \
	  else rc=$$?; echo "   $$name FAILED (rc $$rc) after $$((SECONDS - t)) s; the end of $$out/$$name.log:" | tee -a $$out/times.txt; tail -40 $$out/$$name.log; return $$rc; fi; }; \
	down() { rc=$$?; trap - EXIT INT TERM; step vm-lab-down $(VM_LAB_PLAY) playbooks/vm_lab.yml -e vm_lab_state=absent || rc=$${rc/#0/1}; \
	  echo "make vm-lab: total $$SECONDS s, exit $$rc (times: $$out/times.txt)"; exit $$rc; }; \
	trap down EXIT; trap 'exit 130' INT TERM; \
	step vm-lab-up $(VM_LAB_PLAY) playbooks/vm_lab.yml $(ARGS) && \
	cat /var/lib/xdplab/vm_lab/labs/vm/accelerator > $$out/accelerator && \
	echo "   accelerator: $$(cat $$out/accelerator)" | tee -a $$out/times.txt && \
	step testbed_up $(VM_LAB_PLAY) playbooks/testbed_up.yml $(ARGS) && \
	step paper_drop env XDPLAB_RESULTS_DIR=$$out $(VM_LAB_PLAY) playbooks/paper_drop.yml -e '$(VM_LAB_MATRIX)' \
	  --skip-tags $(VM_LAB_SKIP) $(ARGS) && \
	step paper_forward env XDPLAB_RESULTS_DIR=$$out $(VM_LAB_PLAY) playbooks/paper_forward.yml -e '$(VM_LAB_MATRIX)' \
	  --skip-tags $(VM_LAB_SKIP) $(ARGS) && \
	step paper_lb env XDPLAB_RESULTS_DIR=$$out $(VM_LAB_PLAY) playbooks/paper_lb.yml -e '$(VM_LAB_MATRIX)' \
	  --skip-tags $(VM_LAB_SKIP) $(ARGS) && \
	for f in $$out/paper_drop/dut/report.md $$out/paper_forward/dut/report.md $$out/paper_lb/dut/report.md; do \
	  echo; cat $$f; echo "($$f)"; done

# the VM lab's tests. make test runs one of them (test_vm_lab_up_ssh_tuning_reboot_paper_drop_and_down: up with a cold
# image, SSH with become, host tuning's GRUB edit and reboot, the drift check, a paper_drop of xdp and dpdk_vector over
# SSH, down); this target runs them all, the gated ones too: every drop system on the DUT VM (about 30 min under TCG)
# and the kernel role's install and reboot (10-15 min, plus about 50 min for the kernel's first build on the
# controller, cached after in /var/cache/xdplab/kernel-vm)
test-vm-lab: $(VENV)/.test-deps
	XDPLAB_VM_LAB=1 $(VENV)/bin/pytest -q -s tests/integration/test_vm_lab.py

# -- tests ---------------------------------------------------------------------------------------
# System packages the tests need (clang, bpftool, libbpf, ethtool, ...), installed by the
# role vlab's install phase, then bpf/ built in the tree.
# Test-only Debian packages: python3-scapy (the T-Rex profiles build frames with it; T-Rex ships
# its own), linux-source-6.1 + busybox-static + qemu-system-x86 + cpio (the kernel role's tests
# build Debian's kernel source and boot it; molecule/kernel installs them too), gnuplot-nox + chromium (make report's
# figures, and the HTML report opened in a headless browser: tests/integration/test_results_report.py).
TEST_PACKAGES := python3-scapy linux-source-6.1 busybox-static qemu-system-x86 cpio gnuplot-nox chromium
system-deps: $(VENV)/.test-deps
	$(ANSIBLE_PLAYBOOK) -i $(INVENTORY) playbooks/vlab.yml --tags vlab_preflight,vlab_install
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=900 $(TEST_PACKAGES) >/dev/null
	$(MAKE) -C bpf

# lint: the syntax check of every playbook, one ansible-playbook per inventory (one start instead of one per
# playbook; it stops at, and names, the first playbook that does not parse)
SYNTAX_PLAYBOOKS := paper_drop paper_drop_cpu paper_forward paper_latency paper_ddos afxdp xdp_pass_tcp ab_compare ndr_pdr site drift_check testbed_up testbed_down vm_lab
# issue 27
SYNTAX_PLAYBOOKS += paper_lb paper_routing
lint: $(VENV)/.test-deps
	$(VENV)/bin/yamllint --strict .
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ansible-lint --offline
	for i in lab vlab; do $(ANSIBLE_PLAYBOOK) -i inventories/$$i --syntax-check \
	  $(patsubst %,playbooks/%.yml,$(SYNTAX_PLAYBOOKS)) >/dev/null || exit 1; done

# ansible-test sanity of the collection (as ansible-galaxy would ship it), from PyPI alone: tests/sanity/run.py says how.
# shellcheck (Debian) is the one tool it needs besides the venv.
sanity: $(VENV)/.run-deps
	@command -v shellcheck >/dev/null || { export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -qq -o DPkg::Lock::Timeout=900 shellcheck >/dev/null 2>&1 || \
	  { apt-get update -qq && apt-get install -y -qq -o DPkg::Lock::Timeout=900 shellcheck >/dev/null; }; }
	$(VENV)/bin/python tests/sanity/run.py --python 3.11

unit: $(VENV)/.test-deps
	$(VENV)/bin/pytest -q tests/unit

integration: system-deps
	$(VENV)/bin/pytest -q -m root tests/integration

# the DUT program on Debian's 6.1 built without BTF, booted in qemu (issue 10): builds that kernel once
# (15-35 min on 2 CPUs, kept in /var/lib/xdplab/kernel-nobtf); make test runs the test only where it is built
test-kernel-nobtf: system-deps
	XDPLAB_BUILD_NOBTF_KERNEL=1 $(VENV)/bin/pytest -q tests/integration/test_kernel_nobtf.py

# molecule's scenarios in two streams side by side, each one scenario after another (their names, paths and
# namespaces are their own): the builds (kernel: two bindeb-pkg, dpdk: meson/ninja, both through ccache and on both
# CPUs) beside the scenarios that are Ansible's time (trex, tuning, vlab, vm_lab: one CPU at most; vm_lab's two TCG
# guests busy while they boot, idle once up); then default alone, since it measures a paper_drop on its lab
MOLECULE_BUILDS := kernel dpdk
MOLECULE_PLAYS := trex tuning vlab vm_lab
.PHONY: molecule-builds molecule-plays test-no-traffic test-beside-builds
molecule-builds molecule-plays: $(VENV)/.test-deps
	for s in $(if $(filter molecule-builds,$@),$(MOLECULE_BUILDS),$(MOLECULE_PLAYS)); do \
	  $(VENV)/bin/molecule test -s $$s || exit 1; done

molecule: system-deps
	$(MAKE) --no-print-directory --output-sync=target -j2 molecule-builds molecule-plays
	$(VENV)/bin/molecule test -s default

# the test files marked no_traffic (pyproject.toml: no traffic, no measurement, no name of the lab or of a molecule
# scenario): what make test runs beside molecule's scenarios
test-no-traffic: $(VENV)/.test-deps
	$(VENV)/bin/pytest -q --durations=20 -m no_traffic tests

# make test's second half: the scenarios that are Ansible's time, then the no_traffic tests, beside the builds
test-beside-builds: $(VENV)/.test-deps
	$(MAKE) --no-print-directory molecule-plays
	$(MAKE) --no-print-directory test-no-traffic

# lint and sanity read the tree and use one CPU each: side by side (--output-sync keeps each one's output whole),
# after the venv is complete (both install into it); ~50 s less here (lint 55 s, sanity 64 s alone). Then every
# test but the no_traffic ones alone on the machine (the unit tests, and those that send traffic or use the virtual
# lab); then the no_traffic ones beside molecule's scenarios (the streams above), then molecule default alone
# test-steps does that; make test then names, as its last lines and whatever the outcome, every test its pytest runs
# skipped, with the reason (tests/skiplog.py: each run logs its skips into SKIPS_DIR), or "no test skipped"
SKIPS_DIR := $(CURDIR)/.pytest_cache/xdplab-skips
.PHONY: test-steps
test: $(VENV)/.test-deps
	@rm -rf $(SKIPS_DIR)
	@rc=0; XDPLAB_SKIPS_DIR=$(SKIPS_DIR) $(MAKE) --no-print-directory test-steps || rc=$$?; \
	  $(VENV)/bin/python tests/skiplog.py $(SKIPS_DIR) || [ $$rc != 0 ] || rc=1; exit $$rc

test-steps: $(VENV)/.test-deps
	$(MAKE) --no-print-directory --output-sync=target -j2 lint sanity
	$(MAKE) --no-print-directory system-deps
	$(VENV)/bin/pytest -q --durations=80 -m "not no_traffic" tests
	$(MAKE) --no-print-directory --output-sync=target -j2 molecule-builds test-beside-builds
	$(VENV)/bin/molecule test -s default

# every script in benchmarks/ to its end, under the lab lock, each one's output in results/bench/<run-id>/ with a
# summary (verdict, exit, seconds, provenance). Exit 0 when every script ran to the end, a bound exceeded included
# (reported in the summary, not an error); 1 when a script failed or did not run (benchmarks/run_all.py says why)
bench: system-deps
	$(VENV)/bin/python benchmarks/run_all.py $(ARGS)

clean:
	rm -rf bpf/build .pytest_cache .ruff_cache
