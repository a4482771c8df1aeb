#!/usr/bin/env bash
# Several "hosts" on one Linux machine, for testing tspto's distributed runtime across hosts
# honestly: each host is a network namespace with its own network stack (one veth link to a
# bridge in a switch namespace, an address in 192.0.2.0/24, TEST-NET-1, never routed) and its
# own host name (UTS namespace). Processes share the machine's PID space, so a process left
# behind by a daemon stays visible (`ip netns pids`) and is reported. Open MPI's mpirun runs in
# host h0 and starts its daemons in the other hosts through this script as its rsh agent
# (instead of ssh), with the TCP transport only: shared memory cannot cross the namespaces, and
# nothing leaves them (no route, no address outside 192.0.2.0/24, the root namespace untouched).
# Needs root (or CAP_SYS_ADMIN + CAP_NET_ADMIN), iproute2 (`ip`) and util-linux (`unshare`).
#
#   scripts/netns_hosts.sh check                      # exit 0 when namespaces can be made here, else say why
#   scripts/netns_hosts.sh up   <prefix> <hosts>      # create <prefix>-sw and <prefix>-h0 .. h<hosts-1>
#   scripts/netns_hosts.sh down <prefix>              # kill every process in them, delete them
#   scripts/netns_hosts.sh link <prefix> <i> up|down  # connect / disconnect host i from the switch
#   scripts/netns_hosts.sh mpirun [-p <prefix>] [-n <hosts>] [--slots <s>] [--heal] -- <mpirun args> <program...>
#       mpirun in h0 over every host (-H h0:s,h1:s,...), TCP only; when the namespaces were not
#       up already, makes them first and tears them down at the end (also on failure, Ctrl-C,
#       SIGTERM). After mpirun it reports each host's link traffic ("netns: h1 eth0 rx=..B tx=..B")
#       and any process still alive in a host ("netns: orphans in h1: ..."; they are then killed),
#       and exits with mpirun's status (3 when mpirun succeeded but left processes behind).
#       --heal: first bring every link back up (after a test took one down) and give the
#       processes of a host that was cut off 30 s to notice that their job is gone.
#   scripts/netns_hosts.sh gc                         # delete leftovers of runs whose owner process died
#
# A prefix is tmh<pid>[_<tag>]: <pid> owns it (gc deletes the namespaces of a dead owner).
# Example (README "Many devices and machines"):
#   sudo scripts/netns_hosts.sh mpirun -n 2 --slots 2 -- -np 4 node --import tsx examples/distributed/data_parallel.ts
set -euo pipefail

SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
NET=192.0.2
PREFIX_RE='^tmh([0-9]+)(_[A-Za-z0-9]+)?$'

die() { echo "netns_hosts: $*" >&2; exit 2; }

check() {
  [ "$(id -u)" = 0 ] || { echo "not root (network namespaces need root)"; return 1; }
  command -v ip >/dev/null 2>&1 || { echo "no 'ip' command (apt-get install iproute2)"; return 1; }
  command -v unshare >/dev/null 2>&1 || { echo "no 'unshare' command (util-linux)"; return 1; }
  local probe="tmh$$_probe"
  if ! out="$(ip netns add "$probe-x" 2>&1)"; then echo "ip netns add failed: $out"; return 1; fi
  if ! out="$(ip link add eth0 netns "$probe-x" type veth peer name p0 netns "$probe-x" 2>&1)"; then
    ip netns del "$probe-x" 2>/dev/null || true
    echo "cannot create a veth pair in a namespace: $out"; return 1
  fi
  if ! out="$(ip netns exec "$probe-x" unshare --uts true 2>&1)"; then
    ip netns del "$probe-x" 2>/dev/null || true
    echo "unshare --uts failed: $out"; return 1
  fi
  ip netns del "$probe-x"
}

valid_prefix() { [[ "$1" =~ $PREFIX_RE ]] || die "prefix must look like tmh<pid>[_<tag>], got '$1'"; }

namespaces_of() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$1-(sw|h[0-9]+)\$" || true; }

up() {
  local p="$1" n="$2"
  valid_prefix "$p"
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 200 ] || die "hosts must be 1..200, got '$n'"
  [ -z "$(namespaces_of "$p")" ] || die "namespaces of $p exist already"
  gc
  local sw="$p-sw"
  ip netns add "$sw"
  ip -n "$sw" link set lo up
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 up
  for ((i = 0; i < n; i++)); do
    local h="$p-h$i"
    ip netns add "$h"
    ip -n "$h" link set lo up
    # Both ends are created inside their namespaces: the root namespace never sees them.
    ip link add eth0 netns "$h" type veth peer name "h$i" netns "$sw"
    ip -n "$sw" link set "h$i" master br0
    ip -n "$sw" link set "h$i" up
    ip -n "$h" addr add "$NET.$((i + 1))/24" dev eth0
    ip -n "$h" link set eth0 up
  done
}

# Kills every process in the namespaces of prefix $1 (SIGKILL), then deletes the namespaces.
down() {
  local p="$1"
  valid_prefix "$p"
  local spaces
  spaces="$(namespaces_of "$p")"
  [ -n "$spaces" ] || return 0
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    local left=""
    for ns in $spaces; do
      local pids
      pids="$(ip netns pids "$ns" 2>/dev/null || true)"
      if [ -n "$pids" ]; then left=1; kill -9 $pids 2>/dev/null || true; fi
    done
    [ -z "$left" ] && break
    sleep 0.1
  done
  for ns in $spaces; do ip netns del "$ns" 2>/dev/null || true; done
}

