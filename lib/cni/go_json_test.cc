// Go's encoding/json rules as lib/cni/go_json.h applies them. Each expectation is what Go 1.19+
// decoding into the equivalent struct gives.
#include "lib/cni/go_json.h"

#include <gtest/gtest.h>

#include <string>

namespace nodegate::cni::gojson {
namespace {

// type entry struct { HostPort int `json:"hostPort"`; HostIP string `json:"hostIP"` }
// type conf struct {
//   Snat *bool `json:"snat"`; Name string `json:"name"`
//   RuntimeConfig struct { PortMappings []entry `json:"portMappings"`; Extra string }
//   `json:"runtimeConfig"` Caps map[string]bool `json:"capabilities"`
// }
Shape ConfShape() {
  const Shape entry = Struct({{"hostPort", Any(), Null::kKeep}, {"hostIP", Any(), Null::kKeep}});
  return Struct({
      {"snat", Any()},
      {"name", Any(), Null::kKeep},
      {"runtimeConfig", Struct({{"portMappings", ListOf(entry)}, {"Extra", Any(), Null::kKeep}}),
       Null::kKeep},
      {"capabilities", MapOf(Any())},
  });
}

Json Must(std::string_view text) {
  auto decoded = Decode(text, ConfShape());
  EXPECT_TRUE(decoded.ok()) << (decoded.ok() ? "" : decoded.error().msg);
  return decoded.ok() ? *decoded : Json();
}

TEST(GoJsonKeys, ExactAndCaseInsensitiveKeysReachTheField) {
  const Json j = Must(R"({"runtimeConfig": {"portMappings": [
      {"HostPort": 8080, "HOSTIP": "10.0.0.1"}, {"hostport": 81}]}})");
  const Json& list = j["runtimeConfig"]["portMappings"];
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0], Json::parse(R"({"hostPort": 8080, "hostIP": "10.0.0.1"})"));
  EXPECT_EQ(list[1], Json::parse(R"({"hostPort": 81})"));
  EXPECT_EQ(Must(R"({"RuntimeConfig": {"PortMappings": []}})")["runtimeConfig"]["portMappings"],
            Json::array());
}

TEST(GoJsonKeys, GoFoldingAcceptsKelvinAndLongSOnly) {
  EXPECT_TRUE(KeyMatchesField("SNAT", "snat"));
  EXPECT_TRUE(KeyMatchesField("\xC5\xBFnat", "snat"));      // U+017F LATIN SMALL LONG S
  EXPECT_TRUE(KeyMatchesField("mar\xE2\x84\xAA", "mark"));  // U+212A KELVIN SIGN
  EXPECT_FALSE(KeyMatchesField("\xC3\x9Fnat", "snat"));     // U+00DF is not s
  EXPECT_FALSE(KeyMatchesField("snat ", "snat"));
  EXPECT_FALSE(KeyMatchesField("sna", "snat"));
  EXPECT_FALSE(KeyMatchesField("host_port", "hostPort"));
  EXPECT_FALSE(KeyMatchesField("\xC5", "snat"));  // a lone lead byte
}

TEST(GoJsonKeys, UnknownKeysStayAsTheyAre) {
  const Json j = Must(R"({"Unknown": {"HostPort": 1}, "name": "n"})");
  EXPECT_EQ(j["Unknown"], Json::parse(R"({"HostPort": 1})"));  // not a field: not folded below
}

TEST(GoJsonKeys, TheLastKeyForAFieldWinsInDocumentOrder) {
  EXPECT_EQ(Must(R"({"name": "a", "NAME": "b"})")["name"], "b");
  EXPECT_EQ(Must(R"({"NAME": "b", "name": "a"})")["name"], "a");
  EXPECT_EQ(Must(R"({"Name": "1", "name": "2", "Name": "3"})")["name"], "3");
}

TEST(GoJsonKeys, NullResetsPointersAndKeepsValues) {
  EXPECT_FALSE(Must(R"({"snat": false, "SNAT": null})").contains("snat"));
  EXPECT_EQ(Must(R"({"name": "a", "Name": null})")["name"], "a");
  EXPECT_FALSE(Must(R"({"name": null})").contains("name"));
}

TEST(GoJsonKeys, RepeatedStructAndMapFieldsMerge) {
  const Json j = Must(R"({"runtimeConfig": {"Extra": "x"},
                          "RuntimeConfig": {"portMappings": [{"hostPort": 1}]},
                          "capabilities": {"a": true}, "Capabilities": {"b": true}})");
  EXPECT_EQ(j["runtimeConfig"]["Extra"], "x");
  EXPECT_EQ(j["runtimeConfig"]["portMappings"].size(), 1u);
  EXPECT_EQ(j["capabilities"], Json::parse(R"({"a": true, "b": true})"));
}

