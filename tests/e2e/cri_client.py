#!/usr/bin/python3
"""A tiny CRI client for tests/e2e/containerd_e2e.sh: the few RuntimeService calls a kubelet
makes for a pod sandbox, spoken over gRPC on containerd's unix socket.

The protobuf messages are encoded and decoded by hand (varints and length-delimited fields), so
the project carries no .proto file and no generated code. The field numbers are those of the
CRI API, k8s.io/cri-api pkg/apis/runtime/v1/api.proto (package runtime.v1):

  RunPodSandboxRequest     config=1 (PodSandboxConfig)
  PodSandboxConfig         metadata=1, hostname=2, port_mappings=5 (repeated),
                           annotations=7 (map), linux=8
  PodSandboxMetadata       name=1, uid=2, namespace=3, attempt=4
  PortMapping              protocol=1 (TCP=0, UDP=1, SCTP=2), container_port=2, host_port=3,
                           host_ip=4
  LinuxPodSandboxConfig    cgroup_parent=1, security_context=2 -> LinuxSandboxSecurityContext
                           namespace_options=1 -> NamespaceOption network=1 (POD=0)
  RunPodSandboxResponse    pod_sandbox_id=1
  Stop/RemovePodSandboxRequest, PodSandboxStatusRequest   pod_sandbox_id=1 (status: verbose=2)
  PodSandboxStatusResponse status=1 (PodSandboxStatus), info=2 (map)
  PodSandboxStatus         id=1, state=3 (READY=0, NOTREADY=1), network=5 -> ip=1
  ListPodSandboxResponse   items=1 (PodSandbox: id=1, state=3)
  VersionResponse          version=1, runtime_name=2, runtime_version=3, runtime_api_version=4

A map<string,string> is a repeated message {key=1, value=2}.

Usage: cri_client.py SOCKET COMMAND [ARGS]
  version
  run --name N --uid U --namespace NS [--cgroup-parent /P]
      [--port PROTO:HOST:CONTAINER[@HOSTIP]]... [--annotation K=V]...
      prints the sandbox ID; PROTO is tcp, udp or sctp, HOSTIP the mapping's host_ip (unset:
      every address, as a pod spec without hostIP)
  status ID...  prints one JSON line per ID: id, state, ip, pid, netns (the last two from the
              verbose info)
  stop ID | remove ID
  list        prints the IDs of all sandboxes, one a line
"""

import argparse
import json
import sys

import grpc

SERVICE = "/runtime.v1.RuntimeService/"

# --- encoding ---------------------------------------------------------------------------------


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1  # negative int32/int64 are sent as 10-byte two's complement
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def f_varint(field, n):  # wire type 0; also written when 0, which proto3 readers accept
    return varint(field << 3 | 0) + varint(n)


def f_bytes(field, data):  # wire type 2: strings and embedded messages
    if isinstance(data, str):
        data = data.encode()
    return varint(field << 3 | 2) + varint(len(data)) + data


def f_map(field, mapping):
    return b"".join(f_bytes(field, f_bytes(1, k) + f_bytes(2, v)) for k, v in mapping.items())


# --- decoding: {field: [values]}, values are ints (varint) or bytes (length-delimited) --------


def parse(data):
    fields, i = {}, 0
    while i < len(data):
        key, i = read_varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = read_varint(data, i)
        elif wire == 2:
            length, i = read_varint(data, i)
            value, i = data[i:i + length], i + length
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        fields.setdefault(field, []).append(value)
    return fields


