// What comes back from an etcd endpoint (or whatever listens at its address): the HTTP/1.1
// response parser fed the input in pieces, then the JSON gateway's decoders of a range, a
// transaction and an error given the input as a body. Nothing may crash, hang or leak; an
// error is printable; a parsed body never exceeds the size the parser was given.

#include "lib/etcd/codec.h"
#include "lib/etcd/http.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/fuzz_target.h"

NG_FUZZ_TARGET(etcd_gateway) {
  using namespace nodegate::etcd;
  constexpr size_t kMaxBody = 4096;
  ResponseParser parser(kMaxBody, 4096);
  nodegate::Status fed = nodegate::OkStatus();
  for (size_t i = 0; i < data.size() && fed.ok() && !parser.done(); i += 7) {
    fed = parser.Feed(data.substr(i, 7));
  }
  if (fed.ok() && !parser.done()) fed = parser.Eof();
  if (!fed.ok()) {
    CheckErrorPrints(fed.error());
  } else {
    NG_FUZZ_CHECK(parser.Take().body.size() <= kMaxBody);
  }
  if (auto range = DecodeRangeResponse(data); !range.ok()) CheckErrorPrints(range.error());
  TxnRequest txn;
  txn.success = {RangeRequest{.key = "a"}, PutRequest{"b", "c"}, DeleteRequest{"d", ""}};
  txn.failure = {RangeRequest{.key = "a"}};
  if (auto response = DecodeTxnResponse(data, txn); !response.ok()) {
    CheckErrorPrints(response.error());
  } else {
    NG_FUZZ_CHECK(response->responses.size() ==
                  (response->succeeded ? txn.success.size() : txn.failure.size()));
  }
  if (auto token = DecodeAuthenticateResponse(data); !token.ok()) CheckErrorPrints(token.error());
  const GatewayError error = DecodeGatewayError(503, data);
  NG_FUZZ_CHECK(!error.message.empty());
}
