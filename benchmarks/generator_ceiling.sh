#!/usr/bin/env bash
# generator_ceiling.sh: how many packets per second xdplab-trafficgen sends
# from one core. One sender on GEN_CPU -> veth -> DUT veth with xdp_bench_drop
# (touch none) attached natively and threaded NAPI pinned to NAPI_CPU.
# Prints Mpps sent, delivered to the DUT (ndo_xdp_xmit accepted), refused
# (peer ring full) and dropped by the DUT program (rxq_stats).
#
#   benchmarks/generator_ceiling.sh [DURATION_S] [PKT_LEN] [GEN_CPU] [NAPI_CPU]
# Needs root. Creates namespaces xbench-<pid>-{gen,dut} and removes them on
# every exit path.
set -euo pipefail

DURATION=${1:-10}
PKT_LEN=${2:-64}
GEN_CPU=${3:-0}
NAPI_CPU=${4:-1}

here=$(cd "$(dirname "$0")" && pwd)
bpf_dir="$here/../bpf"
build="$bpf_dir/build"

tag=$$
ns_gen="xbench-$tag-gen"
ns_dut="xbench-$tag-dut"
if_gen="xbg$tag"
if_dut="xbd$tag"
gen_mac=02:00:00:00:00:01
dut_mac=02:00:00:00:00:02
gen_pid=""
out=""

cleanup() {
	set +e
	if [ -n "$gen_pid" ] && kill -0 "$gen_pid" 2>/dev/null; then
		kill -TERM "$gen_pid"
		wait "$gen_pid" 2>/dev/null
	fi
	if ip netns list | grep -qw "$ns_dut"; then
		ip -n "$ns_dut" link set dev "$if_dut" xdpdrv off 2>/dev/null
		ip netns del "$ns_dut"
	fi
	ip netns list | grep -qw "$ns_gen" && ip netns del "$ns_gen"
	[ -n "$out" ] && rm -f "$out"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$(id -u)" != 0 ]; then
	echo "generator_ceiling.sh: needs root (namespaces, XDP)" >&2
	exit 2
fi
make -s -C "$bpf_dir" >/dev/null

ip netns add "$ns_gen"
ip netns add "$ns_dut"
ip link add "$if_gen" netns "$ns_gen" numtxqueues 1 numrxqueues 1 type veth \
	peer name "$if_dut" netns "$ns_dut" numtxqueues 1 numrxqueues 1
ip -n "$ns_gen" link set "$if_gen" address "$gen_mac" up
ip -n "$ns_dut" link set "$if_dut" address "$dut_mac" up
# The DUT program also gives the peer's RX queue the NAPI that
# ndo_xdp_xmit needs (without XDP or GRO, veth refuses redirected frames).
ip -n "$ns_dut" link set dev "$if_dut" xdpdrv obj "$build/xdp_bench.bpf.o" sec xdp program xdp_bench_drop
ip netns exec "$ns_dut" sh -c "echo 1 > /sys/class/net/$if_dut/threaded"
napi_pids=$(pgrep "^napi/$if_dut-" || true)
if [ -z "$napi_pids" ]; then
	echo "generator_ceiling.sh: no napi/$if_dut-* kernel thread after enabling threaded NAPI" >&2
	exit 1
fi
for pid in $napi_pids; do taskset -pc "$NAPI_CPU" "$pid" >/dev/null; done

prog_id=$(ip -n "$ns_dut" -j link show "$if_dut" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["xdp"]["prog"]["id"])')
map_id=$(bpftool prog show id "$prog_id" -j | python3 -c '
import json, subprocess, sys
for m in json.load(sys.stdin)["map_ids"]:
    info = json.loads(subprocess.check_output(["bpftool", "map", "show", "id", str(m), "-j"]))
    if info["name"] == "rxq_stats":
        print(m)')
rxq_packets() {
	bpftool map dump id "$map_id" -j | python3 -c '
import json, sys
print(sum(v["value"]["packets"] for e in json.load(sys.stdin) for v in e["formatted"]["values"]))'
}
ethtool_sum() { # NS IF REGEX: sum of matching ethtool -S counters
	ip netns exec "$1" ethtool -S "$2" | awk -v re="$3" '$1 ~ re {s += $2} END {print s + 0}'
}

dropped_before=$(rxq_packets)
xmit_before=$(ethtool_sum "$ns_gen" "$if_gen" '^tx_queue_[0-9]+_xdp_xmit:$')
refused_before=$(ethtool_sum "$ns_gen" "$if_gen" '^tx_queue_[0-9]+_xdp_xmit_errors:$')

out=$(mktemp /tmp/xbench-ceiling.XXXXXX)
ip netns exec "$ns_gen" "$build/xdplab-trafficgen" --dev "$if_gen" \
	--src-mac "$gen_mac" --dst-mac "$dut_mac" --src-ip 10.0.0.1 --dst-ip 10.0.0.2 \
	--pkt-len "$PKT_LEN" --flows 1 --queues 1 --cpus "$GEN_CPU" --duration "$DURATION" >"$out" &
gen_pid=$!
wait "$gen_pid"
gen_pid=""

dropped=$(( $(rxq_packets) - dropped_before ))
xmit=$(( $(ethtool_sum "$ns_gen" "$if_gen" '^tx_queue_[0-9]+_xdp_xmit:$') - xmit_before ))
refused=$(( $(ethtool_sum "$ns_gen" "$if_gen" '^tx_queue_[0-9]+_xdp_xmit_errors:$') - refused_before ))

python3 - "$out" "$dropped" "$xmit" "$refused" "$GEN_CPU" "$NAPI_CPU" <<'PY'
import json, sys
path, dropped, xmit, refused, gen_cpu, napi_cpu = sys.argv[1:]
summary = [json.loads(l) for l in open(path) if l.strip()][-1]
el = summary["elapsed_s"]
print("kernel %s, %s CPUs, pkt_len %d, generator CPU %s, DUT threaded NAPI on CPU %s, %.1f s"
      % (open("/proc/sys/kernel/osrelease").read().strip(), __import__("os").cpu_count(),
         summary["pkt_len"], gen_cpu, napi_cpu, el))
print("generator sent      %7.2f Mpps  (%d packets)" % (summary["sent"] / el / 1e6, summary["sent"]))
print("veth delivered      %7.2f Mpps  (ndo_xdp_xmit accepted)" % (int(xmit) / el / 1e6))
print("veth refused        %7.2f Mpps  (DUT ring full)" % (int(refused) / el / 1e6))
print("DUT XDP_DROP        %7.2f Mpps  (rxq_stats)" % (int(dropped) / el / 1e6))
PY