def read_varint(data, i):
    shift = n = 0
    while True:
        b = data[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def one(fields, field, default=None):
    return fields.get(field, [default])[0]


def text(fields, field):
    return one(fields, field, b"").decode()


def read_map(fields, field):
    out = {}
    for entry in fields.get(field, []):
        e = parse(entry)
        out[text(e, 1)] = text(e, 2)
    return out


# --- calls ------------------------------------------------------------------------------------

PROTOCOLS = {"tcp": 0, "udp": 1, "sctp": 2}
STATES = {0: "SANDBOX_READY", 1: "SANDBOX_NOTREADY"}


def call(channel, method, request):
    stub = channel.unary_unary(SERVICE + method, request_serializer=None,
                               response_deserializer=None)
    return parse(stub(request, timeout=120))


def run_request(args):
    metadata = f_bytes(1, args.name) + f_bytes(2, args.uid) + f_bytes(3, args.namespace) + \
        f_varint(4, 0)
    ports = b""
    for spec in args.port:  # tcp:HOST:CONTAINER[@HOSTIP]
        spec, _, host_ip = spec.partition("@")
        proto, host, container = spec.split(":")
        mapping = f_varint(1, PROTOCOLS[proto]) + f_varint(2, int(container)) + \
            f_varint(3, int(host))
        if host_ip:  # proto3: an unset string is an absent field, as the kubelet sends it
            mapping += f_bytes(4, host_ip)
        ports += f_bytes(5, mapping)
    annotations = dict(a.split("=", 1) for a in args.annotation)
    namespace_options = f_varint(1, 0)  # network: POD
    linux = f_bytes(1, args.cgroup_parent) + f_bytes(2, f_bytes(1, namespace_options))
    config = f_bytes(1, metadata) + f_bytes(2, args.name) + ports + f_map(7, annotations) + \
        f_bytes(8, linux)
    return f_bytes(1, config)


def sandbox_status(channel, sandbox):
    r = call(channel, "PodSandboxStatus", f_bytes(1, sandbox) + f_varint(2, 1))
    status = parse(one(r, 1, b""))
    network = parse(one(status, 5, b""))
    # containerd's verbose info: {"info": "{\"pid\": ..., \"runtimeSpec\": {...}}"}
    info = json.loads(read_map(r, 2).get("info", "{}"))
    netns = ""
    for ns in info.get("runtimeSpec", {}).get("linux", {}).get("namespaces", []):
        if ns.get("type") == "network":
            netns = ns.get("path", "")
    return {"id": text(status, 1), "state": STATES.get(one(status, 3, 0)),
            "ip": text(network, 1), "pid": info.get("pid", 0), "netns": netns}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("version")
    sub.add_parser("list")
    run = sub.add_parser("run")
    run.add_argument("--name", required=True)
    run.add_argument("--uid", required=True)
    run.add_argument("--namespace", required=True)
    run.add_argument("--cgroup-parent", default="")
    run.add_argument("--port", action="append", default=[])
    run.add_argument("--annotation", action="append", default=[])
    sub.add_parser("status").add_argument("id", nargs="+")
    for name in ("stop", "remove"):
        sub.add_parser(name).add_argument("id")
    args = ap.parse_args()

    with grpc.insecure_channel("unix://" + args.socket) as channel:
        if args.cmd == "version":
            r = call(channel, "Version", f_bytes(1, "v1"))
            print(json.dumps({"version": text(r, 1), "runtime_name": text(r, 2),
                              "runtime_version": text(r, 3),
                              "runtime_api_version": text(r, 4)}))
        elif args.cmd == "run":
            print(text(call(channel, "RunPodSandbox", run_request(args)), 1))
        elif args.cmd == "status":
            for sandbox in args.id:
                print(json.dumps(sandbox_status(channel, sandbox)))
        elif args.cmd == "stop":
            call(channel, "StopPodSandbox", f_bytes(1, args.id))
        elif args.cmd == "remove":
            call(channel, "RemovePodSandbox", f_bytes(1, args.id))
        elif args.cmd == "list":
            r = call(channel, "ListPodSandbox", b"")
            for item in r.get(1, []):
                print(text(parse(item), 1))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except grpc.RpcError as e:
        print(f"cri_client: {e.code().name}: {e.details()}", file=sys.stderr)
        sys.exit(1)
