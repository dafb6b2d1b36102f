#pragma once
// A libnftables context as an RAII value. A script passed to Run() is one nft transaction:
// the kernel applies all of it or none of it. When it fails, the error names every failing
// command by line, with the errno the kernel reported, so callers can tell "already exists"
// from "missing" without matching whole messages.
//
//   NG_ASSIGN_OR_RETURN(auto nft, netfilter::Nft::Open());
//   auto run = nft.Run(script);
//   if (!run.ok() && run.failure().HasErrno(EEXIST, kOwnerLine)) { ... }

#include <memory>
#include <string>
#include <vector>

#include "lib/base/result.h"

struct nft_ctx;

namespace nodegate::netfilter {

struct NftApi;  // libnftables, opened at run time (nft.cc)

struct NftLineError {
  int line = 0;         // 1-based line of the script
  int error = 0;        // ENOENT, EEXIST, EBUSY... 0 when nft failed before the kernel
  std::string text;     // nft's message for that line
  std::string command;  // the script line, when known
};

// The outcome of Run(): success with nft's output, or the failing lines.
class NftRun {
 public:
  bool ok() const { return ok_; }
  const std::string& output() const { return output_; }
  const std::vector<NftLineError>& errors() const { return errors_; }
  const std::string& error_text() const { return error_text_; }
  // True when some failing line (any line when `line` is 0) reported `error`.
  bool HasErrno(int error, int line = 0) const;
  // Error code 100 with nft's message.
  Error ToError(const std::string& what) const;

 private:
  friend class Nft;
  bool ok_ = false;
  std::string output_;
  std::string error_text_;
  std::vector<NftLineError> errors_;
};

class Nft {
 public:
  // Errors: code 100 when libnftables cannot be loaded or cannot create a context.
  static Result<Nft> Open();
  Nft(Nft&&) noexcept;
  Nft& operator=(Nft&&) noexcept;
  ~Nft();

  struct Options {
    bool json_output = false;  // listings as JSON (nft -j)
    bool dry_run = false;      // send to the kernel and abort (nft -c)
  };
  NftRun Run(const std::string& script, Options options);
  NftRun Run(const std::string& script) { return Run(script, Options{}); }

 private:
  Nft(const NftApi* api, nft_ctx* ctx) : api_(api), ctx_(ctx) {}
  void Close();
  const NftApi* api_ = nullptr;
  nft_ctx* ctx_ = nullptr;
};

// Maps nft's error messages ("Could not process rule: File exists") to errno values.
int NftMessageErrno(const std::string& message);

}  // namespace nodegate::netfilter