gc() {
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^tmh[0-9]+' || true); do
    local p="${ns%-*}"
    [[ "$p" =~ $PREFIX_RE ]] || continue
    local owner="${BASH_REMATCH[1]}"
    kill -0 "$owner" 2>/dev/null || down "$p"
  done
}

link() {
  local p="$1" i="$2" state="$3"
  valid_prefix "$p"
  [[ "$state" == up || "$state" == down ]] || die "link state must be up or down"
  ip -n "$p-sw" link set "h$i" "$state"
}

# The rsh agent mpirun calls instead of ssh: `agent <host> <command words...>`. Like ssh it joins
# the words into one shell command; it runs in that host's network namespace under the host's
# own name.
agent() {
  local host="$1"
  shift
  [ -n "${TSPTO_NETNS_PREFIX:-}" ] || die "agent: TSPTO_NETNS_PREFIX is not set (run through 'netns_hosts.sh mpirun')"
  [[ "$host" =~ ^h[0-9]+$ ]] || die "agent: unknown host '$host'"
  exec ip netns exec "$TSPTO_NETNS_PREFIX-$host" unshare --uts sh -c "hostname $host && $*"
}

report() {
  local p="$1" wait_s="${2:-6}"
  for ns in $(namespaces_of "$p" | grep -- '-h[0-9]*$' | sort -t h -k2 -n); do
    local h="${ns##*-}"
    local rx tx
    rx="$(ip netns exec "$ns" cat /sys/class/net/eth0/statistics/rx_bytes 2>/dev/null || echo '?')"
    tx="$(ip netns exec "$ns" cat /sys/class/net/eth0/statistics/tx_bytes 2>/dev/null || echo '?')"
    echo "netns: $h eth0 rx=${rx}B tx=${tx}B"
  done
  # Every process must be gone once mpirun returned (give the daemons a moment to exit).
  local orphans=""
  for _ in $(seq 1 $((wait_s * 5))); do
    orphans=""
    for ns in $(namespaces_of "$p"); do
      local pids
      pids="$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ' || true)"
      [ -n "${pids// /}" ] && orphans+="${ns##*-}: $pids; "
    done
    [ -z "$orphans" ] && break
    sleep 0.2
  done
  if [ -n "$orphans" ]; then
    echo "netns: orphans in $orphans"
    for ns in $(namespaces_of "$p"); do
      for pid in $(ip netns pids "$ns" 2>/dev/null || true); do
        echo "netns:   ${ns##*-} $pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)"
      done
    done
    return 1
  fi
  echo "netns: no processes left in any host"
}

run_mpirun() {
  local p="" n=2 slots=1 heal=""
  while [ $# -gt 0 ]; do
    case "$1" in
      -p) p="$2"; shift 2 ;;
      -n) n="$2"; shift 2 ;;
      --slots) slots="$2"; shift 2 ;;
      --heal) heal=1; shift ;;
      --) shift; break ;;
      *) die "mpirun: unknown option '$1' (options: -p <prefix> -n <hosts> --slots <s> --heal -- <mpirun args>)" ;;
    esac
  done
  [ $# -gt 0 ] || die "mpirun: nothing to run after --"
  [ -n "$p" ] || p="tmh$$"
  valid_prefix "$p"
  local owned=""
  if [ -z "$(namespaces_of "$p")" ]; then
    owned=1
    trap 'down "'"$p"'"' EXIT
    trap 'exit 143' TERM
    trap 'exit 130' INT
    up "$p" "$n"
  else
    n="$(namespaces_of "$p" | grep -c -- '-h[0-9]*$')"
  fi
  local hosts=""
  for ((i = 0; i < n; i++)); do hosts+="${hosts:+,}h$i:$slots"; done
  export TSPTO_NETNS_PREFIX="$p"
  # TCP only (no shared memory), on the namespaces' network only; the daemons' out-of-band
  # channel there too, with TCP keepalive in seconds so that mpirun notices a host whose link
  # went down (Open MPI's default: 300 s idle + 9 x 20 s probes).
  local args=(--allow-run-as-root --oversubscribe -H "$hosts"
    --mca plm_rsh_agent "$SELF agent"
    --mca btl tcp,self --mca btl_tcp_if_include "$NET.0/24" --mca oob_tcp_if_include "$NET.0/24"
    --mca oob_tcp_keepalive_time 1 --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 3)
  local status=0
  ip netns exec "$p-h0" unshare --uts sh -c 'hostname h0 && exec "$@"' mpirun mpirun "${args[@]}" "$@" || status=$?
  local wait_s=6
  if [ -n "$heal" ]; then
    for ((i = 0; i < n; i++)); do link "$p" "$i" up; done
    echo "netns: every link is up again"
    wait_s=30
  fi
  report "$p" "$wait_s" || { [ "$status" = 0 ] && status=3; }
  return "$status"
}

cmd="${1:-}"
shift || true
case "$cmd" in
  check) check ;;
  up) [ $# = 2 ] || die "usage: up <prefix> <hosts>"; up "$@" ;;
  down) [ $# = 1 ] || die "usage: down <prefix>"; down "$1" ;;
  link) [ $# = 3 ] || die "usage: link <prefix> <i> up|down"; link "$@" ;;
  agent) agent "$@" ;;
  mpirun) run_mpirun "$@" ;;
  gc) gc ;;
  *) die "usage: $0 check | up <prefix> <hosts> | down <prefix> | link <prefix> <i> up|down | mpirun [-p <prefix>] [-n <hosts>] [--slots <s>] -- <mpirun args> | gc" ;;
esac
