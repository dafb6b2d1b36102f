#!/usr/bin/env bash
# How the workload objects in this folder were made (kubectl 1.32, offline: --dry-run=client).
# The tests turn each workload's pod template into pods as its controller would (the
# ReplicaSet and Job controllers copy a template's nodeName into every pod) and add the
# requests and host ports a case needs. Nodes come from tests/admit/testdata. Run it again
# only to refresh the files; the tests never call kubectl.
set -euo pipefail
cd "$(dirname "$0")"
kubectl create deployment web -n shop --image=nginx:1.27 --port=80 --dry-run=client -o json >web-deployment.json
kubectl create deployment coredns -n kube-system --image=registry.k8s.io/coredns/coredns:v1.11.1 \
  --port=53 --dry-run=client -o json >coredns-deployment.json
kubectl create job report -n batch --image=busybox:1.36 --dry-run=client -o json \
  -- sh -c 'sleep 60' >report-job.json
