#include "webhook/review/review.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace nodegate::webhook {
namespace {

using nlohmann::json;

json Review() {
  return json::parse(R"({
    "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
    "request": {
      "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
      "kind": {"group": "", "version": "v1", "kind": "Pod"},
      "resource": {"group": "", "version": "v1", "resource": "pods"},
      "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
      "requestResource": {"group": "", "version": "v1", "resource": "pods"},
      "name": "web", "namespace": "team",
      "operation": "CREATE",
      "userInfo": {"username": "alice", "uid": "1", "groups": ["system:authenticated"],
                   "extra": {}},
      "object": {"metadata": {"name": "web"}, "spec": {"nodeName": "worker-1"}},
      "oldObject": null,
      "dryRun": true,
      "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
    }})");
}

TEST(DecodeReview, ReadsEveryFieldTheJudgeUses) {
  auto r = DecodeReview(Review().dump());
  ASSERT_TRUE(r.ok()) << r.error().msg;
  EXPECT_EQ(r->uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_EQ(r->kind, "Pod");
  EXPECT_EQ(r->resource, "pods");
  EXPECT_EQ(r->sub_resource, "");
  EXPECT_EQ(r->name, "web");
  EXPECT_EQ(r->namespace_name, "team");
  EXPECT_EQ(r->operation, "CREATE");
  EXPECT_EQ(r->username, "alice");
  EXPECT_EQ(r->groups, std::vector<std::string>{"system:authenticated"});
  EXPECT_TRUE(r->dry_run);
  EXPECT_EQ(r->object["spec"]["nodeName"], "worker-1");
}

TEST(DecodeReview, OtherGroupsAreNotPods) {
  json review = Review();
  review["request"]["kind"]["group"] = "example.com";
  auto r = DecodeReview(review.dump());
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->kind, "Pod");
}

TEST(DecodeReview, RefusesWhatIsNotAReview) {
  struct Case {
    const char* name;
    std::string body;
    const char* error;
  };
  json wrong_version = Review();
  wrong_version["apiVersion"] = "admission.k8s.io/v1beta1";
  json no_request = Review();
  no_request.erase("request");
  json no_uid = Review();
  no_uid["request"].erase("uid");
  json bad_groups = Review();
  bad_groups["request"]["userInfo"]["groups"] = "system:nodes";
  json bad_dry_run = Review();
  bad_dry_run["request"]["dryRun"] = "true";
  const Case cases[] = {
      {"empty", "", "expected a JSON object"},
      {"array", "[]", "expected a JSON object"},
      {"yaml", "apiVersion: admission.k8s.io/v1", "expected a JSON object"},
      {"truncated", Review().dump().substr(0, 100), "invalid JSON"},
      {"deep", std::string(100, '{') + std::string(100, '}'), "nesting deeper"},
      {"v1beta1", wrong_version.dump(), "expected apiVersion admission.k8s.io/v1"},
      {"no request", no_request.dump(), "no request"},
      {"no uid", no_uid.dump(), "request.uid: missing"},
      {"groups", bad_groups.dump(), "groups: expected array"},
      {"dryRun", bad_dry_run.dump(), "dryRun: expected boolean"},
      {"too large", "{" + std::string(kMaxReviewBytes, ' ') + "}", "larger than 3 MiB"},
  };
  for (const Case& c : cases) {
    auto r = DecodeReview(c.body);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_NE(r.error().msg.find(c.error), std::string::npos) << c.name << ": " << r.error().msg;
  }
}

TEST(EncodeReviewResponse, AllowedEchoesUidWithoutStatusOrPatch) {
  ReviewResponse response;
  response.uid = "u-1";
  const json j = json::parse(EncodeReviewResponse(response));
  EXPECT_EQ(j["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(j["kind"], "AdmissionReview");
  EXPECT_EQ(j["response"]["uid"], "u-1");
  EXPECT_EQ(j["response"]["allowed"], true);
  EXPECT_FALSE(j["response"].contains("status"));
  EXPECT_FALSE(j["response"].contains("patch"));
  EXPECT_FALSE(j["response"].contains("patchType"));
  EXPECT_FALSE(j["response"].contains("warnings"));
}

TEST(EncodeReviewResponse, DenialCarriesAStatusOfAtLeast400) {
  ReviewResponse response;
  response.uid = "u-2";
  response.allowed = false;
  response.code = 200;  // never below 400 on a denial
  response.reason = "NodePorts";
  response.message = "held by kube-system/dns";
  response.warnings = {std::string(300, 'w')};
  const json j = json::parse(EncodeReviewResponse(response));
  EXPECT_EQ(j["response"]["allowed"], false);
  EXPECT_EQ(j["response"]["status"]["code"], 400);
  EXPECT_EQ(j["response"]["status"]["status"], "Failure");
  EXPECT_EQ(j["response"]["status"]["reason"], "NodePorts");
  EXPECT_EQ(j["response"]["status"]["message"], "held by kube-system/dns");
  EXPECT_EQ(j["response"]["warnings"][0].get<std::string>().size(), kMaxWarningBytes);
}

// Names come from the pod as bytes. What is not UTF-8 becomes U+FFFD (EF BF BD), one for each
// byte that starts no character (FF, FE, C0, AF) and one for a character cut short (E2 82):
// the answer stays JSON the API server decodes, every valid character kept.
TEST(EncodeReviewResponse, InvalidUtf8BecomesReplacementCharacters) {
  ReviewResponse response;
  response.uid = "u-3";
  response.allowed = false;
  response.code = 403;
  response.reason = "cut \xE2\x82 euro \xE2\x82\xAC";
  response.message = "pod \xff\xfe";
  response.warnings = {"overlong \xC0\xAF"};
  EXPECT_EQ(EncodeReviewResponse(response),
            R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{)"
            R"("allowed":false,"status":{"code":403,)"
            "\"message\":\"pod \xEF\xBF\xBD\xEF\xBF\xBD\","
            R"("metadata":{},)"
            "\"reason\":\"cut \xEF\xBF\xBD euro \xE2\x82\xAC\","
            R"("status":"Failure"},"uid":"u-3",)"
            "\"warnings\":[\"overlong \xEF\xBF\xBD\xEF\xBF\xBD\"]}}");
}

TEST(FitWarning, CutsOnACharacterBoundaryAndFlattensControls) {
  EXPECT_EQ(FitWarning("a\nb\tc"), "a b c");
  std::string euros;
  for (int i = 0; i < 60; ++i) {
    euros += "\xE2\x82\xAC";  // three bytes each
  }
  const std::string cut = FitWarning(euros);
  EXPECT_LE(cut.size(), kMaxWarningBytes);
  EXPECT_EQ(cut.substr(cut.size() - 3), "...");
  EXPECT_EQ((cut.size() - 3) % 3, 0u);
  EXPECT_EQ(FitWarning(std::string(120, 'x')), std::string(120, 'x'));
}

}  // namespace
}  // namespace nodegate::webhook
