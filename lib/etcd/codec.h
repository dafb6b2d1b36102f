#pragma once
// The JSON encoding of etcd's v3 API on its gateway (POST /v3/kv/range, /v3/kv/txn,
// /v3/auth/authenticate), as etcd 3.4 speaks it (measured on Debian's 3.4.23):
//   - field names are the proto names (key, range_end, create_revision, request_put...);
//   - keys and values are base64; int64 travels as a JSON string ("mod_revision":"155"),
//     and is read back from a string or a number;
//   - proto3 defaults are left out: a failed transaction has no "succeeded", a key without a
//     value no "value", an empty range no "kvs";
//   - an error is a non-200 status with {"error": text, "code": gRPC code, "message": text}.
// Pure functions (no I/O), so each rule is unit-tested (codec_test.cc).

#include <string>
#include <string_view>

#include "lib/base/result.h"
#include "lib/etcd/kv.h"

namespace nodegate::etcd {

std::string EncodeRange(const RangeRequest& request);
std::string EncodeTxn(const TxnRequest& request);
std::string EncodeAuthenticate(std::string_view name, std::string_view password);

// Decoders of a 200 response's body. Errors (code 5) say what was malformed: a gateway that
// answers something else is not etcd.
Result<RangeResponse> DecodeRangeResponse(std::string_view body);
// `request` tells which response each op has (the gateway names them, but a missing name
// means an empty response of the op's kind).
Result<TxnResponse> DecodeTxnResponse(std::string_view body, const TxnRequest& request);
Result<std::string> DecodeAuthenticateResponse(std::string_view body);

// gRPC status codes etcd's gateway reports (google.golang.org/grpc/codes).
enum class GrpcCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kFailedPrecondition = 9,
  kResourceExhausted = 8,
  kUnavailable = 14,
  kUnauthenticated = 16,
  kPermissionDenied = 7,
};

struct GatewayError {
  int http_status = 0;
  int code = -1;        // the gRPC code, -1 when the body had none
  std::string message;  // etcd's text, e.g. "etcdserver: leader changed"
  // Worth retrying on another member: the member has no leader, lost it, or timed out.
  bool retryable() const;
  // The token is missing, expired or unknown to this member: authenticate again.
  bool unauthenticated() const;
};

// Reads the error of a non-200 response (any body: a proxy's HTML page too).
GatewayError DecodeGatewayError(int http_status, std::string_view body);

}  // namespace nodegate::etcd
