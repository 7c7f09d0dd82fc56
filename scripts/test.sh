#!/usr/bin/env bash
# test.sh — build everything and run every test suite: C unit tests,
# fuzzing of the parsers, the helper on Debian 12's own kernel under qemu,
# pg_regress (SQL API) and TAP (real clusters, the real helper, real BPF).
#
# Run as root on Debian 12: it installs the packages it needs, builds and
# installs the extension and the helper, then runs the PostgreSQL suites as
# the postgres user (PostgreSQL refuses root) in a copy of the tree that
# user owns.  Root-only steps inside TAP tests go through test/helper-ctl,
# which a sudoers rule allows for the duration of the run only.
#
# The last line is "summary: N passed, N failed" (counted in test cases).
set -uo pipefail
# root's PATH from su (without -) or cron lacks the sbin directories that
# bpftool, runuser, dpkg's ldconfig and nft live in
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}
# initdb (here and in the TAP clusters) takes the caller's locale: one
# forwarded by ssh may not exist here
export LANG=C.UTF-8
unset LC_ALL

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ "$(id -u)" -eq 0 ] || { echo "test.sh: run as root" >&2; exit 1; }

bash scripts/install-deps.sh || { echo "summary: 0 passed, 1 failed"; exit 1; }

# Which PostgreSQL to build against and test with, and where the helper
# goes.  The defaults are Debian's PostgreSQL 15 and /usr/local; a
# developer can point both at a private copy to test beside other work.
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
HELPER_PREFIX=${HELPER_PREFIX:-/usr/local}
export PG_CONFIG
export PATH=$("$PG_CONFIG" --bindir):$PATH
helper_bin=$HELPER_PREFIX/sbin/pg-tracer

passed=0 failed=0
add() { passed=$((passed + $1)); failed=$((failed + $2)); }

echo "=== build and install"
make -s clean >/dev/null 2>&1 || true
if ! make -j2 || ! make install prefix_helper="$HELPER_PREFIX"; then
	echo "build failed"
	echo "summary: 0 passed, 1 failed"
	exit 1
fi

# The emulated guest takes one CPU for some 4 minutes: it runs while the
# unit tests and the fuzzers (one CPU) do, and its log is shown after them.
# The PostgreSQL suites wait for it: their timings want the machine idle.
# (It shares this script's process group: a runner that stops the job
# stops it too, and its own timeout bounds it.)
old_log=$(mktemp)
HELPER_BIN=$helper_bin bash test/oldkernel/run.sh > "$old_log" 2>&1 &
old_pid=$!

echo "=== C unit tests"
unit_log=$(mktemp)
make -s unit 2>&1 | tee "$unit_log"
unit_counts=$(grep -E '^([A-Za-z_]+: )?[0-9]+ passed, [0-9]+ failed$' "$unit_log" |
	sed -E 's/^([A-Za-z_]+: )?([0-9]+) passed, ([0-9]+) failed$/\2 \3/')
u_pass=$(echo "$unit_counts" | awk '{s+=$1} END {print s+0}')
u_fail=$(echo "$unit_counts" | awk '{s+=$2} END {print s+0}')
grep -q '^unit programs: [0-9]* passed, 0 failed$' "$unit_log" || u_fail=$((u_fail + 1))
add "$u_pass" "$u_fail"

echo "=== fuzzing: every parser of untrusted bytes, ${FUZZ_SECONDS:-20} s each (libFuzzer, ASan, UBSan)"
fuzz_log=$(mktemp)
make -s fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-20}" 2>&1 | tee "$fuzz_log"
if r=$(grep -E '^fuzz targets: [0-9]+ passed, [0-9]+ failed$' "$fuzz_log"); then
	add "$(echo "$r" | awk '{print $3}')" "$(echo "$r" | awk '{print $5}')"
else
	add 0 1
fi

echo "=== Debian 12's kernel (6.1) under qemu: the helper and a cluster on it (test/oldkernel)"
wait "$old_pid"
cat "$old_log"
if r=$(grep -E '^oldkernel \(.*\): [0-9]+ passed, [0-9]+ failed$' "$old_log"); then
	add "$(echo "$r" | awk '{print $(NF-3)}')" "$(echo "$r" | awk '{print $(NF-1)}')"
else
	add 0 1
fi

echo "=== PostgreSQL suites (pg_regress + TAP) as postgres"
work=$(mktemp -d /tmp/pg_tracer_test.XXXXXX)
rsync -a --exclude .git --exclude build --exclude 'tmp_check*' ./ "$work/"
chown -R postgres:postgres "$work"
chmod 755 "$work"

