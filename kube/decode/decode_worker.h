#pragma once
// DecodeWorker: a list's items decoded on a thread of their own while the next ones arrive and
// are taken apart (reading through TLS and splitting cost about as much as decoding: a list of
// 150,000 pods takes half the time on two cores). Items travel in batches of about 256 KiB; at
// most 8 MiB wait, so a slow decoder slows the reading instead of holding the list in memory.
// The decode function runs on the worker's thread only, one item at a time, in order.
//
//   DecodeWorker worker([&](std::string_view item) { records.push_back(Decode(item)); });
//   ListStream list([&](std::string_view item) { worker.Push(item); });
//   ... feed the list ...
//   worker.Finish();  // every item decoded; `records` is the caller's again

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace nodegate::kube {

class DecodeWorker {
 public:
  explicit DecodeWorker(std::function<void(std::string_view item)> decode);
  ~DecodeWorker() { Finish(); }
  DecodeWorker(const DecodeWorker&) = delete;
  DecodeWorker& operator=(const DecodeWorker&) = delete;

  // Push: one item, copied into the batch being filled (from the reading thread).
  void Push(std::string_view item);
  // Finish: every item pushed is decoded when it returns.
  void Finish();

 private:
  static constexpr size_t kBatchBytes = 256u << 10;
  static constexpr size_t kMaxQueued = 8u << 20;

  struct Batch {
    std::string bytes;
    std::vector<size_t> ends;  // where each item ends in `bytes`
  };

  void Flush();
  void Run();

  const std::function<void(std::string_view)> decode_;
  Batch batch_;  // being filled by the reading thread
  std::mutex mu_;
  std::condition_variable ready_;
  std::condition_variable room_;
  std::deque<Batch> queue_;
  size_t queued_ = 0;
  bool done_ = false;
  std::thread thread_;  // last: started once the rest exists
};

}  // namespace nodegate::kube
