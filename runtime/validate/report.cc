// The renderings of a validation report: readable text grouped by file, and one JSON object
// for tools.
#include <algorithm>
#include <map>
#include <sstream>

#include "lib/cni/go_json.h"
#include "runtime/validate/validate.h"

namespace nodegate::runtime {
namespace {

const char* SeverityName(Severity s) { return s == Severity::kError ? "error" : "warning"; }

}  // namespace

bool Report::HasErrors() const { return ErrorCount() > 0; }

int Report::ErrorCount() const {
  return static_cast<int>(std::count_if(findings.begin(), findings.end(), [](const Finding& f) {
    return f.severity == Severity::kError;
  }));
}

int Report::WarningCount() const { return static_cast<int>(findings.size()) - ErrorCount(); }

std::string FormatReportText(const Report& report) {
  std::ostringstream out;
  std::map<std::string, std::vector<const Finding*>> by_file;
  for (const auto& f : report.findings) {
    by_file[f.file].push_back(&f);
  }
  std::vector<std::string> files = report.files;
  for (const auto& [file, _] : by_file) {
    if (std::find(files.begin(), files.end(), file) == files.end()) {
      files.push_back(file);
    }
  }
  for (const auto& file : files) {
    out << file;
    for (const auto& n : report.networks) {
      if (n.file == file) {
        out << ": network \"" << n.name << "\" (cniVersion "
            << (n.cni_version.empty() ? "unset" : n.cni_version) << ")";
        std::string chain;
        for (const auto& t : n.plugin_types) {
          chain += (chain.empty() ? "" : " -> ") + t;
        }
        out << " " << chain;
        if (!n.shadowed_by.empty()) {
          out << " [not used: " << n.shadowed_by << " wins]";
        }
      }
    }
    out << (by_file.count(file) ? "" : "  ok") << "\n";
    for (const Finding* f : by_file[file]) {
      out << "  " << SeverityName(f->severity) << ": " << f->check;
      if (f->plugin_index >= 0) {
        out << " (plugins[" << f->plugin_index << "] " << f->plugin_type << ")";
      }
      out << ": " << f->message << "\n";
    }
  }
  out << report.ErrorCount() << " error(s), " << report.WarningCount() << " warning(s) in "
      << report.files.size() << " file(s)\n";
  return out.str();
}

std::string FormatReportJson(const Report& report) {
  cni::OrderedJson j;
  j["valid"] = !report.HasErrors() && !report.unusable_input;
  j["errors"] = report.ErrorCount();
  j["warnings"] = report.WarningCount();
  j["files"] = report.files;
  j["networks"] = cni::OrderedJson::array();
  for (const auto& n : report.networks) {
    cni::OrderedJson o;
    o["name"] = n.name;
    o["file"] = n.file;
    o["cniVersion"] = n.cni_version;
    o["plugins"] = n.plugin_types;
    o["used"] = n.shadowed_by.empty();
    if (!n.shadowed_by.empty()) {
      o["shadowedBy"] = n.shadowed_by;
    }
    j["networks"].push_back(std::move(o));
  }
  j["findings"] = cni::OrderedJson::array();
  for (const auto& f : report.findings) {
    cni::OrderedJson o;
    o["severity"] = SeverityName(f.severity);
    o["check"] = f.check;
    o["file"] = f.file;
    if (!f.network.empty()) o["network"] = f.network;
    if (f.plugin_index >= 0) {
      o["plugin"] = f.plugin_index;
      o["type"] = f.plugin_type;
    }
    o["message"] = f.message;
    j["findings"].push_back(std::move(o));
  }
  // File names and values are bytes from the folder: invalid UTF-8 is replaced, never thrown.
  return j.dump(2, ' ', false, cni::OrderedJson::error_handler_t::replace) + "\n";
}

}  // namespace nodegate::runtime
