#include "ports/report.h"

#include <algorithm>
#include <array>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>
#include <string_view>

namespace nodegate::ports {
namespace {

// Writes the JSON text directly: a node's listing is tens of thousands of claims, and building
// an nlohmann tree of them first costs ten times the writing. The layout is nlohmann's dump(2).
class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  // A string: printable ASCII is copied as is; anything else is escaped by nlohmann, with
  // invalid UTF-8 (names are bytes from the input) replaced so that the output stays valid.
  void String(std::string_view s) {
    const bool plain = std::all_of(s.begin(), s.end(), [](char c) {
      const auto u = static_cast<unsigned char>(c);
      return u >= 0x20 && u < 0x7f && u != '"' && u != '\\';
    });
    if (!plain) {
      out_ += nlohmann::json(std::string(s))
                  .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      return;
    }
    out_ += '"';
    out_ += s;
    out_ += '"';
  }
  void OptionalString(const std::optional<std::string>& s) {
    if (s) {
      String(*s);
    } else {
      out_ += "null";
    }
  }
  void Number(int64_t n) { out_ += std::to_string(n); }

  // "key": value, as the next member of the innermost object; nullopt is null.
  void Member(std::string_view key, std::string_view value) {
    Key(key);
    String(value);
  }
  void Member(std::string_view key, const std::string& value) {
    Member(key, std::string_view(value));
  }
  void Member(std::string_view key, const std::optional<std::string>& value) {
    Key(key);
    OptionalString(value);
  }
  void Member(std::string_view key, std::optional<int64_t> value) {
    Key(key);
    if (value) {
      Number(*value);
    } else {
      out_ += "null";
    }
  }

  // Opens an object or array ('{' / '['); Close ends the innermost one.
  void Open(char bracket) {
    out_ += bracket;
    stack_.push_back({bracket == '{' ? '}' : ']', 0});
  }
  // The next member of the innermost object ("key": follows) or array.
  void Key(std::string_view key) {
    Next();
    String(key);
    out_ += ": ";
  }
  void Item() { Next(); }
  void Close() {
    const Level level = stack_.back();
    stack_.pop_back();
    if (level.written > 0) {  // an empty one stays "[]"
      out_ += '\n';
      Indent();
    }
    out_ += level.close;
  }

 private:
  struct Level {
    char close;
    size_t written;
  };
  void Next() {
    Level& level = stack_.back();
    out_ += level.written++ == 0 ? "\n" : ",\n";
    Indent();
  }
  void Indent() { out_.append(2 * stack_.size(), ' '); }

  std::string& out_;
  std::vector<Level> stack_;
};

// Each claim list of a row: an array of objects, one per claim.
template <typename Claim, typename WriteFields>
void WriteClaims(JsonWriter& w, std::string_view key, const std::vector<Claim>& claims,
                 WriteFields fields) {
  w.Key(key);
  w.Open('[');
  for (const Claim& claim : claims) {
    w.Item();
    fields(claim);
  }
  w.Close();
}

void WriteRow(JsonWriter& w, const PortRow& row) {
  w.Open('{');
  w.Member("hostIP", row.key.host_ip);
  w.Member("protocol", row.key.protocol);
  w.Member("port", row.key.port);
  w.Member("verdict", VerdictName(row.verdict));
  WriteClaims(w, "declared", row.declared, [&](const DeclaredClaim& d) {
    w.Open('{');
    w.Member("pod", d.pod);
    w.Member("container", d.container);
    w.Member("source", d.source);
    w.Close();
  });
  WriteClaims(w, "mapped", row.mapped, [&](const MappedClaim& m) {
    w.Open('{');
    w.Member("containerID", m.container_id);
    w.Member("network", m.network);
    w.Member("pod", m.pod);
    w.Member("target", m.target);
    w.Member("layout", m.layout);
    w.Close();
  });
  WriteClaims(w, "listening", row.listening, [&](const ListeningClaim& l) {
    w.Open('{');
    w.Member("pid", l.pid);
    w.Member("command", l.command);
    w.Member("container", l.container);
    w.Close();
  });
  w.Close();
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

void WriteTable(const std::vector<Line>& lines, std::ostream& out) {
  std::array<size_t, kColumns> width{};
  for (const Line& line : lines) {
    for (size_t i = 0; i < kColumns; ++i) {
      width[i] = std::max(width[i], line[i].size());
    }
  }
  constexpr size_t kFlushAt = 64 << 10;
  std::string text;
  text.reserve(2 * kFlushAt);
  for (const Line& line : lines) {
    for (size_t i = 0; i < kColumns; ++i) {
      text += line[i];
      if (i + 1 < kColumns) text.append(width[i] - line[i].size() + 2, ' ');
    }
    text += '\n';
    if (text.size() >= kFlushAt) {
      out.write(text.data(), static_cast<std::streamsize>(text.size()));
      text.clear();
    }
  }
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

}  // namespace

void WriteRowsJson(const std::vector<PortRow>& rows, std::ostream& out) {
  // Written to `out` a row at a time: the whole text of a busy node is megabytes, and memory a
  // process touches for the first time costs a page fault per 4 KiB.
  constexpr size_t kFlushAt = 64 << 10;
  std::string text;
  text.reserve(2 * kFlushAt);
  JsonWriter w(text);
  w.Open('{');
  w.Key("ports");
  w.Open('[');
  for (const PortRow& row : rows) {
    w.Item();
    WriteRow(w, row);
    if (text.size() >= kFlushAt) {
      out.write(text.data(), static_cast<std::streamsize>(text.size()));
      text.clear();
    }
  }
  w.Close();
  w.Close();
  text += '\n';
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

std::string RowsToJson(const std::vector<PortRow>& rows) {
  std::ostringstream out;
  WriteRowsJson(rows, out);
  return std::move(out).str();
}

void WriteRowsText(const std::vector<PortRow>& rows, std::ostream& out) {
  std::vector<Line> lines = {
      {"PORT", "PROTO", "HOST IP", "VERDICT", "DECLARED BY", "MAPPED TO", "LISTENING"}};
  lines.reserve(rows.size() + 1);
  std::map<std::string_view, size_t> counts;
  for (const PortRow& row : rows) {
    lines.push_back(RowToLine(row));
    ++counts[VerdictName(row.verdict)];
  }
  WriteTable(lines, out);
  std::string summary = std::to_string(rows.size()) + " host port(s)";
  for (const auto& [verdict, n] : counts) {
    summary += ", " + std::to_string(n) + " " + std::string(verdict);
  }
  out << "\n" << summary << "\n";
}

std::string RowsToText(const std::vector<PortRow>& rows) {
  std::ostringstream out;
  WriteRowsText(rows, out);
  return std::move(out).str();
}

}  // namespace nodegate::ports
