#include "ports/report.h"

#include <algorithm>
#include <array>
#include <map>

namespace nodegate::ports {
namespace {

nlohmann::json OptionalString(const std::optional<std::string>& s) {
  return s ? nlohmann::json(*s) : nlohmann::json(nullptr);
}

nlohmann::json RowToJson(const PortRow& row) {
  nlohmann::json declared = nlohmann::json::array();
  for (const DeclaredClaim& d : row.declared) {
    declared.push_back({{"pod", d.pod}, {"container", d.container}, {"source", d.source}});
  }
  nlohmann::json mapped = nlohmann::json::array();
  for (const MappedClaim& m : row.mapped) {
    mapped.push_back({{"containerID", m.container_id},
                      {"network", m.network},
                      {"pod", OptionalString(m.pod)},
                      {"target", m.target},
                      {"layout", m.layout}});
  }
  nlohmann::json listening = nlohmann::json::array();
  for (const ListeningClaim& l : row.listening) {
    listening.push_back({{"pid", l.pid ? nlohmann::json(*l.pid) : nlohmann::json(nullptr)},
                         {"command", l.command},
                         {"container", OptionalString(l.container)}});
  }
  return {{"hostIP", row.key.host_ip},
          {"protocol", row.key.protocol},
          {"port", row.key.port},
          {"verdict", std::string(VerdictName(row.verdict))},
          {"declared", std::move(declared)},
          {"mapped", std::move(mapped)},
          {"listening", std::move(listening)}};
}

template <typename Claim, typename Describe>
std::string JoinDescribed(const std::vector<Claim>& claims, Describe describe) {
  std::string out;
  for (const Claim& c : claims) {
    out += (out.empty() ? "" : ", ") + describe(c);
  }
  return out.empty() ? "-" : out;
}

constexpr size_t kColumns = 7;
using Line = std::array<std::string, kColumns>;

Line RowToLine(const PortRow& row) {
  return {std::to_string(row.key.port),
          row.key.protocol,
          row.key.host_ip,
          std::string(VerdictName(row.verdict)),
          JoinDescribed(row.declared,
                        [](const DeclaredClaim& d) { return d.pod + " (" + d.container + ")"; }),
          JoinDescribed(row.mapped,
                        [](const MappedClaim& m) {
                          return (m.pod ? *m.pod : m.container_id.substr(0, 12)) + " -> " +
                                 m.target + " [" + m.layout + "]";
                        }),
          JoinDescribed(row.listening, [](const ListeningClaim& l) {
            return l.pid ? l.command + " (" + std::to_string(*l.pid) + ")" : "?";
          })};
}

std::string FormatTable(const std::vector<Line>& lines) {
  std::array<size_t, kColumns> width{};
  for (const Line& line : lines) {
    for (size_t i = 0; i < kColumns; ++i) {
      width[i] = std::max(width[i], line[i].size());
    }
  }
  std::string out;
  for (const Line& line : lines) {
    std::string text;
    for (size_t i = 0; i < kColumns; ++i) {
      text += line[i] + (i + 1 < kColumns ? std::string(width[i] - line[i].size() + 2, ' ') : "");
    }
    out += text + "\n";
  }
  return out;
}

}  // namespace

nlohmann::json RowsToJson(const std::vector<PortRow>& rows) {
  nlohmann::json ports = nlohmann::json::array();
  for (const PortRow& row : rows) {
    ports.push_back(RowToJson(row));
  }
  return {{"ports", std::move(ports)}};
}

std::string RowsToText(const std::vector<PortRow>& rows) {
  std::vector<Line> lines = {
      {"PORT", "PROTO", "HOST IP", "VERDICT", "DECLARED BY", "MAPPED TO", "LISTENING"}};
  std::map<std::string_view, size_t> counts;
  for (const PortRow& row : rows) {
    lines.push_back(RowToLine(row));
    ++counts[VerdictName(row.verdict)];
  }
  std::string summary = std::to_string(rows.size()) + " host port(s)";
  for (const auto& [verdict, n] : counts) {
    summary += ", " + std::to_string(n) + " " + std::string(verdict);
  }
  return FormatTable(lines) + "\n" + summary + "\n";
}

}  // namespace nodegate::ports
