#!/usr/bin/env bash
# test/oldkernel/run.sh — the helper on Debian 12's own kernel (6.1).
#
# The development VMs and CI run a much newer kernel.  This boots Debian
# 12's stock kernel image under qemu's software emulation (no KVM needed)
# and runs test/oldkernel/guest.sh in it as PID 1: the guest's root is this
# machine's own file system, shared read-only over virtio-9p (so the
# installed extension, PostgreSQL and perl are the ones tested here), with
# tmpfs where it must write (/tmp and /run among them: what lies there
# here is not seen there) and an ext4 disk of its own with a cluster's data
# directory, made here (the block set needs a real block device).  The helper (HELPER_BIN) and
# the guest script travel in the initramfs.  The guest prints TAP
# lines on its console; this script relays them and ends with the
# summary of the whole run.
#
#   bash test/oldkernel/run.sh            # as root, after make install
#   KVER=6.1.0-57-amd64 HELPER_BIN=/usr/local/sbin/pg-tracer bash test/oldkernel/run.sh
#
# OLDKERNEL_LOG: where the guest's console is kept; OLDKERNEL_TIMEOUT: the
# run's limit in seconds (900); OLDKERNEL_TCG: qemu's TCG threading
# (single; see the boot below).
#
# Needs qemu-system-x86 (scripts/install-deps.sh) and Debian's package
# registry, for the kernel and busybox-static packages (downloaded, not
# installed: nothing of them lands outside the cache below).
set -euo pipefail
# root's PATH from su (without -) or cron lacks the sbin directories that
# bpftool, runuser, dpkg's ldconfig and nft live in
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}

here=$(cd "$(dirname "$0")" && pwd)
cache=${PGT_OLDKERNEL_CACHE:-/var/cache/pg_tracer/oldkernel}
timeout_s=${OLDKERNEL_TIMEOUT:-900}

