#!/bin/sh
# PID 1 of the qemu guest of tests/integration/test_kernel_nobtf.py, chrooted by its initramfs into the host's file system,
# mounted read-only over 9p, so the guest runs the host's Python, libbpf and this collection unchanged. The guest's
# own /proc and /sys hide the host's directories (so /sys/kernel/btf/vmlinux is the guest kernel's), /run is
# its scratch space. XDPLAB_ROOT (the collection), XDPLAB_PREFIX and XDPLAB_PYTHON come from the kernel command line. When this script
# exits the kernel panics and, with panic=-1 and qemu -no-reboot, qemu exits.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs tmpfs /run
mkdir -p /run/tmp
echo "XDPLAB_GUEST_KERNEL=$(uname -r)"
TMPDIR=/run/tmp PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$XDPLAB_ROOT/collections" "$XDPLAB_PYTHON" "$XDPLAB_ROOT/tests/integration/files/nobtf_guest.py" "$XDPLAB_PREFIX"
echo "XDPLAB_GUEST_EXIT=$?"
