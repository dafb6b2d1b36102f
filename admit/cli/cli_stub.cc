#include <iostream>

#include "admit/cli/cli.h"

namespace nodegate::admit {

int RunAdmitCli(int, char**) {
  std::cerr << "nodegate admit: not implemented yet\n";
  return 2;
}

int RunGuardCli(int, char**) {
  std::cerr << "nodegate guard: not implemented yet\n";
  return 2;
}

}  // namespace nodegate::admit
