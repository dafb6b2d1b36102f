#!/usr/bin/env bash
# A throwaway etcd cluster of Debian's etcd-server on loopback, for cluster-ipam's tests
# (tests/cluster_ipam/etcd_cluster.h runs this), make demo and make bench: N members (3 by
# default), TLS on the client and peer ports with a test CA made here (ECDSA P-256, valid two
# days), client certificates required, free ports picked at start, every file under DIR.
# Members are stopped by the PIDs this script records, never by name.
#
#   etcd_cluster.sh start DIR [MEMBERS]   # DIR/endpoints: one https URL per line;
#                                         # DIR/pki/{ca,client,client-nocn}.{crt,key};
#                                         # DIR/m<i>.{pid,log}
#   etcd_cluster.sh plan DIR [MEMBERS]    # as start, but only writes DIR/m<i>.args, each
#                                         # member's command line (one argument per line)
#   etcd_cluster.sh restart DIR I         # member I again, on its ports and data (after kill -9)
#   etcd_cluster.sh stop DIR              # every member: SIGTERM, then SIGKILL after 1 s
#
# ETCD_DATA_ROOT puts the members' data elsewhere than DIR (make bench: a tmpfs beside the
# machine's disk). ETCD_EXTRA_FLAGS is appended to every member's command line. ETCD_PLAIN=1
# adds a plain-HTTP client listener per member on loopback (DIR/endpoints-plain): make bench
# times what TLS costs an exec'd client by comparing the two.
set -euo pipefail

cmd="${1:?usage: etcd_cluster.sh start|plan|restart|stop DIR [ARG]}"
DIR="${2:?usage: etcd_cluster.sh start|plan|restart|stop DIR [ARG]}"

