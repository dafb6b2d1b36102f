#include "lib/netfilter/nft.h"

#include <nftables/libnftables.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <type_traits>
#include <utility>

#include "lib/netfilter/release.h"
#include "lib/sys/dynamic_library.h"
#include "lib/sys/fd.h"

namespace nodegate::netfilter {

// libnftables and the five libraries it pulls in cost about 1.2 ms of dynamic loading at every
// exec, so it is opened only by the processes that use it (the nftables backend).
struct NftApi {
  decltype(&nft_ctx_new) ctx_new;
  decltype(&nft_ctx_free) ctx_free;
  decltype(&nft_ctx_buffer_output) buffer_output;
  decltype(&nft_ctx_buffer_error) buffer_error;
  decltype(&nft_ctx_get_output_buffer) output_buffer;
  decltype(&nft_ctx_get_error_buffer) error_buffer;
  decltype(&nft_ctx_output_set_flags) output_set_flags;
  decltype(&nft_ctx_set_dry_run) set_dry_run;
  decltype(&nft_run_cmd_from_filename) run_from_filename;
};

namespace {

Result<const NftApi*> LoadNftApi() {
  static const Result<const NftApi*> loaded = []() -> Result<const NftApi*> {
    NG_ASSIGN_OR_RETURN(void* lib, sys::OpenLibrary("libnftables.so.1"));
    static NftApi api;
    sys::SymbolBinder bind(lib);
    bind(api.ctx_new, "nft_ctx_new");
    bind(api.ctx_free, "nft_ctx_free");
    bind(api.buffer_output, "nft_ctx_buffer_output");
    bind(api.buffer_error, "nft_ctx_buffer_error");
    bind(api.output_buffer, "nft_ctx_get_output_buffer");
    bind(api.error_buffer, "nft_ctx_get_error_buffer");
    bind(api.output_set_flags, "nft_ctx_output_set_flags");
    bind(api.set_dry_run, "nft_ctx_set_dry_run");
    bind(api.run_from_filename, "nft_run_cmd_from_filename");
    NG_RETURN_IF_ERROR(bind.Done("libnftables"));
    return &api;
  }();
  return loaded;
}

}  // namespace

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
  NG_ASSIGN_OR_RETURN(const NftApi* api, LoadNftApi());
  nft_ctx* ctx = api->ctx_new(NFT_CTX_DEFAULT);
  if (ctx == nullptr) {
    return Error(kErrKernel, "libnftables: cannot create a context");
  }
  api->buffer_output(ctx);
  api->buffer_error(ctx);
  return Nft(api, ctx);
}

Nft::Nft(Nft&& other) noexcept : api_(other.api_), ctx_(std::exchange(other.ctx_, nullptr)) {}

Nft& Nft::operator=(Nft&& other) noexcept {
  if (this != &other) {
    Close();
    api_ = other.api_;
    ctx_ = std::exchange(other.ctx_, nullptr);
  }
  return *this;
}

Nft::~Nft() { Close(); }

void Nft::Close() {
  if (ctx_ == nullptr) return;
  // libnftables does not expose its socket: hand off every nfnetlink socket of the process.
  HandOffOpenNfnetlinkSockets();
  api_->ctx_free(std::exchange(ctx_, nullptr));
}

NftRun Nft::Run(const std::string& script, Options options) {
  api_->output_set_flags(ctx_, options.json_output ? NFT_CTX_OUTPUT_JSON : 0);
  api_->set_dry_run(ctx_, options.dry_run);
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
  const int rc = api_->run_from_filename(ctx_, path.c_str());
  run.ok_ = rc == 0;
  const char* out = api_->output_buffer(ctx_);
  const char* err = api_->error_buffer(ctx_);
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