die() { echo "oldkernel: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "must run as root"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is not installed (scripts/install-deps.sh)"
HELPER_BIN=${HELPER_BIN:-$(command -v pg-tracer || true)}
[ -x "$HELPER_BIN" ] || die "pg-tracer is not installed (make install), or HELPER_BIN names no program"

# --- the kernel: the newest 6.1 image package Debian offers, unless KVER says
newest_61() {
	apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' |
		awk '{ print $1 }' | sed 's/^linux-image-//' | sort -V | tail -1
}
# the package lists may be old or missing on a machine set up earlier
# (install-deps.sh updates them only to install): refreshed once, on need
lists_fresh=0
refresh_lists() {
	[ "$lists_fresh" -eq 0 ] || return 1
	lists_fresh=1
	apt-get update -q >/dev/null 2>&1 || true
}
KVER_GIVEN=${KVER:+1}
if [ -z "${KVER:-}" ]; then
	KVER=$(newest_61)
	[ -n "$KVER" ] || { refresh_lists; KVER=$(newest_61); }
	[ -n "$KVER" ] || die "no linux-image-6.1.0-*-amd64 package in the registry"
fi
mkdir -p "$cache"
kroot="$cache/$KVER"
if [ ! -e "$kroot/boot/vmlinuz-$KVER" ]; then
	tmp=$(mktemp -d "$cache/dl.XXXX")
	download_kernel() { (cd "$tmp" && apt-get download -q "linux-image-$KVER" >/dev/null 2>&1); }
	if ! download_kernel; then
		# a superseded version in old lists: the newest one after a refresh
		refresh_lists && [ -z "${KVER_GIVEN:-}" ] && KVER=$(newest_61) && kroot="$cache/$KVER"
		download_kernel || die "cannot download linux-image-$KVER"
	fi
	rm -rf "$kroot"
	dpkg-deb -x "$tmp"/linux-image-*.deb "$kroot"
	depmod -b "$kroot" "$KVER"
	rm -rf "$tmp"
fi
bbox="$cache/busybox"
if [ ! -x "$bbox" ]; then
	tmp=$(mktemp -d "$cache/dl.XXXX")
	(cd "$tmp" && apt-get download -q busybox-static >/dev/null 2>&1 && dpkg-deb -x busybox-static_*.deb x) ||
		die "cannot download busybox-static"
	cp "$tmp/x/bin/busybox" "$bbox"
	rm -rf "$tmp"
fi

work=$(mktemp -d /tmp/pgt_oldkernel.XXXX)
trap 'rm -rf "$work"' EXIT

# --- the initramfs: busybox, the modules to reach the root and the disk
# (in dependency order, from modules.dep), the init script, the helper and
# the guest script
moddir="$kroot/lib/modules/$KVER"
mods_in_order() {
	local m dep
	for m in "$@"; do
		dep=$(awk -v m="$m" -F': *' '$1 ~ ("/" m ".ko$") { print $2; exit }' "$moddir/modules.dep")
		[ -n "$dep" ] && mods_in_order $(for d in $dep; do basename "$d" .ko; done)
		awk -v m="$m" -F':' '$1 ~ ("/" m ".ko$") { print $1; exit }' "$moddir/modules.dep"
	done
}
mkdir -p "$work/initrd/bin" "$work/initrd/modules" "$work/initrd/newroot" \
	"$work/initrd/proc" "$work/initrd/sys" "$work/initrd/dev" "$work/initrd/pgt"
cp "$bbox" "$work/initrd/bin/busybox"
cp "$HELPER_BIN" "$work/initrd/pgt/pg-tracer"
cp "$here/guest.sh" "$work/initrd/pgt/guest.sh"
n=10
for path in $(mods_in_order virtio_pci 9pnet_virtio 9p virtio_blk crc32c_generic ext4 | awk '!seen[$0]++'); do
	cp "$moddir/$path" "$work/initrd/modules/$n-$(basename "$path")"
	n=$((n + 1))
done
install -m 755 "$here/init" "$work/initrd/init"
(cd "$work/initrd" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initrd.gz"

# --- the data disk: an ext4 file system made here with a fresh cluster's
# data directory on it (initdb takes 40 s under emulation, 2 s here; the
# guest runs this machine's PostgreSQL, as the same postgres user)
pgbin=/usr/lib/postgresql/15/bin
mkdir -p "$work/fs/data"
chmod 755 "$work"
chown postgres:postgres "$work/fs/data"
runuser -u postgres -- "$pgbin/initdb" -D "$work/fs/data" -A trust >"$work/initdb.log" 2>&1 ||
	{ cat "$work/initdb.log" >&2; die "initdb failed"; }
mkfs.ext4 -q -F -d "$work/fs" "$work/disk.img" 512M >/dev/null ||
	die "cannot make the guest's disk (mkfs.ext4 -d)"

# --- boot; the guest's console is relayed, its TAP lines counted.  loglevel=5:
# the kernel's warnings (a lockup's backtraces among them) reach the console
# log, which is kept (OLDKERNEL_LOG), its boot chatter does not.  A soft
# lockup panics the guest: the run then ends at once, with the backtraces,
# instead of at the timeout.
#
# One host thread runs both guest CPUs (thread=single).  With a thread per
# CPU (qemu 7.2's multi-threaded TCG), rewriting kernel text while the other
# CPU runs it can leave that CPU executing a stale translation: the int3
# that text_poke_bp puts at a call site while it patches it, after memory
# holds the finished instruction again.  The kernel's int3 handler then
# sees no int3 there ("removed right after we hit it"), rewinds to the
# site, and the CPU runs the stale int3 again, for good: a soft lockup at
# the entry of a system call the helper attaches an fexit program to
# (__x64_sys_openat+0x0, __x64_sys_sendto+0x0), with the other CPU inside
# asm_exc_int3 from the same site, while the console's dump of that site
# shows the call (e8), not the int3.  Attaching and holding the sets while
# pgbench ran, this hung the guest at the first or second of two daemon
# starts in two runs of two, and never in eighteen attach-and-hold cycles
# with one thread.  Real processors serialise after text_poke_bp's IPIs, so
# this is the emulator's fault, not the kernel's or the helper's.  On a
# 2-CPU host one thread is the faster mode too.  OLDKERNEL_TCG=multi brings
# the other mode back.
echo "# oldkernel: booting $KVER under qemu (software emulation), helper $HELPER_BIN"
set +e
timeout "$timeout_s" qemu-system-x86_64 -machine q35 -accel "tcg,thread=${OLDKERNEL_TCG:-single}" -cpu max -smp 2 -m 2048 \
	-nographic -no-reboot -serial mon:stdio \
	-kernel "$kroot/boot/vmlinuz-$KVER" -initrd "$work/initrd.gz" \
	-append "console=ttyS0 panic=-1 loglevel=5 softlockup_all_cpu_backtrace=1 softlockup_panic=1" \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	-drive file="$work/disk.img",if=virtio,format=raw,cache=unsafe \
	</dev/null 2>&1 | stdbuf -oL tr -d '\r' | sed -u -e 's/\x1b[[?0-9;]*[a-zA-Z]//g; s/\x1bc//g' | tee "$work/console.log" | grep --line-buffered -E '^(ok|not ok|#|1\.\.)'
rc=${PIPESTATUS[0]}
set -e
pass=$(grep -c '^ok ' "$work/console.log" || true)
fail=$(grep -c '^not ok ' "$work/console.log" || true)
plan=$(sed -n 's/^\(.*[^0-9]\)\{0,1\}1\.\.\([0-9][0-9]*\)$/\2/p' "$work/console.log" | head -1)
if [ -z "$plan" ]; then
	echo "# the guest printed no plan"
	fail=$((fail + 1))
elif [ $((pass + fail)) -lt "$plan" ]; then
	echo "# $((plan - pass - fail)) of the guest's $plan checks did not run"
	fail=$((plan - pass))
fi
if ! grep -q '^# guest: done' "$work/console.log"; then
	echo "# the guest did not finish (qemu exit $rc); the last of its console:"
	tail -40 "$work/console.log" | sed 's/^/#   /'
	if grep -q 'soft lockup' "$work/console.log"; then
		echo "# the first soft lockup, with its backtraces:"
		sed -n '/soft lockup/,$p' "$work/console.log" | head -150 | sed 's/^/#   /'
	fi
	fail=$((fail + 1))
fi
cp "$work/console.log" "${OLDKERNEL_LOG:-/tmp/pgt_oldkernel_console.log}"
echo "oldkernel ($KVER): $pass passed, $fail failed"
[ "$fail" -eq 0 ]
