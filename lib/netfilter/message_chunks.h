#pragma once
// MessageChunks: netlink messages appended back to back into fixed chunks that never move, for
// batches of thousands of messages (a pod with 2,000 host ports is about 6,000 rules, megabytes
// of messages). One growing buffer would copy itself at every doubling and touch each page
// twice; here every byte is written once, and each chunk is mapped with its pages already
// populated (one system call instead of a page fault per page, which dominates on machines
// where faults are slow). The chunks go to the kernel as one sendmsg with an iovec each.

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>
#include <span>
#include <vector>

namespace nodegate::netfilter {

class MessageChunks {
 public:
  // Chunks start small (a plain ADD is a few kilobytes) and double up to kMaxChunkBytes.
  static constexpr size_t kFirstChunkBytes = 64 * 1024;
  static constexpr size_t kMaxChunkBytes = 512 * 1024;

  MessageChunks() = default;
  ~MessageChunks() { Clear(); }
  MessageChunks(MessageChunks&& other) noexcept
      : chunks_(std::move(other.chunks_)), next_chunk_bytes_(other.next_chunk_bytes_) {
    other.chunks_.clear();
  }
  MessageChunks& operator=(MessageChunks&& other) noexcept {
    if (this != &other) {
      Clear();
      chunks_ = std::move(other.chunks_);
      next_chunk_bytes_ = other.next_chunk_bytes_;
      other.chunks_.clear();
    }
    return *this;
  }
  MessageChunks(const MessageChunks&) = delete;
  MessageChunks& operator=(const MessageChunks&) = delete;

  // Room for `len` zeroed bytes, contiguous; stays valid (and in place) until Clear.
  uint8_t* Append(size_t len) {
    if (chunks_.empty() || chunks_.back().capacity - chunks_.back().used < len) {
      NewChunk(std::max(len, next_chunk_bytes_));
      next_chunk_bytes_ = std::min(2 * next_chunk_bytes_, kMaxChunkBytes);
    }
    Chunk& chunk = chunks_.back();
    uint8_t* at = chunk.data + chunk.used;
    chunk.used += len;
    return at;  // fresh anonymous pages are zero, and no byte is handed out twice
  }

  bool empty() const { return chunks_.empty(); }
  size_t size() const {
    size_t total = 0;
    for (const Chunk& c : chunks_) total += c.used;
    return total;
  }
  // The written bytes, chunk by chunk, in order.
  std::vector<std::span<const uint8_t>> Views() const {
    std::vector<std::span<const uint8_t>> views;
    for (const Chunk& c : chunks_) views.emplace_back(c.data, c.used);
    return views;
  }

  void Clear() {
    for (const Chunk& c : chunks_) ::munmap(c.data, c.capacity);
    chunks_.clear();
    next_chunk_bytes_ = kFirstChunkBytes;
  }

 private:
  struct Chunk {
    uint8_t* data = nullptr;
    size_t capacity = 0;
    size_t used = 0;
  };

  void NewChunk(size_t capacity) {
    void* p = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    chunks_.push_back({static_cast<uint8_t*>(p), capacity, 0});
  }

  std::vector<Chunk> chunks_;
  size_t next_chunk_bytes_ = kFirstChunkBytes;
};

}  // namespace nodegate::netfilter