# The root steps of the TAP tests: a copy of test/helper-ctl bound to this
# run's helper binary and to this run (it refuses to act once this process
# is gone: a run killed before its cleanup, by SIGKILL, the OOM killer or a
# power cut, leaves a rule that grants nothing), and a sudoers rule for it
# that lives as long as the run.  Rules such runs left are removed first.
for old in /etc/sudoers.d/pg_tracer_tests_*; do
	[ -f "$old" ] || continue
	old_pid=${old##*_}
	[[ "$old_pid" =~ ^[0-9]+$ ]] && kill -0 "$old_pid" 2>/dev/null && continue
	old_dir=$(sed -nE 's|^postgres ALL=\(root\) NOPASSWD: (/usr/local/lib/pg_tracer_ctl\.[A-Za-z0-9]+)/helper-ctl$|\1|p' "$old")
	[ -n "$old_dir" ] && rm -rf -- "$old_dir"
	rm -f -- "$old"
	echo "removed $old, left by a run that did not end cleanly"
done
ctl_dir= sudoers=
cleanup() {
	[ -z "$sudoers" ] || rm -f "$sudoers"
	[ -z "$ctl_dir" ] || rm -rf "$ctl_dir"
	rm -rf /run/pg_tracer_ctl
	pkill -f "^$helper_bin daemon --runtime-dir /tmp/" 2>/dev/null || true
}
trap cleanup EXIT
ctl_dir=$(mktemp -d /usr/local/lib/pg_tracer_ctl.XXXXXX)
chmod 0755 "$ctl_dir"
run_start=$(awk '{ sub(/.*\) /, ""); print $20 }' /proc/$$/stat)
sed -e "s|^BIN=.*|BIN=$helper_bin|" -e "s|^RUN=.*|RUN=\"$$ $run_start\"|" \
	test/helper-ctl > "$ctl_dir/helper-ctl"
chmod 0755 "$ctl_dir/helper-ctl"
sudoers=/etc/sudoers.d/pg_tracer_tests_$$
echo "postgres ALL=(root) NOPASSWD: $ctl_dir/helper-ctl" > "$sudoers"
chmod 0440 "$sudoers"

pg_log=$(mktemp)
chmod 644 "$pg_log"
# each run bounded (timeout signals the whole process group): one hung query
# or helper would otherwise hold CI to its own limit
as_pg_make() {
	timeout -k 60 50m runuser -u postgres -- env PATH="$PATH" \
		PG_TRACER_CTL="sudo -n $ctl_dir/helper-ctl" \
		make -C "$work" NO_HELPER=1 PG_CONFIG="$PG_CONFIG" PROVE_FLAGS='--timer' "$@" 2>&1 | tee -a "$pg_log"
	local rc=${PIPESTATUS[0]}
	[ "$rc" -ne 124 ] || echo "stopped after 50 minutes: make $*" | tee -a "$pg_log"
	return "$rc"
}
# two runs, so that a regression failure does not hide the TAP results
as_pg_make installcheck TAP_TESTS=
pg_rc=$?
as_pg_make installcheck REGRESS= || pg_rc=1

# pg_regress: "All N tests passed." or "M of N tests failed."
if r=$(grep -Eo 'All [0-9]+ tests passed' "$pg_log"); then
	add "$(echo "$r" | awk '{print $2}')" 0
elif r=$(grep -Eo '[0-9]+ of [0-9]+ tests failed' "$pg_log"); then
	f=$(echo "$r" | awk '{print $1}'); n=$(echo "$r" | awk '{print $3}')
	add $((n - f)) "$f"
	echo "--- regression.diffs"; cat "$work/regression.diffs" 2>/dev/null
else
	add 0 1
fi
# prove: "Tests=N" and, on failure, "Failed X/Y subtests" per file
if t=$(grep -Eo 'Tests=[0-9]+' "$pg_log" | tail -1); then
	n=${t#Tests=}
	f=$(grep -Eo 'Failed [0-9]+/[0-9]+ subtests' "$pg_log" | awk -F'[ /]' '{s+=$2} END {print s+0}')
	grep -q '^Result: PASS' "$pg_log" || [ "$f" -gt 0 ] || f=1
	add $((n - f)) "$f"
else
	add 0 1
fi
[ "$pg_rc" -eq 0 ] || { [ "$failed" -gt 0 ] || failed=1; }
# test cases per TAP file: some files' counts follow the data (a skip, a
# loop over what the kernel reported), so a change of the total is named here
echo "--- TAP test cases per file"
for l in "$work"/tmp_check/log/regress_log_*; do
	[ -f "$l" ] && printf '%s %s\n' "${l##*/regress_log_}" "$(grep -Ec '^(\[[^]]*\]\([^)]*\) )?(not )?ok [0-9]+' "$l")"
done | paste - - - -
# what did not run: prove counts a file that skipped itself (a tool or a
# kernel feature missing), and the checks a file skipped, as passing; they
# are named here, so that a run that skipped a suite is not read as one
# that passed it
skipped_files=$(grep -E 't/[^ ]+ \.+ skipped: ' "$pg_log" || true)
skipped_checks=$(cat "$work"/tmp_check/log/regress_log_* 2>/dev/null |
	grep -Ec '^(\[[^]]*\]\([^)]*\) )?ok [0-9]+ # skip' || true)
echo "--- not run: $(printf '%s' "$skipped_files" | grep -c .) TAP files skipped whole, ${skipped_checks:-0} TAP checks skipped"
[ -z "$skipped_files" ] || printf '%s\n' "$skipped_files"
if [ "$failed" -gt 0 ]; then
	for l in "$work"/tmp_check/log/*; do
		[ -f "$l" ] && { echo "--- $l (tail)"; tail -n 40 "$l"; }
	done
	# the helpers' own logs, kept in the data directories of the tests that
	# failed (those of passing tests are removed with their clusters)
	for l in "$work"/tmp_check/t_*/helper.log; do
		[ -f "$l" ] && { echo "--- $l (tail)"; tail -n 60 "$l"; }
	done
else
	rm -rf "$work"
fi

echo "summary: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
