// admit_bench: checking one pod against a node with N existing pods read from a PodList file.
// For N in {110, 1000, 10000} it writes the inputs into a temporary folder and reports (median
// of several runs, milliseconds):
//   parse   read + parse + decode of the PodList (the input cost alone)
//   total   parse + building the node (requests, used ports) + checking the candidate
//   beyond  total - parse
//   filter  checking the candidate on the ready node (scheduler and kubelet profiles)
// Usage: admit_bench [TMPDIR]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "admit/api/load.h"
#include "admit/check/checker.h"

namespace {

using nodegate::admit::Checker;
using nodegate::admit::CheckOptions;
using nodegate::admit::Node;
using nodegate::admit::Pod;
using nodegate::admit::Profile;
using Clock = std::chrono::steady_clock;

nlohmann::json MakePod(int i) {
  nlohmann::json container = {
      {"name", "app"},
      {"image", "registry.example/app:1"},
      {"resources",
       {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}},
        {"limits", {{"cpu", "100m"}, {"memory", "64Mi"}}}}},
  };
  // One pod in ten holds a host port (distinct ports, so the node stays consistent).
  if (i % 10 == 0) {
    container["ports"] = {{{"containerPort", 8080}, {"hostPort", 20000 + i / 10}}};
  }
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", "pod-" + std::to_string(i)},
        {"namespace", "ns-" + std::to_string(i % 50)},
        {"uid", "uid-" + std::to_string(i)},
        {"labels", {{"app", "bench"}, {"shard", std::to_string(i % 7)}}}}},
      {"spec",
       {{"nodeName", "bench-node"},
        {"containers", {container}},
        {"tolerations",
         {{{"key", "node.kubernetes.io/not-ready"},
           {"operator", "Exists"},
           {"effect", "NoExecute"},
           {"tolerationSeconds", 300}}}}}},
      {"status", {{"phase", "Running"}}},
  };
}

void WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename T>
T Must(nodegate::Result<T> r) {
  if (!r.ok()) {
    std::cerr << "admit_bench: " << r.error().msg << "\n";
    std::exit(1);
  }
  return std::move(r).value();
}

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path dir =
      argc > 1 ? std::filesystem::path(argv[1]) : std::filesystem::temp_directory_path();
  const nlohmann::json node_json = {
      {"kind", "Node"},
      {"metadata", {{"name", "bench-node"}, {"labels", {{"kubernetes.io/os", "linux"}}}}},
      {"status", {{"allocatable", {{"cpu", "256"}, {"memory", "1Ti"}, {"pods", "20000"}}}}},
  };
  WriteFile(dir / "node.json", node_json.dump());
  nlohmann::json candidate = MakePod(999999);
  candidate["metadata"]["name"] = "candidate";
  candidate["spec"].erase("nodeName");
  candidate["spec"]["containers"][0]["ports"] = {
      {{"containerPort", 53}, {"hostPort", 53}, {"protocol", "UDP"}}};
  WriteFile(dir / "candidate.json", candidate.dump());
  const Node node = Must(nodegate::admit::LoadNode((dir / "node.json").string()));
  const Pod pod = Must(nodegate::admit::LoadPods((dir / "candidate.json").string(), true)).front();

  std::printf("%-8s %10s %10s %10s %10s %14s %14s\n", "pods", "file KiB", "parse ms", "total ms",
              "beyond ms", "filter sched", "filter kubelet");
  for (int n : {110, 1000, 10000}) {
    nlohmann::json list = {
        {"apiVersion", "v1"}, {"kind", "PodList"}, {"items", nlohmann::json::array()}};
    for (int i = 0; i < n; ++i) {
      list["items"].push_back(MakePod(i));
    }
    const std::filesystem::path file = dir / ("pods-" + std::to_string(n) + ".json");
    WriteFile(file, list.dump());
    const int runs = n >= 10000 ? 7 : 21;
    std::vector<double> parse, total, filter_sched, filter_kubelet;
    for (int r = 0; r < runs; ++r) {
      auto t0 = Clock::now();
      std::vector<Pod> pods = Must(nodegate::admit::LoadPods(file.string(), false));
      auto t1 = Clock::now();
      Checker checker(node, CheckOptions{});
      checker.AddExistingPods(std::move(pods));
      auto verdict = checker.Check(pod);
      auto t2 = Clock::now();
      if (!verdict.admitted) {
        std::cerr << "admit_bench: the candidate should fit\n";
        return 1;
      }
      parse.push_back(Ms(t1 - t0));
      total.push_back(Ms(t2 - t0));
      // The predicates alone, on the ready node.
      auto t3 = Clock::now();
      for (int k = 0; k < 10; ++k) {
        (void)checker.Check(pod);
      }
      filter_sched.push_back(Ms(Clock::now() - t3) / 10);
    }
    {
      CheckOptions kopts;
      kopts.profile = Profile::kKubelet;
      Checker checker(node, kopts);
      checker.AddExistingPods(Must(nodegate::admit::LoadPods(file.string(), false)));
      for (int r = 0; r < runs; ++r) {
        auto t0 = Clock::now();
        for (int k = 0; k < 10; ++k) {
          (void)checker.Check(pod);
        }
        filter_kubelet.push_back(Ms(Clock::now() - t0) / 10);
      }
    }
    const double p = Median(parse);
    const double t = Median(total);
    std::printf("%-8d %10.0f %10.2f %10.2f %10.2f %14.3f %14.3f\n", n,
                static_cast<double>(std::filesystem::file_size(file)) / 1024, p, t, t - p,
                Median(filter_sched), Median(filter_kubelet));
  }
  return 0;
}
