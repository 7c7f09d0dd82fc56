#!/usr/bin/env bash
# test/fuzz/run.sh — run each libFuzzer target for a fixed time (Makefile: fuzz).
#
#   bash test/fuzz/run.sh BUILD_DIR SECONDS TARGET...
#
# Each target starts from its committed seeds (test/fuzz/seeds/<name>/:
# real inputs, and any input that once failed, kept as a regression) and
# from its corpus of earlier runs (BUILD_DIR/fuzz/corpus/<name>/, not
# committed); the USDT target also from the notes of the installed
# PostgreSQL binary, the ELF target from small executables built here that
# carry those notes, a build id, a debuglink and the symbols the helper
# looks up (built, not committed: they are compiler output).  A target passes when it runs SECONDS without a crash,
# a sanitizer report, a failed property, a leak or a 10 s input.  On a
# failure the input is kept as BUILD_DIR/fuzz/crash-<name>-* and shown.
# The last line is "fuzz targets: N passed, N failed".
set -uo pipefail

build=$1 secs=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
pass=0 fail=0

# The .note.stapsdt section of the installed PostgreSQL, raw, into $1.
# Fails (and leaves nothing) where there is none.
postgres_notes() {
	local bin
	bin=$(ls /usr/lib/postgresql/*/bin/postgres 2>/dev/null | head -1)
	if [ -n "$bin" ] && objcopy -O binary --only-section=.note.stapsdt \
		--set-section-flags .note.stapsdt=alloc "$bin" "$1" 2>/dev/null && [ -s "$1" ]; then
		return 0
	fi
	rm -f "$1"
	return 1
}

# fuzz_usdt's input from them: mode byte 0 (a section), then the section.
usdt_seed() {
	local out=$1
	postgres_notes "$out.raw" && { printf '\0'; cat "$out.raw"; } > "$out"
	rm -f "$out.raw"
}

# Small executables as fuzz_elf's inputs: a static one with PostgreSQL's
# SDT notes added, and a static PIE with a debuglink.
small_elves() {
	local dir=$1 tmp
	tmp=$(mktemp -d) || return 0
	cat > "$tmp/tiny.c" <<-'EOF'
	int MyProc = 1;
	void PostmasterMain(void) { }
	void _start(void) { PostmasterMain(); for (;;) ; }
	EOF
	if cc -Os -nostdlib -static -Wl,--build-id -Wl,-n -o "$tmp/static" "$tmp/tiny.c" 2>/dev/null; then
		if postgres_notes "$tmp/notes.raw"; then
			objcopy --add-section .note.stapsdt="$tmp/notes.raw" \
				--add-section .stapsdt.base=/dev/null "$tmp/static" "$dir/static_sdt"
		else
			cp "$tmp/static" "$dir/static_sdt"
		fi
	fi
	cc -Os -nostdlib -static-pie -Wl,--build-id -o "$tmp/pie" "$tmp/tiny.c" 2>/dev/null &&
		objcopy --add-gnu-debuglink="$tmp/tiny.c" "$tmp/pie" "$dir/pie_debuglink"
	rm -rf "$tmp"
}

for bin in "$@"; do
	name=$(basename "$bin")
	name=${name#fuzz_}
	corpus=$build/fuzz/corpus/$name
	log=$build/fuzz/$name.log
	mkdir -p "$corpus"
	[ "$name" = usdt ] && usdt_seed "$corpus/postgres_notes"
	[ "$name" = elf ] && small_elves "$corpus"
	seeds=()
	[ -d "$here/seeds/$name" ] && seeds=("$here/seeds/$name")
	"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$build/fuzz/crash-$name-" \
		"$corpus" "${seeds[@]}" > "$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	if [ "$rc" -eq 0 ]; then
		pass=$((pass + 1))
		echo "fuzz $name: ok, ${runs:-?} inputs in ${secs} s"
	else
		fail=$((fail + 1))
		echo "fuzz $name: FAILED (exit $rc); log $log"
		grep -E 'ERROR|property failed|SUMMARY|^    #[0-9]' "$log" | head -20
		for c in "$build/fuzz/crash-$name-"*; do
			[ -f "$c" ] && { echo "--- input $c"; od -A d -c "$c" | head -20; }
		done
	fi
done
echo "fuzz targets: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
