#include "lib/etcd/codec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace nodegate::etcd {
namespace {

using Json = nlohmann::json;

TEST(PrefixEnd, IncrementsTheLastByteBelowFf) {
  EXPECT_EQ(PrefixEnd("/a/"), "/a0");
  EXPECT_EQ(PrefixEnd(std::string("a\xff", 2)), "b");
  EXPECT_EQ(PrefixEnd(std::string("\xff\xff", 2)), std::string(1, '\0'));
  EXPECT_EQ(PrefixEnd(""), std::string(1, '\0'));
}

TEST(EncodeTxn, GatewayFieldsBase64AndStrings) {
  TxnRequest txn;
  txn.compare.push_back(Compare::Absent("/k"));
  txn.compare.push_back(Compare::ModRevision("/b", 155));
  Compare value{"/p", Compare::Target::kValue, Compare::Op::kNotEqual, 0, "x"};
  txn.compare.push_back(value);
  txn.success.push_back(PutRequest{"/k", "v"});
  txn.success.push_back(DeleteRequest{"/d", ""});
  txn.failure.push_back(RangeRequest{
      .key = "/n/", .range_end = PrefixEnd("/n/"), .keys_only = true, .serializable = true});
  const Json j = Json::parse(EncodeTxn(txn));
  EXPECT_EQ(
      j["compare"][0],
      Json::parse(R"({"key":"L2s=","target":"CREATE","result":"EQUAL","create_revision":"0"})"));
  EXPECT_EQ(j["compare"][1],
            Json::parse(R"({"key":"L2I=","target":"MOD","result":"EQUAL","mod_revision":"155"})"));
  EXPECT_EQ(j["compare"][2],
            Json::parse(R"({"key":"L3A=","target":"VALUE","result":"NOT_EQUAL","value":"eA=="})"));
  EXPECT_EQ(j["success"][0], Json::parse(R"({"request_put":{"key":"L2s=","value":"dg=="}})"));
  EXPECT_EQ(j["success"][1], Json::parse(R"({"request_delete_range":{"key":"L2Q="}})"));
  EXPECT_EQ(j["failure"][0], Json::parse(R"({"request_range":{"key":"L24v","range_end":"L24w",
                                             "keys_only":true,"serializable":true}})"));
}

// Bodies as etcd 3.4.23's gateway printed them (curl against a 3-member cluster).
TEST(DecodeTxnResponse, SucceededWithEveryKindOfResponse) {
  TxnRequest txn;
  txn.success = {PutRequest{"a", ""}, DeleteRequest{"b", ""}, RangeRequest{.key = "a"}};
  auto r = DecodeTxnResponse(
      R"({"header":{"cluster_id":"7213139366578929061","member_id":"16110336368900671362","revision":"3","raft_term":"2"},"succeeded":true,"responses":[{"response_put":{"header":{"revision":"3"}}},{"response_delete_range":{"header":{"revision":"3"}}},{"response_range":{"header":{"revision":"3"},"kvs":[{"key":"YQ==","create_revision":"3","mod_revision":"3","version":"1"}],"count":"1"}}]})",
      txn);
  ASSERT_TRUE(r.ok()) << r.error().msg;
  EXPECT_TRUE(r->succeeded);
  EXPECT_EQ(r->revision, 3);
  ASSERT_EQ(r->responses.size(), 3u);
  EXPECT_EQ(std::get<DeleteResponse>(r->responses[1]).deleted, 0);
  const RangeResponse* range = r->RangeAt(2);
  ASSERT_NE(range, nullptr);
  ASSERT_EQ(range->kvs.size(), 1u);
  EXPECT_EQ(range->kvs[0], (KeyValue{"a", "", 3, 3, 1}));
}

TEST(DecodeTxnResponse, FailedHasNoSucceededAndAnsweredTheFailureBranch) {
  TxnRequest txn;
  txn.success = {PutRequest{"a", "1"}};
  txn.failure = {RangeRequest{.key = "x", .count_only = true}};
  auto r = DecodeTxnResponse(
      R"({"header":{"revision":"3"},"responses":[{"response_range":{"header":{"revision":"3"},"count":"2"}}]})",
      txn);
  ASSERT_TRUE(r.ok()) << r.error().msg;
  EXPECT_FALSE(r->succeeded);
  EXPECT_EQ(r->RangeAt(0)->count, 2);
  EXPECT_TRUE(r->RangeAt(0)->kvs.empty());
}

TEST(DecodeTxnResponse, RefusesWhatEtcdNeverSends) {
  TxnRequest txn;
  txn.success = {PutRequest{"a", "1"}};
  const char* bad[] = {
      "not json",
      "[]",
      R"({"succeeded":true})",                      // no response to the put
      R"({"succeeded":true,"responses":[{},{}]})",  // two responses to one op
      R"({"succeeded":"yes","responses":[{}]})",    // not a boolean
      R"({"header":{"revision":"x3"},"succeeded":true,"responses":[{}]})",
      R"({"succeeded":true,"responses":[{"response_put":[]}]})",
  };
  for (const char* body : bad) {
    auto r = DecodeTxnResponse(body, txn);
    EXPECT_FALSE(r.ok()) << body;
    if (!r.ok()) {
      EXPECT_EQ(r.error().code, kErrIo);
    }
  }
}

TEST(DecodeRangeResponse, KeyValuesAndNumbersAsStringsOrNumbers) {
  auto r = DecodeRangeResponse(
      R"({"header":{"revision":9},"kvs":[{"key":"YQ==","value":"YmFy","create_revision":"2","mod_revision":5,"version":"3"}],"count":"1","more":true})");
  ASSERT_TRUE(r.ok()) << r.error().msg;
  EXPECT_EQ(r->revision, 9);
  EXPECT_TRUE(r->more);
  EXPECT_EQ(r->kvs[0], (KeyValue{"a", "bar", 2, 5, 3}));
  EXPECT_FALSE(DecodeRangeResponse(R"({"kvs":[{"key":"!!"}]})").ok());
  EXPECT_FALSE(DecodeRangeResponse(R"({"kvs":{"key":"YQ=="}})").ok());
}

TEST(DecodeGatewayError, EtcdErrorsAndOthers) {
  GatewayError e = DecodeGatewayError(
      503,
      R"({"error":"etcdserver: leader changed","message":"etcdserver: leader changed","code":14})");
  EXPECT_EQ(e.code, 14);
  EXPECT_EQ(e.message, "etcdserver: leader changed");
  EXPECT_TRUE(e.retryable());
  e = DecodeGatewayError(400, R"({"error":"unknown value","code":3})");
  EXPECT_FALSE(e.retryable());
  e = DecodeGatewayError(401, R"({"error":"etcdserver: invalid auth token","code":16})");
  EXPECT_TRUE(e.unauthenticated());
  e = DecodeGatewayError(502, std::string("<html>\x01") + "bad gateway</html>");
  EXPECT_TRUE(e.retryable());
  EXPECT_EQ(e.message, "HTTP 502: <html> bad gateway</html>");
}

TEST(DecodeAuthenticateResponse, Token) {
  auto t = DecodeAuthenticateResponse(R"({"header":{},"token":"abc.42"})");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, "abc.42");
  EXPECT_FALSE(DecodeAuthenticateResponse(R"({"header":{}})").ok());
}

}  // namespace
}  // namespace nodegate::etcd
