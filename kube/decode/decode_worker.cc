#include "kube/decode/decode_worker.h"

#include <utility>

namespace nodegate::kube {

DecodeWorker::DecodeWorker(std::function<void(std::string_view item)> decode)
    : decode_(std::move(decode)), thread_([this] { Run(); }) {}

void DecodeWorker::Push(std::string_view item) {
  batch_.ends.push_back(batch_.bytes.size() + item.size());
  batch_.bytes.append(item);
  if (batch_.bytes.size() >= kBatchBytes) {
    Flush();
  }
}

void DecodeWorker::Finish() {
  if (!thread_.joinable()) {
    return;
  }
  Flush();
  {
    std::lock_guard lock(mu_);
    done_ = true;
  }
  ready_.notify_all();
  thread_.join();
}

void DecodeWorker::Flush() {
  if (batch_.ends.empty()) {
    return;
  }
  std::unique_lock lock(mu_);
  room_.wait(lock, [this] { return queued_ < kMaxQueued; });
  queued_ += batch_.bytes.size();
  queue_.push_back(std::move(batch_));
  batch_ = Batch{};
  ready_.notify_one();
}

void DecodeWorker::Run() {
  for (;;) {
    Batch batch;
    {
      std::unique_lock lock(mu_);
      ready_.wait(lock, [this] { return !queue_.empty() || done_; });
      if (queue_.empty()) {
        return;
      }
      batch = std::move(queue_.front());
      queue_.pop_front();
      queued_ -= batch.bytes.size();
    }
    room_.notify_one();
    size_t begin = 0;
    for (size_t end : batch.ends) {
      decode_(std::string_view(batch.bytes).substr(begin, end - begin));
      begin = end;
    }
  }
}

}  // namespace nodegate::kube
