#include "lib/base/split.h"

namespace nodegate {

std::vector<std::string_view> Fields(std::string_view text, std::string_view separators) {
  auto is_separator = [separators](char c) { return separators.find(c) != std::string_view::npos; };
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_separator(text[i])) ++i;
    const size_t start = i;
    while (i < text.size() && !is_separator(text[i])) ++i;
    if (i > start) words.push_back(text.substr(start, i - start));
  }
  return words;
}

std::vector<std::string_view> SplitLikeGetline(std::string_view text, char sep) {
  std::vector<std::string_view> pieces;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find(sep, start);
    if (end == std::string_view::npos) {
      pieces.push_back(text.substr(start));
      break;
    }
    pieces.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return pieces;
}

}  // namespace nodegate
