// kube_decode_bench: how fast a PodList is decoded into the records the webhook keeps, by the
// path the webhook takes (kube/decode: ListStream + simdjson On-Demand + admit's decoder on the
// copied part) and by the two others considered (nlohmann/json's SAX parser over the same
// bytes, which only walks them; and an nlohmann/json tree per item with admit's decoder).
// bench/webhook/bench.sh runs it on a generated list and prints MB/s of CPU time (what the
// decoder costs, whatever else the machine is doing); kube/README.md explains.
//
//   kube_decode_bench LIST.json [ours]      ("ours": only the webhook's way, e.g. for a profile)

#include <time.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "admit/api/decode.h"
#include "admit/check/pod_facts.h"
#include "kube/decode/list_stream.h"
#include "kube/decode/objects.h"

namespace {

// CPU time of this process: on a shared machine, what the decoder itself costs.
struct CpuClock {
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<CpuClock>;
  static time_point now() {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return time_point(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
  }
};
using Clock = CpuClock;

// Counter: nlohmann's SAX events, counted (the least any decoder built on it would do).
struct Counter : nlohmann::json_sax<nlohmann::json> {
  size_t values = 0;
  bool null() override { return ++values; }
  bool boolean(bool) override { return ++values; }
  bool number_integer(number_integer_t) override { return ++values; }
  bool number_unsigned(number_unsigned_t) override { return ++values; }
  bool number_float(number_float_t, const string_t&) override { return ++values; }
  bool string(string_t&) override { return ++values; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
};

void Report(const char* way, size_t bytes, size_t pods, double seconds) {
  char per_pod[32] = "      - ns/pod";
  if (pods > 0) {
    std::snprintf(per_pod, sizeof(per_pod), "%7.0f ns/pod",
                  seconds * 1e9 / static_cast<double>(pods));
  }
  std::printf("%-44s %8.0f MB/s  %s  (%zu pods, %.2f CPU s)\n", way,
              static_cast<double>(bytes) / 1e6 / seconds, per_pod, pods, seconds);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: kube_decode_bench LIST.json\n";
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  const std::string body((std::istreambuf_iterator<char>(file)), {});
  const nodegate::admit::FeatureGates gates;
  constexpr size_t kChunk = 256u << 10;  // what the client hands over per read

  {
    nodegate::kube::ObjectDecoder decoder(gates);
    size_t pods = 0;
    size_t failed = 0;
    nodegate::kube::ListStream list([&](std::string_view item) {
      auto pod = decoder.Pod(item);
      pod.ok() ? ++pods : ++failed;
    });
    const auto start = Clock::now();
    for (size_t off = 0; off < body.size(); off += kChunk) {
      if (!list.Feed(std::string_view(body).substr(off, kChunk)).ok()) {
        std::cerr << "not a list\n";
        return 1;
      }
    }
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    Report("ListStream + simdjson + admit (the webhook)", body.size(), pods, s);
    if (failed != 0) {
      std::cerr << failed << " pods could not be decoded\n";
      return 1;
    }
  }
  if (argc > 2 && std::string_view(argv[2]) == "ours") {
    return 0;
  }
  {
    Counter counter;
    const auto start = Clock::now();
    nlohmann::json::sax_parse(body, &counter);
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    Report("nlohmann SAX, walking only", body.size(), 0, s);
  }
  {
    // A tenth of the list: a tree per item is slow enough that the rest adds nothing.
    size_t pods = 0;
    size_t bytes = 0;
    const auto start = Clock::now();
    nodegate::kube::ListStream list([&](std::string_view item) {
      bytes += item.size();
      auto pod = nodegate::admit::DecodePod(nlohmann::json::parse(item), "pod");
      if (pod.ok()) {
        nodegate::admit::MakePodFacts(*pod, gates, true);
        ++pods;
      }
    });
    (void)list.Feed(std::string_view(body).substr(0, body.size() / 10));
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    Report("nlohmann tree per item + admit (1/10)", bytes, pods, s);
  }
  return 0;
}
