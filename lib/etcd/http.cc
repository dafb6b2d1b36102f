#include "lib/etcd/http.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace nodegate::etcd {
namespace {

Error BadResponse(const std::string& what) {
  return Error(kErrIo, "not an HTTP/1.1 response: " + what);
}

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// A whole decimal (or, for chunk sizes, hexadecimal) number, and nothing else.
bool ParseNumber(std::string_view text, size_t& out, int base) {
  if (text.empty() || text.size() > 16) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out, base);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string FormatPost(std::string_view host, std::string_view path, std::string_view body,
                       std::string_view authorization) {
  std::string out;
  out.reserve(160 + host.size() + path.size() + body.size() + authorization.size());
  out.append("POST ").append(path).append(" HTTP/1.1\r\nHost: ").append(host);
  out.append("\r\nContent-Type: application/json\r\nContent-Length: ");
  out.append(std::to_string(body.size())).append("\r\n");
  if (!authorization.empty()) out.append("Authorization: ").append(authorization).append("\r\n");
  out.append("\r\n").append(body);
  return out;
}

Status ResponseParser::ParseHeader(std::string_view header) {
  // Status line: HTTP/1.x SP code SP reason
  const size_t line_end = header.find("\r\n");
  const std::string_view status_line = header.substr(0, line_end);
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || status_line[8] != ' ') {
    return BadResponse("status line \"" + std::string(status_line.substr(0, 40)) + "\"");
  }
  size_t code = 0;
  if (!ParseNumber(status_line.substr(9, 3), code, 10) || code < 100 || code > 599) {
    return BadResponse("status code");
  }
  response_ = HttpResponse{};
  response_.status = static_cast<int>(code);
  response_.keep_alive = status_line[7] == '1';  // HTTP/1.0 closes by default
  has_length_ = chunked_ = until_close_ = false;
  size_t length = 0;
  std::string_view rest = line_end == std::string_view::npos ? "" : header.substr(line_end + 2);
  while (!rest.empty()) {
    const size_t end = rest.find("\r\n");
    const std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? "" : rest.substr(end + 2);
    if (line.empty()) continue;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return BadResponse("header line");
    const std::string name = Lower(line.substr(0, colon));
    const std::string value = Lower(Trim(line.substr(colon + 1)));
    if (name == "content-length") {
      size_t n = 0;
      if (!ParseNumber(value, n, 10) || (has_length_ && n != length)) {
        return BadResponse("Content-Length");
      }
      length = n;
      has_length_ = true;
    } else if (name == "transfer-encoding") {
      if (value != "chunked") return BadResponse("transfer encoding \"" + value + "\"");
      chunked_ = true;
    } else if (name == "connection") {
      if (value.find("close") != std::string::npos) response_.keep_alive = false;
      if (value.find("keep-alive") != std::string::npos) response_.keep_alive = true;
    }
  }
  if (chunked_) {
    has_length_ = false;  // RFC 9112: chunked wins over a length
    state_ = State::kChunkSize;
    return OkStatus();
  }
  const bool no_body = code == 204 || code == 304 || (code >= 100 && code < 200);
  if (no_body || (has_length_ && length == 0)) {
    state_ = State::kDone;
    return OkStatus();
  }
  if (has_length_) {
    if (length > max_body_) return BadResponse("body of " + std::to_string(length) + " bytes");
    remaining_ = length;
  } else {
    until_close_ = true;
    response_.keep_alive = false;
  }
  state_ = State::kBody;
  return OkStatus();
}

Status ResponseParser::Feed(std::string_view bytes) {
  if (state_ == State::kDone) return BadResponse("bytes after the response");
  buffer_.append(bytes);
  return Step();
}

// Each state's step: true when it moved on (the loop goes on), false when it needs more bytes.
Result<bool> ResponseParser::StepHeader() {
  const size_t end = buffer_.find("\r\n\r\n");
  if (end == std::string::npos) {
    if (buffer_.size() > max_header_) return BadResponse("header section too large");
    return false;
  }
  const std::string header = buffer_.substr(0, end);
  buffer_.erase(0, end + 4);
  NG_RETURN_IF_ERROR(ParseHeader(header));
  if (response_.status == 100) state_ = State::kHeader;  // 100 Continue: the next one
  return true;
}

Result<bool> ResponseParser::StepBody() {
  if (until_close_) {
    if (response_.body.size() + buffer_.size() > max_body_) {
      return BadResponse("body larger than " + std::to_string(max_body_) + " bytes");
    }
    response_.body.append(buffer_);
    buffer_.clear();
    return false;
  }
  return TakeBody(State::kDone);
}

Result<bool> ResponseParser::TakeBody(State next) {
  const size_t take = std::min(remaining_, buffer_.size());
  response_.body.append(buffer_, 0, take);
  buffer_.erase(0, take);
  remaining_ -= take;
  if (remaining_ > 0) return false;
  state_ = next;
  return true;
}

Result<bool> ResponseParser::StepChunkSize() {
  const size_t end = buffer_.find("\r\n");
  if (end == std::string::npos) {
    if (buffer_.size() > 1024) return BadResponse("chunk size line");
    return false;
  }
  std::string_view line(buffer_.data(), end);
  line = Trim(line.substr(0, line.find(';')));  // chunk extensions are ignored
  size_t size = 0;
  if (!ParseNumber(line, size, 16)) return BadResponse("chunk size");
  buffer_.erase(0, end + 2);
  if (size == 0) {
    state_ = State::kTrailer;
    return true;
  }
  if (size > max_body_ || response_.body.size() + size > max_body_) {
    return BadResponse("body larger than " + std::to_string(max_body_) + " bytes");
  }
  remaining_ = size;
  state_ = State::kChunkData;
  return true;
}

Result<bool> ResponseParser::StepTrailer() {
  // Trailer fields (none expected) up to an empty line.
  const size_t end = buffer_.find("\r\n");
  if (end == std::string::npos) {
    if (buffer_.size() > max_header_) return BadResponse("trailer too large");
    return false;
  }
  const bool last = end == 0;
  buffer_.erase(0, end + 2);
  if (last) state_ = State::kDone;
  return true;
}

Status ResponseParser::Step() {
  for (;;) {
    Result<bool> moved = false;
    switch (state_) {
      case State::kHeader:
        moved = StepHeader();
        break;
      case State::kBody:
        moved = StepBody();
        break;
      case State::kChunkSize:
        moved = StepChunkSize();
        break;
      case State::kChunkData:
        moved = TakeBody(State::kChunkDataEnd);
        break;
      case State::kChunkDataEnd:
        if (buffer_.size() < 2) return OkStatus();
        if (buffer_.compare(0, 2, "\r\n") != 0) return BadResponse("chunk not ended by CRLF");
        buffer_.erase(0, 2);
        state_ = State::kChunkSize;
        moved = true;
        break;
      case State::kTrailer:
        moved = StepTrailer();
        break;
      case State::kDone:
        if (!buffer_.empty()) return BadResponse("bytes after the response");
        return OkStatus();
    }
    if (!moved.ok()) return std::move(moved).error();
    if (!*moved) return OkStatus();
  }
}

Status ResponseParser::Eof() {
  if (state_ == State::kDone) return OkStatus();
  if (state_ == State::kBody && until_close_) {
    state_ = State::kDone;
    return OkStatus();
  }
  return Error(kErrIo, state_ == State::kHeader && buffer_.empty()
                           ? "the connection was closed before a response"
                           : "the connection was closed in the middle of a response");
}

}  // namespace nodegate::etcd