make_pki() {
  local pki="$DIR/pki"
  mkdir -p "$pki"
  (
    cd "$pki"
    openssl ecparam -name prime256v1 -genkey -noout -out ca.key 2>/dev/null
    openssl req -x509 -new -key ca.key -subj /CN=nodegate-test-etcd-ca -days 2 -out ca.crt 2>/dev/null
    for name in server client; do
      openssl ecparam -name prime256v1 -genkey -noout -out "$name.key" 2>/dev/null
      openssl req -new -key "$name.key" -subj "/CN=$name" -out "$name.csr" 2>/dev/null
      if [ "$name" = server ]; then
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n'
      else
        printf 'extendedKeyUsage=clientAuth\n'
      fi >"$name.ext"
      openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
        -extfile "$name.ext" -out "$name.crt" 2>/dev/null
      rm -f "$name.csr" "$name.ext"
    done
    # A client certificate without a CommonName: with etcd's own authentication enabled, etcd
    # 3.4 refuses gateway requests from a certificate that has one (its CN would be ignored).
    openssl ecparam -name prime256v1 -genkey -noout -out client-nocn.key 2>/dev/null
    openssl req -new -key client-nocn.key -subj "/O=nodegate-test" -out client-nocn.csr 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >client-nocn.ext
    openssl x509 -req -in client-nocn.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
      -extfile client-nocn.ext -out client-nocn.crt 2>/dev/null
    rm -f client-nocn.csr client-nocn.ext
    chmod 0600 ./*.key
  )
}

# 2*N free ports on 127.0.0.1: bound all at once (so they differ), then released for etcd.
free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

data_dir() {
  local root="${ETCD_DATA_ROOT:-$DIR}"
  echo "$root/m$1.data"
}

# Member $1's command line, one argument per line (DIR/m<i>.args): what `start` and
# `restart` run, and what tests/cluster_ipam/etcd_cluster.cc runs itself as its own children.
member_args() {
  local i="$1" client_port peer_port plain_port
  read -r client_port peer_port plain_port <"$DIR/m$i.ports"
  local pki="$DIR/pki"
  local listen="https://127.0.0.1:$client_port"
  [ -z "$plain_port" ] || listen="$listen,http://127.0.0.1:$plain_port"
  # shellcheck disable=SC2086  # ETCD_EXTRA_FLAGS is a list of flags
  printf '%s\n' etcd --name "m$i" --data-dir "$(data_dir "$i")" \
    --listen-client-urls "$listen" \
    --advertise-client-urls "https://127.0.0.1:$client_port" \
    --listen-peer-urls "https://127.0.0.1:$peer_port" \
    --initial-advertise-peer-urls "https://127.0.0.1:$peer_port" \
    --initial-cluster "$(cat "$DIR/initial-cluster")" --initial-cluster-state new \
    --initial-cluster-token "$(cat "$DIR/token")" \
    --cert-file "$pki/server.crt" --key-file "$pki/server.key" --trusted-ca-file "$pki/ca.crt" \
    --client-cert-auth --peer-cert-file "$pki/server.crt" --peer-key-file "$pki/server.key" \
    --peer-trusted-ca-file "$pki/ca.crt" --peer-client-cert-auth \
    --logger zap --log-outputs "$DIR/m$i.log" ${ETCD_EXTRA_FLAGS:-}
}

# Ports, tokens and every member's command line (DIR/m<i>.args); removes old member data.
plan() {
  local members="$1" c p h cluster="" per=2
  [ "${ETCD_PLAIN:-0}" != 1 ] || per=3
  read -r -a ports <<<"$(free_ports $((per * members)))"
  : >"$DIR/endpoints"
  : >"$DIR/endpoints-plain"
  for i in $(seq 1 "$members"); do
    c="${ports[$((per * i - per))]}" p="${ports[$((per * i - per + 1))]}" h=""
    [ "$per" = 2 ] || h="${ports[$((per * i - 1))]}"
    echo "$c $p $h" >"$DIR/m$i.ports"
    echo "https://127.0.0.1:$c" >>"$DIR/endpoints"
    [ -z "$h" ] || echo "http://127.0.0.1:$h" >>"$DIR/endpoints-plain"
    cluster="${cluster:+$cluster,}m$i=https://127.0.0.1:$p"
    rm -rf "$(data_dir "$i")"
  done
  echo "$cluster" >"$DIR/initial-cluster"
  echo "ng-$$-$RANDOM-$SECONDS" >"$DIR/token"
  for i in $(seq 1 "$members"); do member_args "$i" >"$DIR/m$i.args"; done
}

# Starts member $1 in the background, in its own session; records its PID.
run_member() {
  local i="$1"
  mapfile -t args <"$DIR/m$i.args"
  setsid "${args[@]}" </dev/null >>"$DIR/m$i.out" 2>&1 &
  echo $! >"$DIR/m$i.pid"
}

ctl() {
  ETCDCTL_API=3 etcdctl --cacert "$DIR/pki/ca.crt" --cert "$DIR/pki/client.crt" \
    --key "$DIR/pki/client.key" --dial-timeout 2s --command-timeout 3s "$@"
}

# Waits until every member answers (endpoint health), at most $1 seconds.
wait_healthy() {
  local limit="$1" start=$SECONDS
  local endpoints
  endpoints="$(paste -sd, "$DIR/endpoints")"
  until ctl --endpoints "$endpoints" endpoint health >/dev/null 2>&1; do
    if [ $((SECONDS - start)) -ge "$limit" ]; then
      echo "etcd_cluster: not healthy after ${limit}s" >&2
      ctl --endpoints "$endpoints" endpoint health >&2 || true
      return 1
    fi
    sleep 0.2
  done
}

stop_all() {
  local f pid
  for f in "$DIR"/m*.pid; do
    [ -e "$f" ] || continue
    pid="$(cat "$f")"
    kill -CONT "$pid" 2>/dev/null || true
    kill -TERM "$pid" 2>/dev/null || true
  done
  for f in "$DIR"/m*.pid; do
    [ -e "$f" ] || continue
    pid="$(cat "$f")"
    for _ in $(seq 10); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$f"
  done
}

case "$cmd" in
  start)
    members="${3:-3}"
    mkdir -p "$DIR"
    [ -f "$DIR/pki/ca.crt" ] || make_pki
    # Another process may take a port between its pick and etcd's bind: pick again then.
    for try in 1 2 3; do
      plan "$members"
      for i in $(seq 1 "$members"); do run_member "$i"; done
      if wait_healthy 30; then exit 0; fi
      if ! grep -qs "address already in use" "$DIR"/m*.log "$DIR"/m*.out; then break; fi
      echo "etcd_cluster: a port was taken meanwhile; try $((try + 1))" >&2
      stop_all
    done
    stop_all
    tail -n 5 "$DIR"/m*.out >&2 2>/dev/null || true
    exit 1
    ;;
  plan)
    mkdir -p "$DIR"
    [ -f "$DIR/pki/ca.crt" ] || make_pki
    plan "${3:-3}"
    ;;
  restart)
    i="${3:?member number}"
    run_member "$i"
    ;;
  stop)
    stop_all
    ;;
  *)
    echo "etcd_cluster: unknown command $cmd" >&2
    exit 2
    ;;
esac
