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
# all_of 'COMMAND' ...: each a command line evaluated here; true when every one is. A compound
# condition goes to check through it: in `check WHAT [ a ] && grep b` the && is the shell's, after
# check has judged `[ a ]` alone, so grep b was never checked (tests/source/test-check-calls).
all_of() {
	local c
	for c; do eval "$c" || return 1; done
}
skip() { echo "skip: $*"; exit 77; }
need_root() { [ "$(id -u)" -eq 0 ] || skip "needs root (BPF)"; }
# no_sanitizer_report FILE: the tracer's stderr holds no ASan, LSan or UBSan report.
no_sanitizer_report() { ! grep -Eq "AddressSanitizer|LeakSanitizer|runtime error:" "$1"; }
# wait_for FILE PATTERN [PID] [SECONDS]: until FILE has a line matching PATTERN (grep -E):
# 0; 1 when PID (if given) has exited first, or after SECONDS (default 30).
wait_for() {
	local i
	for ((i = 0; i < ${4:-30} * 20; i++)); do
		grep -q -E -- "$2" "$1" 2>/dev/null && return 0
		[ -n "${3:-}" ] && ! kill -0 "$3" 2>/dev/null && return 1
		sleep 0.05
	done
	return 1
}
# interrupt_and_wait PID SECONDS: sends PID (a child of this shell) SIGINT and waits up to
# SECONDS for its end. Sets stop_rc (its exit status; 137 when it had to be killed), stop_ms
# (from the SIGINT to its end, or to the timeout) and stop_hung: empty, or, for one still running
# after SECONDS, where each of its threads waited and their stacks (with gdb), taken before it is
# killed, so that the log shows what held it.
interrupt_and_wait() {
	local pid=$1 t0 t
	stop_hung=
	t0=$(date +%s%N)
	kill -INT "$pid" 2>/dev/null
	for _ in $(seq $(($2 * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	stop_ms=$((($(date +%s%N) - t0) / 1000000))
	if kill -0 "$pid" 2>/dev/null; then
		stop_hung=$(for t in /proc/"$pid"/task/*; do
			echo "thread $(cat "$t/comm" 2>/dev/null) $(awk '{ print $3 }' "$t/stat" \
				2>/dev/null) wchan $(cat "$t/wchan" 2>/dev/null)"
		done
		command -v gdb >/dev/null &&
			timeout 30 gdb -p "$pid" -batch -ex 'thread apply all bt 12' 2>/dev/null |
			grep -E '^(Thread|#)' | cut -c1-200)
		kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid"
	stop_rc=$?
}
finish() {
	echo "$checks_passed passed, $checks_failed failed"
	[ "$checks_failed" -eq 0 ]
}
# A bed of several etcd members (`cluster env` evaluated; CP_ETCD_PID the member of the node
# under test). etcd's JSON gateway, as a client of the bed (its CA and client certificate).
etcd_api() { # ENDPOINT PATH JSON
	curl -s --max-time 10 --cacert "$CP_ETCD_CACERT" --cert "$CP_ETCD_CERT" --key "$CP_ETCD_KEY" \
		-X POST "$1$2" -d "$3"
}
# member_of ENDPOINT: its member id (decimal, as the gateway writes it); leader_of ENDPOINT.
member_of() { etcd_api "$1" /v3/maintenance/status '{}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["member_id"])'; }
leader_of() { etcd_api "$1" /v3/maintenance/status '{}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["leader"])'; }
# lead WHO: makes the active node's etcd member the leader (WHO=active) or a follower
# (WHO=other), so that the apiserver's Txn is answered by the leader or forwarded by a follower.
lead() {
	local eps active_ep="" ep i=0 mine leader target=""
	IFS=, read -ra eps <<<"$CP_ETCD_ENDPOINTS"
	for ep in "${eps[@]}"; do
		i=$((i + 1))
		local v=CP_ETCD_PID_$i
		[ "${!v}" = "$CP_ETCD_PID" ] && active_ep=$ep
	done
	mine=$(member_of "$active_ep") || return 1
	leader=$(leader_of "$active_ep") || return 1
	if [ "$1" = active ]; then
		[ "$leader" = "$mine" ] && return 0
		target=$mine
	else
		[ "$leader" != "$mine" ] && return 0
		for ep in "${eps[@]}"; do [ "$ep" != "$active_ep" ] && target=$(member_of "$ep") && break; done
	fi
	for ep in "${eps[@]}"; do
		[ "$(member_of "$ep")" = "$leader" ] &&
			etcd_api "$ep" /v3/maintenance/transfer-leadership "{\"targetID\":\"$target\"}" >/dev/null
	done
	for _ in $(seq 50); do
		[ "$(leader_of "$active_ep")" = "$target" ] && return 0
		sleep 0.2
	done
	return 1
}
