// Times bare execs for `make bench` (bench/startup/bench.sh): each round runs every given
// executable once, in turn (so a drift of the machine's speed falls on all of them alike), with
// CNI_COMMAND=VERSION, stdin and stdout on /dev/null, and times spawn to exit.
//
//   exec_timer ROUNDS EXE...      one line per executable: "EXE median_ms p10_ms p90_ms"
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

double Percentile(std::vector<double> values, double fraction) {
  std::sort(values.begin(), values.end());
  return values[static_cast<size_t>(fraction * static_cast<double>(values.size() - 1))];
}

// One exec of `exe` to its exit, in ms; negative when it failed.
double TimeOnce(const char* exe, char* const* env, const posix_spawn_file_actions_t* actions) {
  char* const argv[] = {const_cast<char*>(exe), nullptr};
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, exe, actions, nullptr, argv, env) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return -1;
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: exec_timer ROUNDS EXE...\n");
    return 2;
  }
  const int rounds = std::atoi(argv[1]);
  std::string command = "CNI_COMMAND=VERSION";
  char* env[] = {command.data(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  const int count = argc - 2;
  std::vector<std::vector<double>> times(static_cast<size_t>(count));
  for (int round = -rounds / 10; round < rounds; ++round) {  // a tenth of warm-up rounds
    for (int i = 0; i < count; ++i) {
      const double ms = TimeOnce(argv[i + 2], env, &actions);
      if (ms < 0) {
        std::fprintf(stderr, "exec_timer: %s failed\n", argv[i + 2]);
        return 1;
      }
      if (round >= 0) times[static_cast<size_t>(i)].push_back(ms);
    }
  }
  for (int i = 0; i < count; ++i) {
    const auto& t = times[static_cast<size_t>(i)];
    std::printf("%s %.3f %.3f %.3f\n", argv[i + 2], Percentile(t, 0.5), Percentile(t, 0.1),
                Percentile(t, 0.9));
  }
  return 0;
}
