# Shared helpers for the shell tests: sourced, not run.
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BINDTRACE=${BINDTRACE:-$top/build/bindtrace-san}
# Sanitizer reports fail the test rather than scroll by.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
checks_passed=0
checks_failed=0

pass() { checks_passed=$((checks_passed + 1)); echo "ok   $*"; }
fail() { checks_failed=$((checks_failed + 1)); echo "FAIL $*"; }
# check DESCRIPTION COMMAND...: passes when COMMAND succeeds.
check() {
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}
skip() { echo "skip: $*"; exit 77; }
need_root() { [ "$(id -u)" -eq 0 ] || skip "needs root (BPF)"; }
finish() {
	echo "$checks_passed passed, $checks_failed failed"
	[ "$checks_failed" -eq 0 ]
}