TEST(GoJsonKeys, RepeatedSlicesAreOverwrittenElementByElement) {
  // Go decodes the second list into the first one's elements, then cuts it to length.
  const Json j = Must(R"({"runtimeConfig": {"portMappings": [{"hostPort": 80, "hostIP": "a"},
                                                             {"hostPort": 90}]},
                          "RuntimeConfig": {"PortMappings": [{"hostPort": 81}]}})");
  EXPECT_EQ(j["runtimeConfig"]["portMappings"],
            Json::parse(R"([{"hostPort": 81, "hostIP": "a"}])"));
  EXPECT_EQ(Must(R"({"runtimeConfig": {"portMappings": [{"hostPort": 1}], "portMappings": []}})")
                ["runtimeConfig"]["portMappings"],
            Json::array());
}

TEST(GoJsonKeys, NullOfAnEmbeddedPointerFieldCountsAsGiven) {
  const Shape shape = Struct({{"ingressRate", Any(), Null::kAsZero}});
  EXPECT_EQ(*Decode(R"({"IngressRate": null})", shape), Json::parse(R"({"ingressRate": null})"));
  EXPECT_EQ(*Decode(R"({"ingressRate": 5, "IngressRate": null})", shape),
            Json::parse(R"({"ingressRate": 5})"));
}

TEST(GoJsonKeys, MapKeysAreExact) {
  const Json j = Must(R"({"capabilities": {"PortMappings": true, "portMappings": false}})");
  EXPECT_EQ(j["capabilities"], Json::parse(R"({"PortMappings": true, "portMappings": false})"));
}

TEST(GoJsonKeys, EmbeddedFieldsAreHiddenByOuterOnes) {
  const Shape inner = Struct({{"type", Any()}, {"subnet", Any()}});
  const Shape outer = Embed({inner}, {{"type", ListOf(Any())}});
  ASSERT_EQ(outer.fields.size(), 2u);
  EXPECT_EQ(outer.FindField("TYPE")->shape.kind, Shape::Kind::kList);
  EXPECT_EQ(outer.FindField("Subnet")->name, "subnet");
}

TEST(GoJsonValues, NumbersKeepTheirKindForTheFieldParser) {
  const Json j = Must(R"({"runtimeConfig": {"portMappings": [
      {"hostPort": 8080.0}, {"hostPort": 1e3}, {"hostPort": 18446744073709551615}]}})");
  const Json& list = j["runtimeConfig"]["portMappings"];
  EXPECT_TRUE(list[0]["hostPort"].is_number_float());
  EXPECT_TRUE(list[1]["hostPort"].is_number_float());
  EXPECT_TRUE(list[2]["hostPort"].is_number_unsigned());
}

TEST(GoJsonValues, HostileDocumentsAreErrorsNotCrashes) {
  auto huge = Decode(R"({"hostPort": 1e400})", ConfShape(), "ctx");
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.error().code, 6);
  EXPECT_EQ(huge.error().msg, "ctx: number 1e400 is out of range");

  auto deep = Decode(std::string(100000, '['), ConfShape());
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.error().msg.find("exceeded max depth"), std::string::npos);
  // Go's limit is 10,000 levels: exactly that many still decode.
  const std::string ok_depth = std::string(kMaxDepth, '[') + std::string(kMaxDepth, ']');
  EXPECT_TRUE(Decode(ok_depth, ConfShape()).ok());

  auto broken = Decode(R"({"name": )", ConfShape(), "ctx");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error().msg.rfind("ctx: parse error", 0), 0u) << broken.error().msg;
}

TEST(GoJsonValues, InvalidUtf8InStringsBecomesReplacementCharacters) {
  const Json j = Must(
      "{\"name\": \"a\xff\xfe"
      "b\", \"x\xc3\": 1}");
  EXPECT_EQ(j["name"],
            "a\xEF\xBF\xBD\xEF\xBF\xBD"
            "b");
  EXPECT_TRUE(j.contains("x\xEF\xBF\xBD"));
  EXPECT_NO_THROW(j.dump());
}

TEST(GoJsonRefold, MapRoundTripFoldsInByteOrderOfKeys) {
  // Go marshals a map's keys sorted ("IPs" < "ips"), so the lower-case key decodes last.
  const Shape shape = Struct({{"ips", ListOf(Struct({{"address", Any(), Null::kKeep}}))},
                              {"dns", Struct({{"domain", Any(), Null::kKeep}}), Null::kKeep}});
  const Json in = Json::parse(R"({"ips": [{"Address": "10.0.0.2/24"}], "IPs": [],
                                  "DNS": {"domain": "a"}, "dns": {"Other": 1}})");
  const Json out = Refold(in, shape);
  ASSERT_EQ(out["ips"].size(), 1u);
  EXPECT_EQ(out["ips"][0]["address"], "10.0.0.2/24");
  EXPECT_EQ(out["dns"], Json::parse(R"({"domain": "a", "Other": 1})"));  // merged
  // Numbers went through float64: an integral 0.0 reads as 0.
  EXPECT_TRUE(Refold(Json::parse(R"({"ips": [{"address": 0.0}]})"), shape)["ips"][0]["address"]
                  .is_number_integer());
}

}  // namespace
}  // namespace nodegate::cni::gojson
