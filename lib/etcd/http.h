#pragma once
// The HTTP/1.1 the etcd client speaks: a POST with a JSON body on a kept-alive connection,
// and the response read back, its body delimited by Content-Length, chunked encoding or the
// end of the connection. Only what a JSON gateway answers is supported (no 1xx other than
// 100 Continue, no trailers kept, no compression asked for). The parser is pure, bytes in and
// a response out, so it is unit-tested without a socket (http_test.cc).
//
//   ResponseParser parser(kMaxBody);
//   while (!parser.done()) { NG_RETURN_IF_ERROR(parser.Feed(ReadSome())); }
//   HttpResponse response = parser.Take();

#include <cstddef>
#include <string>
#include <string_view>

#include "lib/base/result.h"

namespace nodegate::etcd {

struct HttpResponse {
  int status = 0;
  std::string body;
  bool keep_alive = true;  // false when the server closes the connection after this response
};

// "POST <path> HTTP/1.1" with Host, Content-Type: application/json, Content-Length and, when
// not empty, Authorization.
std::string FormatPost(std::string_view host, std::string_view path, std::string_view body,
                       std::string_view authorization);

class ResponseParser {
 public:
  // Bodies and header sections beyond these sizes are errors: a server, or whatever answers
  // on its port, must not make the client hold unbounded memory.
  explicit ResponseParser(size_t max_body, size_t max_header = 64 * 1024)
      : max_body_(max_body), max_header_(max_header) {}

  // Consumes bytes of the response; an error (code 5) for anything that is not HTTP/1.x.
  Status Feed(std::string_view bytes);
  // The end of the connection: ends a body that runs to it, else an error when incomplete.
  Status Eof();
  bool done() const { return state_ == State::kDone; }
  HttpResponse Take() { return std::move(response_); }

 private:
  enum class State { kHeader, kBody, kChunkSize, kChunkData, kChunkDataEnd, kTrailer, kDone };
  Status ParseHeader(std::string_view header);
  Status Step();
  Result<bool> StepHeader();
  Result<bool> StepBody();
  Result<bool> StepChunkSize();
  Result<bool> StepTrailer();
  // TakeBody: up to remaining_ bytes of body; `next` once they have all come.
  Result<bool> TakeBody(State next);

  size_t max_body_;
  size_t max_header_;
  State state_ = State::kHeader;
  std::string buffer_;    // bytes not consumed yet
  size_t remaining_ = 0;  // of the body (kBody with a length) or of the chunk
  bool has_length_ = false;
  bool chunked_ = false;
  bool until_close_ = false;
  HttpResponse response_;
};

}  // namespace nodegate::etcd
