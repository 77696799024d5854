#!/usr/bin/env bash
# Kernel package build time, cold and with ccache, on a tree the role xdplab.testbed.kernel configured.
#
#   bash benchmarks/kernel_build.sh [TREE]
#
# TREE defaults to the molecule scenario's marker variant (molecule converge -s kernel first):
# /var/lib/xdplab/kernel-molecule/build/marker/linux. The tree is cleaned (make clean, .config kept) and
# built with `make -jN bindeb-pkg` three times: without ccache, with an empty ccache (cold), and again
# with that ccache (warm). Packages go to a scratch copy's parent, never to the role's build directory.
# Prints one line per run: seconds, objects compiled, ccache hits. Uses every CPU for a few minutes.
set -euo pipefail

tree=${1:-/var/lib/xdplab/kernel-molecule/build/marker/linux}
[ -f "$tree/.config" ] || { echo "no configured tree at $tree: run 'molecule converge -s kernel' first" >&2; exit 1; }
for tool in ccache make dpkg-buildpackage; do
    command -v "$tool" >/dev/null || { echo "$tool missing" >&2; exit 1; }
done

work=$(mktemp -d /var/tmp/xdplab-kbench.XXXXXX)
trap 'rm -rf -- "$work"' EXIT
mkdir "$work/ccache"
# a hard-linked copy: the build writes new files only, the role's tree is not touched
cp -al -- "$tree" "$work/linux"
jobs=$(nproc)
kver=$(make -s -C "$work/linux" LOCALVERSION= kernelversion)

run() { # $1 label, $2.. make variables
    local label=$1 start end objs
    shift
    make -s -C "$work/linux" clean >/dev/null
    rm -f "$work"/*.deb "$work"/*.buildinfo "$work"/*.changes
    start=$(date +%s.%N)
    make -C "$work/linux" -j"$jobs" bindeb-pkg LOCALVERSION= KDEB_PKGVERSION="$kver-bench" "$@" >"$work/$label.log" 2>&1
    end=$(date +%s.%N)
    objs=$(find "$work/linux" -name '*.o' | wc -l)
    printf '%-14s %7.1f s  %5d objects  %s\n' "$label" "$(echo "$end - $start" | bc)" "$objs" \
        "$(CCACHE_DIR=$work/ccache ccache --print-stats 2>/dev/null | awk -F'\t' '/^direct_cache_hit|^preprocessed_cache_hit|^cache_miss/ {printf "%s=%s ", $1, $2}')"
}

echo "tree: $tree ($(make -s -C "$work/linux" LOCALVERSION= kernelrelease 2>/dev/null || echo "$kver"))"
echo "host: $(nproc) CPUs, $(uname -r), $(gcc --version | head -n 1), $(ccache --version | head -n 1), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "make -j$jobs bindeb-pkg after make clean:"
run no-ccache
export CCACHE_DIR=$work/ccache CCACHE_BASEDIR=$work
run ccache-cold CC="ccache gcc"
run ccache-warm CC="ccache gcc"
