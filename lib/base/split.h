#pragma once
// Splitting text without iostreams. A std::istringstream sets up the C++ classic locale (its
// facets) on first use, a measurable part of a plugin's start (issue 35); these keep the
// stream operators' semantics, so call sites change without changing what they accept.

#include <string_view>
#include <vector>

namespace nodegate {

inline constexpr std::string_view kCLocaleSpace = " \t\n\v\f\r";

// The words of `text` between runs of `separators`. With the default, C-locale white space,
// as `stream >> word` reads them one by one (and Go's strings.Fields): never an empty word.
//   Fields("  a b\tc\n") == {"a", "b", "c"}
//   Fields("a\vb c", " \t") == {"a\vb", "c"}
std::vector<std::string_view> Fields(std::string_view text,
                                     std::string_view separators = kCLocaleSpace);

// The pieces of `text` between `sep`, as std::getline(stream, piece, sep) reads them: an empty
// text has none, and a trailing separator adds no empty piece.
//   SplitLikeGetline("a::b:", ':') == {"a", "", "b"}
std::vector<std::string_view> SplitLikeGetline(std::string_view text, char sep);

}  // namespace nodegate
