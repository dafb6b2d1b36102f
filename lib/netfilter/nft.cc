#include "lib/netfilter/nft.h"

#include <nftables/libnftables.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <utility>

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
  if (!errors_.empty()) first = errors_.front().text;
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
  const int rc = nft_run_cmd_from_buffer(ctx_, script.c_str());
  NftRun run;
  run.ok_ = rc == 0;
  const char* out = nft_ctx_get_output_buffer(ctx_);
  const char* err = nft_ctx_get_error_buffer(ctx_);
  run.output_ = out ? out : "";
  run.error_text_ = err ? err : "";
  // Lines look like "<cmdline>:3:42-53: Error: Could not process rule: File exists".
  std::istringstream lines(run.error_text_);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t tag = line.find(": Error: ");
    if (tag == std::string::npos) continue;
    NftLineError e;
    e.text = line.substr(tag + 2);
    e.error = NftMessageErrno(e.text);
    const size_t first = line.find(':');
    if (first != std::string::npos && first < tag) {
      e.line = std::atoi(line.c_str() + first + 1);
    }
    run.errors_.push_back(std::move(e));
  }
  if (!run.ok_ && run.errors_.empty()) {
    run.errors_.push_back({0, 0, run.error_text_.empty() ? "nft failed" : run.error_text_});
  }
  return run;
}

}  // namespace nodegate::netfilter
