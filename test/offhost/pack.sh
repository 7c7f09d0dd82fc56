#!/usr/bin/env bash
# pack.sh — pack what test/offhost/run.sh needs on a machine that has no
# package registry (a lent machine with another kernel, another CPU count):
# Debian 12's PostgreSQL 15 with pg_tracer installed in it, the installed
# helper, bpftool, Debian's perl with IPC::Run and PostgreSQL's TAP modules,
# and every library they load except glibc's.  run.sh unpacks it at /:
# /usr/lib/postgresql/15 and /usr/share/postgresql/15 at their own paths
# (the server finds its files relative to its binaries), the rest under
# /opt/pgt.  Not part of the product, and not used by CI.
#
#   test/offhost/pack.sh [OUTPUT (default test/offhost/bundle.tar.gz)]
#
# Run as root on Debian 12 after `make install`.  JIT (llvmjit, 40 MB of
# LLVM) is left out: run.sh's clusters run without it.  gzip, not xz: the
# other machine may have no xz.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/bundle.tar.gz}
pg=/usr/lib/postgresql/15
helper=/usr/local/sbin/pg-tracer
if [ ! -x "$helper" ] || [ ! -e "$pg/lib/pg_tracer.so" ]; then
	echo "pack.sh: run make install first" >&2
	exit 1
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
chmod 755 "$stage"	# tar records "." too: never give / a temp dir's 0700
mkdir -p "$stage"/opt/pgt/{bin,lib,ctl,zoneinfo} "$stage"/opt/pgt/perl/{base,arch,priv,vendor/IPC} \
	"$stage/usr/lib/postgresql" "$stage/usr/share/postgresql"

cp -a "$pg" "$stage/usr/lib/postgresql/"
rm -rf "$stage$pg/lib/bitcode" "$stage$pg"/lib/llvmjit*
cp -a /usr/share/postgresql/15 "$stage/usr/share/postgresql/"
cp "$helper" /usr/sbin/bpftool /usr/bin/perl /usr/bin/prove "$stage/opt/pgt/bin/"
sed "s|^BIN=.*|BIN=/opt/pgt/bin/pg-tracer|" "$here/../helper-ctl" > "$stage/opt/pgt/ctl/helper-ctl"
cp "$here/ctl_broker.py" "$here/ctl_client.py" "$stage/opt/pgt/ctl/"
chmod 755 "$stage"/opt/pgt/ctl/*

# perl 5.36 under its own directories (PERL5LIB): the other machine's perl
# modules, of another version, must not be loaded into this perl
cp -a /usr/lib/x86_64-linux-gnu/perl-base/. "$stage/opt/pgt/perl/base/"
cp -a /usr/lib/x86_64-linux-gnu/perl/5.36/. "$stage/opt/pgt/perl/arch/"
cp -a /usr/share/perl/5.36/. "$stage/opt/pgt/perl/priv/"
rm -rf "$stage/opt/pgt/perl/priv/Unicode/Collate" "$stage/opt/pgt/perl/priv/pod"
cp -a /usr/share/perl5/IPC/Run* "$stage/opt/pgt/perl/vendor/IPC/"
cp -aL /usr/share/zoneinfo/UTC /usr/share/zoneinfo/GMT /usr/share/zoneinfo/Etc "$stage/opt/pgt/zoneinfo/"

# the libraries of every binary and module packed, glibc's excepted
# (they must match the other machine's ld.so)
for f in "$pg"/bin/* $(find "$pg"/lib -maxdepth 1 -name '*.so' ! -name 'llvmjit*') "$helper" /usr/sbin/bpftool \
		/usr/bin/perl $(find /usr/lib/x86_64-linux-gnu/perl/5.36 /usr/lib/x86_64-linux-gnu/perl-base -name '*.so'); do
	ldd "$f" 2>/dev/null | awk '$3 ~ /^\// { print $3 }'
done | sort -u | grep -Ev '/(libc|libm|libresolv|libpthread|libdl|librt|ld-linux-x86-64)\.so' |
	while read -r l; do cp -L "$l" "$stage/opt/pgt/lib/"; done

tar -C "$stage" -cf - . | gzip -6 > "$out"
echo "packed $(du -sh "$stage" | cut -f1) into $out ($(du -h "$out" | cut -f1))"
