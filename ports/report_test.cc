#include "ports/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace nodegate::ports {
namespace {

PortRow RowWithEveryClaim() {
  PortRow row;
  row.key = {"0.0.0.0", "TCP", 8080};
  row.verdict = Verdict::kMappedTwice;
  row.declared.push_back({row.key, "kube-system/coredns", "coredns", "/etc/kubernetes/manifests"});
  row.mapped.push_back({row.key, "iptables-nft", "c0ffee", "cbr0", "10.88.0.2:80", std::nullopt});
  row.mapped.push_back({row.key, "nftables", "beef", "cbr0", "10.88.0.3:80", "default/web"});
  row.listening.push_back({row.key, 123, "python3", std::nullopt});
  row.listening.push_back({row.key, std::nullopt, "", "abc"});
  return row;
}

TEST(RowsToJson, WritesTheContractFieldsWithNullsAndEmptyLists) {
  PortRow bare;
  bare.key = {"::", "UDP", 53};
  bare.verdict = Verdict::kDeclaredNotListening;
  const auto doc = nlohmann::json::parse(RowsToJson({RowWithEveryClaim(), bare}));
  const nlohmann::json want = nlohmann::json::parse(R"({"ports": [
    {"hostIP": "0.0.0.0", "protocol": "TCP", "port": 8080, "verdict": "mapped-twice",
     "declared": [{"pod": "kube-system/coredns", "container": "coredns",
                   "source": "/etc/kubernetes/manifests"}],
     "mapped": [{"containerID": "c0ffee", "network": "cbr0", "pod": null,
                 "target": "10.88.0.2:80", "layout": "iptables-nft"},
                {"containerID": "beef", "network": "cbr0", "pod": "default/web",
                 "target": "10.88.0.3:80", "layout": "nftables"}],
     "listening": [{"pid": 123, "command": "python3", "container": null},
                   {"pid": null, "command": "", "container": "abc"}]},
    {"hostIP": "::", "protocol": "UDP", "port": 53, "verdict": "declared-not-listening",
     "declared": [], "mapped": [], "listening": []}]})");
  EXPECT_EQ(doc, want);
}

TEST(RowsToJson, IsLaidOutAsATwoSpaceDumpWithContractKeyOrder) {
  PortRow row;
  row.key = {"10.0.0.5", "SCTP", 9};
  row.listening.push_back({row.key, 7, "sctpd", std::nullopt});
  EXPECT_EQ(RowsToJson({row}),
            "{\n"
            "  \"ports\": [\n"
            "    {\n"
            "      \"hostIP\": \"10.0.0.5\",\n"
            "      \"protocol\": \"SCTP\",\n"
            "      \"port\": 9,\n"
            "      \"verdict\": \"ok\",\n"
            "      \"declared\": [],\n"
            "      \"mapped\": [],\n"
            "      \"listening\": [\n"
            "        {\n"
            "          \"pid\": 7,\n"
            "          \"command\": \"sctpd\",\n"
            "          \"container\": null\n"
            "        }\n"
            "      ]\n"
            "    }\n"
            "  ]\n"
            "}\n");
  EXPECT_EQ(RowsToJson({}), "{\n  \"ports\": []\n}\n");
}

TEST(RowsToJson, EscapesQuotesControlsAndReplacesInvalidUtf8) {
  PortRow row;
  row.key = {"0.0.0.0", "TCP", 1};
  // A process name is bytes: quotes, a backslash, a tab, UTF-8 and an invalid byte.
  row.listening.push_back({row.key, 1, std::string("a\"b\\c\td\xc3\xa9") + "\xff", std::nullopt});
  const std::string text = RowsToJson({row});
  const auto doc = nlohmann::json::parse(text);  // throws on invalid JSON or UTF-8
  EXPECT_EQ(doc["ports"][0]["listening"][0]["command"],
            "a\"b\\c\td\xc3\xa9"
            "\xef\xbf\xbd");
}

TEST(RowsToText, OneAlignedLinePerRowThenACountPerVerdict) {
  PortRow bare;
  bare.key = {"::", "UDP", 53};
  bare.verdict = Verdict::kDeclaredNotListening;
  EXPECT_EQ(RowsToText({RowWithEveryClaim(), bare}),
            "PORT  PROTO  HOST IP  VERDICT                 DECLARED BY                    "
            "MAPPED TO                                                                      "
            "LISTENING\n"
            "8080  TCP    0.0.0.0  mapped-twice            kube-system/coredns (coredns)  "
            "c0ffee -> 10.88.0.2:80 [iptables-nft], default/web -> 10.88.0.3:80 [nftables]  "
            "python3 (123), ?\n"
            "53    UDP    ::       declared-not-listening  -                              "
            "-                                                                              -\n"
            "\n"
            "2 host port(s), 1 declared-not-listening, 1 mapped-twice\n");
}

}  // namespace
}  // namespace nodegate::ports
