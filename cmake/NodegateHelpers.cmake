# Declarative helpers so each folder's CMakeLists.txt reads like a BUILD file.
#
#   ng_library(NAME foo SRCS a.cc b.cc DEPS ng::base PUBLIC_DEPS ...)   -> target foo, alias ng::foo
#   ng_executable(NAME portmap SRCS main.cc DEPS ng::portmap)          -> build/bin/portmap
#   ng_test(NAME foo_test SRCS foo_test.cc DEPS ng::foo LABELS unit)   -> gtest binary + ctest entry
#   ng_script_test(NAME x_test SCRIPT x_test.sh LABELS netns)          -> a script as a ctest entry
#   ng_python_test(NAME y_test SCRIPT y_test.py LABELS unit)           -> a unittest module

set(NG_WARNINGS -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
if(NODEGATE_WERROR)
  list(APPEND NG_WARNINGS -Werror)
endif()

set(NG_SANITIZE_FLAGS "")
if(NODEGATE_SANITIZE)
  set(NG_SANITIZE_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
endif()
# make fuzz (tests/fuzz): every library gets libFuzzer's coverage instrumentation and both
# sanitizers; only the fuzz targets themselves link libFuzzer's main (NG_FUZZER_LINK_FLAGS).
if(NODEGATE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "NODEGATE_FUZZ needs clang (CC=clang CXX=clang++)")
  endif()
  set(NG_SANITIZE_FLAGS -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
    -fno-sanitize-recover=undefined)
  set(NG_FUZZER_LINK_FLAGS -fsanitize=fuzzer,address,undefined)
endif()

function(_ng_common target)
  target_compile_options(${target} PRIVATE ${NG_WARNINGS} ${NG_SANITIZE_FLAGS})
  if(NG_STATIC_EXECUTABLES)
    # Each function in a section of its own, for the linker to order (cmake/text-order/).
    target_compile_options(${target} PRIVATE -ffunction-sections)
  endif()
  target_link_options(${target} PRIVATE ${NG_SANITIZE_FLAGS})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
endfunction()

function(ng_library)
  cmake_parse_arguments(NG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_library(${NG_NAME} STATIC ${NG_SRCS})
  add_library(ng::${NG_NAME} ALIAS ${NG_NAME})
  _ng_common(${NG_NAME})
  target_link_libraries(${NG_NAME} PUBLIC ${NG_DEPS})
  if(NG_SANITIZE_FLAGS)
    target_link_options(${NG_NAME} INTERFACE ${NG_SANITIZE_FLAGS})
  endif()
endfunction()

# The shipped executables are static (-static, not -static-pie): no ELF interpreter, no
# DT_NEEDED, nothing loaded at run time, so they run on any x86_64 Linux userland (glibc of any
# version, musl, none), as the reference's CGO_ENABLED=0 builds do. Every plugin call is an
# exec, and a static binary also skips the dynamic loader's work. A bare VERSION exec of
# portmap, medians of 2,000 rounds in turn (bench/startup's timer): a static no-op 0.47 ms,
# -static 0.71, -static-pie 0.81, dynamic with only libc loaded 0.93. -static-pie would spend
# about 0.1 ms more relocating itself (6,300 relative relocations, each page they touch a
# copy-on-write fault), for an executable image at a random address, which the reference's
# non-PIE binaries do not have either. Everything linked must therefore exist as a
# static archive (libstdc++, libgcc, glibc, libnl, libyaml: ng_link_dependencies; libiptc:
# third_party/), and nothing may dlopen or reach glibc's NSS, which a static glibc can only do
# for the exact glibc it was built with: every executable's name, service and protocol lookups
# go to lib/net/name_lookup.h instead (ng::libc_name_lookup), and tests/executables checks the
# binaries. Sanitizer builds cannot be static (their runtimes are shared libraries) and stay
# dynamic.
set(NG_STATIC_EXECUTABLES OFF)
if(NODEGATE_STATIC AND NOT NG_SANITIZE_FLAGS)
  set(NG_STATIC_EXECUTABLES ON)
endif()

function(ng_executable)
  cmake_parse_arguments(NG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${NG_NAME} ${NG_SRCS})
  _ng_common(${NG_NAME})
  # Name lookups without NSS in every build, so that they behave the same in each
  # (lib/net/name_lookup.h).
  target_link_libraries(${NG_NAME} PRIVATE ${NG_DEPS} ng::libc_name_lookup)
  if(NG_STATIC_EXECUTABLES)
    target_link_options(${NG_NAME} PRIVATE -static)
    target_link_libraries(${NG_NAME} PRIVATE ng::libc_no_loading)
    # The functions a call runs, placed together at the start of the code by LLVM's linker
    # (GNU ld 2.40 has no ordering option): fewer pages faulted in per call
    # (cmake/text-order/README.md). Native builds only: Debian's cross gcc looks for
    # <triplet>-ld.lld, which no package installs.
    set(order ${PROJECT_SOURCE_DIR}/cmake/text-order/${NG_NAME}.txt)
    if(EXISTS ${order} AND NOT CMAKE_CROSSCOMPILING)
      target_link_options(${NG_NAME} PRIVATE -fuse-ld=lld -Wl,--symbol-ordering-file=${order}
        -Wl,--no-warn-symbol-ordering)
      set_property(TARGET ${NG_NAME} APPEND PROPERTY LINK_DEPENDS ${order})
    endif()
  elseif(NOT NG_SANITIZE_FLAGS)
    target_link_options(${NG_NAME} PRIVATE -Wl,--as-needed -static-libstdc++ -static-libgcc)
  else()
    target_link_options(${NG_NAME} PRIVATE -Wl,--as-needed)
  endif()
endfunction()

# ng_archive_library(NAME x ARCHIVES a b [INCLUDE_DIRS ...] [LIBS ...] SHARED target)
#   -> ng::x, linking liba.a and libb.a (in that order) and then LIBS. Without one of the
#   archives, a static build stops at configure time and any other build links SHARED instead.
#   For a library that a static executable links, e.g. OpenSSL:
#     ng_archive_library(NAME openssl ARCHIVES ssl crypto SHARED PkgConfig::OPENSSL)
function(ng_archive_library)
  cmake_parse_arguments(NG "" "NAME;SHARED" "ARCHIVES;INCLUDE_DIRS;LIBS" ${ARGN})
  add_library(ng_${NG_NAME} INTERFACE)
  add_library(ng::${NG_NAME} ALIAS ng_${NG_NAME})
  set(archives "")
  foreach(lib ${NG_ARCHIVES})
    find_library(NG_${lib}_ARCHIVE NAMES lib${lib}.a)
    if(NOT NG_${lib}_ARCHIVE)
      if(NG_STATIC_EXECUTABLES)
        message(FATAL_ERROR "lib${lib}.a not found: static executables need it "
          "(scripts/install-deps.sh, or -DNODEGATE_STATIC=OFF)")
      endif()
      message(STATUS "lib${lib}.a not found: linking ${NG_SHARED}")
      target_link_libraries(ng_${NG_NAME} INTERFACE ${NG_SHARED})
      return()
    endif()
    list(APPEND archives ${NG_${lib}_ARCHIVE})
  endforeach()
  target_include_directories(ng_${NG_NAME} SYSTEM INTERFACE ${NG_INCLUDE_DIRS})
  target_link_libraries(ng_${NG_NAME} INTERFACE ${archives} ${NG_LIBS})
endfunction()

# ng::spdlog: spdlog and fmt compiled into the user (header-only: no libspdlog or libfmt at run
# time; Debian's spdlog::spdlog_header_only would also link the shared libfmt).
# ng::libnl: libnl-3 and -route; ng::yaml: libyaml; both from their static archives.
function(ng_link_dependencies)
  add_library(ng_spdlog INTERFACE)
  target_include_directories(ng_spdlog SYSTEM INTERFACE
    $<TARGET_PROPERTY:spdlog::spdlog_header_only,INTERFACE_INCLUDE_DIRECTORIES>)
  target_compile_definitions(ng_spdlog INTERFACE
    $<TARGET_PROPERTY:spdlog::spdlog_header_only,INTERFACE_COMPILE_DEFINITIONS>)
  target_link_libraries(ng_spdlog INTERFACE fmt::fmt-header-only Threads::Threads)
  add_library(ng::spdlog ALIAS ng_spdlog)

  ng_archive_library(NAME libnl ARCHIVES nl-route-3 nl-3
    INCLUDE_DIRS ${LIBNL_INCLUDE_DIRS} LIBS Threads::Threads m SHARED PkgConfig::LIBNL)
  ng_archive_library(NAME yaml ARCHIVES yaml INCLUDE_DIRS ${LIBYAML_INCLUDE_DIRS}
    SHARED PkgConfig::LIBYAML)
endfunction()

# LABELS: unit | netns | e2e. netns and e2e tests run serially (they share the kernel).
# Every test source includes gtest, gmock and nlohmann/json: about two thirds of a test file's
# compile time. They are precompiled once (ng_test_pch) and every test reuses that header.
# Through a precompiled header the standard library no longer counts as a system header, so
# GCC 12's known false positives inside std::string (array-bounds, stringop-*, restrict; GCC
# bugs 105329, 105651) would stop the build of test code. Project libraries are unaffected.
function(_ng_pch_warnings target)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-array-bounds -Wno-stringop-overflow
      -Wno-stringop-overread -Wno-restrict)
  endif()
endfunction()

function(_ng_test_pch)
  if(TARGET ng_test_pch)
    return()
  endif()
  file(WRITE ${CMAKE_BINARY_DIR}/ng_test_pch.cc "// the precompiled header's own translation unit\n")
  add_library(ng_test_pch STATIC ${CMAKE_BINARY_DIR}/ng_test_pch.cc)
  _ng_common(ng_test_pch)
  _ng_pch_warnings(ng_test_pch)
  target_link_libraries(ng_test_pch PRIVATE GTest::gtest GTest::gmock nlohmann_json::nlohmann_json)
  target_precompile_headers(ng_test_pch PRIVATE <gtest/gtest.h> <gmock/gmock.h>
    <nlohmann/json.hpp> <string> <vector> <map> <memory>)
endfunction()

# Every test runs through scripts/run-test.py, which counts its cases and sees its skips: a
# skipped test exits 77 and CTest shows it as skipped, never as passed; under CI (CI=true) a skip
# that tests/allowed_skips.txt does not list fails it (CONTRIBUTING.md, "How a test may skip").
# KIND: gtest (a GoogleTest binary), script (exit 77 and a line "SKIP: why" to skip), unittest.
# A test added with add_test alone is not counted: scripts/count-tests.py fails its stage.
function(_ng_counted_test name kind)
  add_test(NAME ${name} COMMAND python3 ${PROJECT_SOURCE_DIR}/scripts/run-test.py --name ${name}
    --kind ${kind} -- ${ARGN})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77)
endfunction()

# Tests run in parallel (`ctest -j`) unless they touch what is shared by the whole machine or
# measure time: label `e2e` (a runtime's global state: podman's storage, a containerd), `deploy`
# (dpkg's database, podman images) and `serial` (rates measured on real traffic) run alone.
# Every other test works in namespaces and folders of its own (tests/support/netns_fixture.h
# names them after the process), so two of them cannot see each other.
function(_ng_serial_when_labelled name labels)
  foreach(exclusive e2e deploy serial)
    if(exclusive IN_LIST labels)
      set_tests_properties(${name} PROPERTIES RUN_SERIAL TRUE)
      return()
    endif()
  endforeach()
endfunction()

function(ng_test)
  cmake_parse_arguments(NG "" "NAME;TIMEOUT;COST" "SRCS;DEPS;LABELS;EXECS;DEFINES" ${ARGN})
  if(NOT NG_LABELS)
    set(NG_LABELS unit)
  endif()
  if("unit" IN_LIST NG_LABELS AND NOT NODEGATE_UNIT_TESTS)
    return()
  endif()
  add_executable(${NG_NAME} ${NG_SRCS})
  _ng_common(${NG_NAME})
  target_link_libraries(${NG_NAME} PRIVATE ${NG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  if(NG_DEFINES)
    target_compile_definitions(${NG_NAME} PRIVATE ${NG_DEFINES})
  endif()
  if(NG_EXECS)  # executables the test runs, built before it
    add_dependencies(${NG_NAME} ${NG_EXECS})
  endif()
  _ng_test_pch()
  target_precompile_headers(${NG_NAME} REUSE_FROM ng_test_pch)
  _ng_pch_warnings(${NG_NAME})
  set_target_properties(${NG_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  if(NOT NG_TIMEOUT)
    set(NG_TIMEOUT 600)
  endif()
  # Through scripts/run-test.py (_ng_counted_test), which runs a cross build's binary under its
  # emulator itself: CTest adds the emulator only to a command that is a target.
  _ng_counted_test(${NG_NAME} gtest ${CMAKE_CROSSCOMPILING_EMULATOR} $<TARGET_FILE:${NG_NAME}>)
  set_tests_properties(${NG_NAME} PROPERTIES LABELS "${NG_LABELS}" TIMEOUT ${NG_TIMEOUT}
    ENVIRONMENT "NODEGATE_BIN_DIR=${CMAKE_BINARY_DIR}/bin;NODEGATE_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  if("unit" IN_LIST NG_LABELS)
    add_dependencies(unit_tier ${NG_NAME})
  endif()
  # COST: about how many seconds the test takes. ctest -j starts the costliest first; a fresh
  # build folder has no timings of its own, and a long test started last makes a long tail.
  if(NG_COST)
    set_tests_properties(${NG_NAME} PROPERTIES COST ${NG_COST})
  endif()
  _ng_serial_when_labelled(${NG_NAME} "${NG_LABELS}")
endfunction()

# What a script test needs to know of a cross build (cmake/toolchains/debian-cross.cmake): the
# executables' architecture, how to run them here (qemu-user) and the binutils that read them.
set(NG_SCRIPT_TEST_CROSS_ENV "")
if(CMAKE_CROSSCOMPILING)
  set(NG_SCRIPT_TEST_CROSS_ENV "NODEGATE_ARCH=${NODEGATE_ARCH}"
    "NODEGATE_EMULATOR=${CMAKE_CROSSCOMPILING_EMULATOR}"
    "NODEGATE_TOOL_PREFIX=${CMAKE_LIBRARY_ARCHITECTURE}-")
endif()

# A test written as a shell script (e2e tier, differential tests); ARGS are the script's, ENV
# (VAR=value...) its extra environment. It skips with `skip_test "why"` (scripts/lib/check.sh):
# a line "SKIP: why" and exit status 77.
function(ng_script_test)
  cmake_parse_arguments(NG "" "NAME;SCRIPT;TIMEOUT" "LABELS;ARGS;ENV" ${ARGN})
  if(NOT NG_TIMEOUT)
    set(NG_TIMEOUT 900)
  endif()
  _ng_counted_test(${NG_NAME} script bash ${NG_SCRIPT} ${NG_ARGS})
  set_tests_properties(${NG_NAME} PROPERTIES LABELS "${NG_LABELS}" TIMEOUT ${NG_TIMEOUT}
    ENVIRONMENT "NODEGATE_BIN_DIR=${CMAKE_BINARY_DIR}/bin;NODEGATE_SOURCE_DIR=${PROJECT_SOURCE_DIR};${NG_SCRIPT_TEST_CROSS_ENV};${NG_ENV}")
  _ng_serial_when_labelled(${NG_NAME} "${NG_LABELS}")
endfunction()

# A Python unittest module (SCRIPT), its methods counted and its skips seen as a GoogleTest
# binary's are; the module needs no main of its own.
function(ng_python_test)
  cmake_parse_arguments(NG "" "NAME;SCRIPT;TIMEOUT;COST" "LABELS;ENV" ${ARGN})
  if(NOT NG_TIMEOUT)
    set(NG_TIMEOUT 900)
  endif()
  _ng_counted_test(${NG_NAME} unittest python3 ${NG_SCRIPT})
  set_tests_properties(${NG_NAME} PROPERTIES LABELS "${NG_LABELS}" TIMEOUT ${NG_TIMEOUT}
    ENVIRONMENT "NODEGATE_BIN_DIR=${CMAKE_BINARY_DIR}/bin;NODEGATE_SOURCE_DIR=${PROJECT_SOURCE_DIR};${NG_ENV}")
  if(NG_COST)
    set_tests_properties(${NG_NAME} PROPERTIES COST ${NG_COST})
  endif()
  _ng_serial_when_labelled(${NG_NAME} "${NG_LABELS}")
endfunction()
