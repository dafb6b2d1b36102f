#include <iostream>

#include "runtime/cli/cli.h"

namespace nodegate::runtime {

int RunCniCli(int, char**) {
  std::cerr << "nodegate cni: not implemented yet\n";
  return 2;
}

int RunConfCli(int, char**) {
  std::cerr << "nodegate conf: not implemented yet\n";
  return 2;
}

}  // namespace nodegate::runtime
