#include "lib/netfilter/nft.h"

#include <nftables/libnftables.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <utility>

#include "lib/sys/fd.h"

namespace nodegate::netfilter {

bool NftRun::HasErrno(int error, int line) const {
  for (const auto& e : errors_) {
    if (e.error == error && (line == 0 || e.line == line)) return true;
  }
  return false;
}

Error NftRun::ToError(const std::string& what) const {
  std::string first = error_text_;
  // The first message line is the useful one; the rest repeats the command with carets.
  if (!errors_.empty()) {
    first = errors_.front().text;
    if (!errors_.front().command.empty()) first += " (in: " + errors_.front().command + ")";
  }
  return Error(kErrKernel, what + ": " + first);
}

int NftMessageErrno(const std::string& message) {
  static const std::pair<int, const char*> kKnown[] = {
      {ENOENT, "No such file or directory"},   {EEXIST, "File exists"},
      {EBUSY, "Device or resource busy"},      {EINVAL, "Invalid argument"},
      {EOPNOTSUPP, "Operation not supported"}, {EPERM, "Operation not permitted"},
      {ENOSPC, "No space left on device"},
  };
  for (const auto& [code, text] : kKnown) {
    if (message.find(text) != std::string::npos) return code;
  }
  return 0;
}

Result<Nft> Nft::Open() {
  nft_ctx* ctx = nft_ctx_new(NFT_CTX_DEFAULT);
  if (ctx == nullptr) {
    return Error(kErrKernel, "libnftables: cannot create a context");
  }
  nft_ctx_buffer_output(ctx);
  nft_ctx_buffer_error(ctx);
  return Nft(ctx);
}

Nft::Nft(Nft&& other) noexcept : ctx_(std::exchange(other.ctx_, nullptr)) {}

Nft& Nft::operator=(Nft&& other) noexcept {
  if (this != &other) {
    if (ctx_ != nullptr) nft_ctx_free(ctx_);
    ctx_ = std::exchange(other.ctx_, nullptr);
  }
  return *this;
}

Nft::~Nft() {
  if (ctx_ != nullptr) nft_ctx_free(ctx_);
}

NftRun Nft::Run(const std::string& script, Options options) {
  nft_ctx_output_set_flags(ctx_, options.json_output ? NFT_CTX_OUTPUT_JSON : 0);
  nft_ctx_set_dry_run(ctx_, options.dry_run);
  // nft 1.0 reports kernel errors of a buffer without line numbers (and echoes the wrong
  // command); read from a file, every error carries "<file>:<line>:". A memfd keeps the
  // script off the filesystem.
  NftRun run;
  sys::UniqueFd fd(::memfd_create("nft-script", MFD_CLOEXEC));
  if (!fd.valid() ||
      ::write(fd.get(), script.data(), script.size()) != static_cast<ssize_t>(script.size())) {
    run.errors_.push_back(
        {0, 0, std::string("cannot stage nft script: ") + std::strerror(errno), ""});
    run.error_text_ = run.errors_.back().text;
    return run;
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd.get());
  const int rc = nft_run_cmd_from_filename(ctx_, path.c_str());
  run.ok_ = rc == 0;
  const char* out = nft_ctx_get_output_buffer(ctx_);
  const char* err = nft_ctx_get_error_buffer(ctx_);
  run.output_ = out ? out : "";
  run.error_text_ = err ? err : "";
  // Kernel errors look like "<cmdline>:3:42-53: Error: Could not process rule: File exists";
  // errors nft finds itself (a missing table in its cache) are "Error: ..." without a
  // location. Both are followed by the failing command, which locates the latter.
  std::vector<std::string> script_lines;
  {
    std::istringstream in(script);
    std::string l;
    while (std::getline(in, l)) script_lines.push_back(l);
  }
  std::vector<std::string> error_lines;
  {
    std::istringstream in(run.error_text_);
    std::string l;
    while (std::getline(in, l)) error_lines.push_back(l);
  }
  for (size_t i = 0; i < error_lines.size(); ++i) {
    const std::string& line = error_lines[i];
    const size_t tag = line.find("Error: ");
    if (tag == std::string::npos) continue;
    NftLineError e;
    e.text = line.substr(tag);
    e.error = NftMessageErrno(e.text);
    if (tag > 0 && line.compare(tag - 2, 2, ": ") == 0 && line.rfind(path + ":", 0) == 0) {
      e.line = std::atoi(line.c_str() + path.size() + 1);
    }
    if (e.line == 0 && i + 1 < error_lines.size()) {
      for (size_t k = 0; k < script_lines.size(); ++k) {
        if (script_lines[k] == error_lines[i + 1]) {
          e.line = static_cast<int>(k + 1);
          break;
        }
      }
    }
    if (e.line >= 1 && static_cast<size_t>(e.line) <= script_lines.size()) {
      e.command = script_lines[static_cast<size_t>(e.line) - 1];
    }
    run.errors_.push_back(std::move(e));
  }
  if (!run.ok_ && run.errors_.empty()) {
    run.errors_.push_back({0, 0, run.error_text_.empty() ? "nft failed" : run.error_text_});
  }
  return run;
}

}  // namespace nodegate::netfilter
