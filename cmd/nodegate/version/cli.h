#pragma once
// `nodegate version` (and `nodegate --version`): what a bug report needs to name the build
// (lib/build/build_info.h). Exit status: 0 printed, 2 unusable flags.

namespace nodegate::version_cli {

int RunVersionCli(int argc, char** argv);

}  // namespace nodegate::version_cli
