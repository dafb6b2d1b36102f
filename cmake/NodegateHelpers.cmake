# Declarative helpers so each folder's CMakeLists.txt reads like a BUILD file.
#
#   ng_library(NAME foo SRCS a.cc b.cc DEPS ng::base PUBLIC_DEPS ...)   -> target foo, alias ng::foo
#   ng_executable(NAME portmap SRCS main.cc DEPS ng::portmap)          -> build/bin/portmap
#   ng_test(NAME foo_test SRCS foo_test.cc DEPS ng::foo LABELS unit)   -> gtest binary + ctest entry

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

# Plugins are exec'd once per container event, so the dynamic loader's work is part of every
# call: each shared library costs its symbol lookups at each exec (measured on the development
# machine: libstdc++ 1.4 ms, spdlog+fmt 2 ms, libnl 0.9 ms, libnftables 1.2 ms, against 1.5 ms
# for a bare exec; libiptc and libm 0.7 ms each here). Executables therefore load only libc:
# libstdc++ and libgcc are linked statically, spdlog and fmt are compiled in (header-only),
# libnl comes from its static archives, libnftables is opened only when the nftables backend
# runs (lib/netfilter/nft.cc) and libiptc only in legacy mode
# (plugins/portmap/iptables/legacy/ops.h); nothing calls libm (tests/executables).
function(ng_executable)
  cmake_parse_arguments(NG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${NG_NAME} ${NG_SRCS})
  _ng_common(${NG_NAME})
  target_link_libraries(${NG_NAME} PRIVATE ${NG_DEPS})
  target_link_options(${NG_NAME} PRIVATE -Wl,--as-needed)
  if(NOT NG_SANITIZE_FLAGS)
    target_link_options(${NG_NAME} PRIVATE -static-libstdc++ -static-libgcc)
  endif()
endfunction()

# ng::spdlog: spdlog and fmt compiled into the user (no libspdlog/libfmt at run time).
# ng::libnl: libnl-3, -route and -nf from their static archives when Debian ships them.
function(ng_link_dependencies)
  add_library(ng_spdlog INTERFACE)
  target_link_libraries(ng_spdlog INTERFACE spdlog::spdlog_header_only fmt::fmt-header-only)
  add_library(ng::spdlog ALIAS ng_spdlog)

  add_library(ng_libnl INTERFACE)
  set(archives "")
  foreach(lib nl-route-3 nl-nf-3 nl-3)
    find_library(NG_${lib}_ARCHIVE NAMES lib${lib}.a)
    if(NOT NG_${lib}_ARCHIVE)
      set(archives "")
      break()
    endif()
    list(APPEND archives ${NG_${lib}_ARCHIVE})
  endforeach()
  if(archives)
    target_include_directories(ng_libnl SYSTEM INTERFACE ${LIBNL_INCLUDE_DIRS})
    target_link_libraries(ng_libnl INTERFACE ${archives} Threads::Threads m)
  else()
    message(STATUS "libnl static archives not found: linking the shared libraries")
    target_link_libraries(ng_libnl INTERFACE PkgConfig::LIBNL)
  endif()
  add_library(ng::libnl ALIAS ng_libnl)
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
  add_test(NAME ${NG_NAME} COMMAND ${NG_NAME})
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

# A test written as a shell script (e2e tier, differential tests); ARGS are the script's.
function(ng_script_test)
  cmake_parse_arguments(NG "" "NAME;SCRIPT;TIMEOUT" "LABELS;ARGS" ${ARGN})
  if(NOT NG_TIMEOUT)
    set(NG_TIMEOUT 900)
  endif()
  add_test(NAME ${NG_NAME} COMMAND bash ${NG_SCRIPT} ${NG_ARGS})
  set_tests_properties(${NG_NAME} PROPERTIES LABELS "${NG_LABELS}" TIMEOUT ${NG_TIMEOUT}
    ENVIRONMENT "NODEGATE_BIN_DIR=${CMAKE_BINARY_DIR}/bin;NODEGATE_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  _ng_serial_when_labelled(${NG_NAME} "${NG_LABELS}")
endfunction()
