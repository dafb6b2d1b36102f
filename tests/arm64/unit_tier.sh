#!/usr/bin/env bash
# The unit tier of a cross build (make test's arm64 stage, issue 33): every test labelled unit
# of ARM64_DIR, each test binary run by CTest through qemu-user (CMAKE_CROSSCOMPILING_EMULATOR),
# inside a user namespace whose own binfmt_misc also runs the arm64 executables those tests
# exec (nodegate, the plugins: with_arch_binfmt, scripts/lib/arch.sh; nothing is registered on
# the machine).
#
# What qemu's user mode cannot emulate is left out, by name, and runs on amd64 only; each case
# is reported as skipped for that reason (scripts/run-test.py: NODEGATE_SKIP_CASES), which
# tests/allowed_skips.txt accepts under CI:
#   DetachedWork.*: sys::SpawnDetached clones with CLONE_VM and no CLONE_THREAD, which
#     qemu-user refuses (EINVAL), and the test's seccomp filters cannot be installed under it;
#   ReadLiveClaims.AFewPortsAreAskedForByKey, .ManyPorts..., and nodegate_cli_test's
#     Reports.test_ports (`nodegate ports` itself): they read this namespace's sockets through
#     NETLINK_SOCK_DIAG, a netlink family qemu-user refuses.
#
#   tests/arm64/unit_tier.sh ARM64_DIR
set -euo pipefail
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=../../scripts/lib/arch.sh
source "$SRC/scripts/lib/arch.sh"  # with_arch_binfmt
BUILD="$(cd "${1:?usage: unit_tier.sh ARM64_DIR}" && pwd)"
JOBS="${JOBS:-$(nproc)}"
ARCH="$(sed -n 's/^NODEGATE_ARCH:[A-Z]*=//p' "$BUILD/CMakeCache.txt")"
[ -n "$ARCH" ] || { echo "unit_tier.sh: $BUILD is not a cross build (no NODEGATE_ARCH)" >&2; exit 2; }
UNEMULATED="DetachedWork.*:ReadLiveClaims.AFewPortsAreAskedForByKey"
UNEMULATED+=":ReadLiveClaims.ManyPortsReadTheSourceWholeAndKeepOnlyThoseAsked"
UNEMULATED+=":Reports.test_ports"
echo "arm64 unit tier of $BUILD ($ARCH under qemu-user); left out: $UNEMULATED"
# Counted when a driver's stage runs it (scripts/lib/stages.sh: counted_stage sets NG_JUNIT).
report=()
[ -z "${NG_JUNIT:-}" ] || report=(--output-junit "$NG_JUNIT")
with_arch_binfmt "$ARCH" env NODEGATE_SKIP_CASES="$UNEMULATED" \
  NODEGATE_SKIP_REASON="qemu-user cannot emulate it (tests/arm64/unit_tier.sh)" \
  ctest --test-dir "$BUILD" --no-tests=error --output-on-failure -L '^unit$' -j "$JOBS" "${report[@]}"
