# Cross builds with Debian's own toolchain (issue 33): one build description, the architecture
# a parameter.
#
#   cmake -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/debian-cross.cmake -DNODEGATE_ARCH=arm64 ...
#
# NODEGATE_ARCH is Debian's name of the target architecture; scripts/install-deps.sh --arch
# ARCH installs its compiler (crossbuild-essential-ARCH) and the ARCH -dev packages of the
# libraries the executables link. Those live in Debian's multiarch folders
# (/usr/lib/<triplet>, /usr/include/<triplet>), which the cross compiler searches itself, so
# there is no sysroot: CMAKE_LIBRARY_ARCHITECTURE makes find_library, find_package and
# pkg-config look in the target's folders only. Tests run under Debian's qemu-user-static,
# called directly (no binfmt_misc entry is needed).
set(CMAKE_TRY_COMPILE_PLATFORM_VARIABLES NODEGATE_ARCH)
if(NOT NODEGATE_ARCH)
  message(FATAL_ERROR "debian-cross.cmake: set NODEGATE_ARCH (Debian's name: arm64)")
endif()
if(NODEGATE_ARCH STREQUAL "arm64")
  set(_ng_triplet aarch64-linux-gnu)
  set(CMAKE_SYSTEM_PROCESSOR aarch64)
  set(_ng_qemu /usr/bin/qemu-aarch64-static)
else()
  message(FATAL_ERROR "debian-cross.cmake: unsupported NODEGATE_ARCH ${NODEGATE_ARCH}")
endif()

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_C_COMPILER ${_ng_triplet}-gcc)
set(CMAKE_CXX_COMPILER ${_ng_triplet}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${_ng_triplet})
# Programs (pkg-config, bash) are the build machine's; libraries and headers the target's,
# found through the multiarch folders above.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${_ng_triplet}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
# glibc and the kernel's headers of the :ARCH packages, not the cross toolchain's own copies.
# Debian's cross compiler searches its libc6-dev-ARCH-cross and linux-libc-dev-ARCH-cross
# (/usr/<triplet>/: bookworm's glibc 2.36-8 and Linux 6.1.4 headers, rebuilt rarely) before the
# multiarch folders, where libc6-dev:ARCH and linux-libc-dev:ARCH are the very versions of the
# build machine's (2.36-9+deb12u*, 6.1.1xx: every security update of glibc, which the static
# executables carry inside them). So the standard include path is spelled out without
# /usr/<triplet>/include (the compiler's own headers and libstdc++'s stay first, in GCC's
# order), and the multiarch library folder is searched first, also for crt1.o (-B).
execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=include
  OUTPUT_VARIABLE _ng_gcc_include OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${CMAKE_C_COMPILER} -dumpversion
  OUTPUT_VARIABLE _ng_gcc_version OUTPUT_STRIP_TRAILING_WHITESPACE)
set(_ng_cxx_include /usr/${_ng_triplet}/include/c++/${_ng_gcc_version})
foreach(dir ${_ng_gcc_include} ${_ng_cxx_include} /usr/include/${_ng_triplet}/bits /usr/lib/${_ng_triplet}/libc.a)
  if(NOT EXISTS ${dir})
    message(FATAL_ERROR "debian-cross.cmake: no ${dir} (scripts/install-deps.sh --arch ${NODEGATE_ARCH})")
  endif()
endforeach()
set(_ng_c_include "-isystem ${_ng_gcc_include} -isystem /usr/include/${_ng_triplet} -isystem /usr/include")
set(CMAKE_C_FLAGS_INIT "-nostdinc ${_ng_c_include}")
set(CMAKE_CXX_FLAGS_INIT "-nostdinc -isystem ${_ng_cxx_include} \
-isystem ${_ng_cxx_include}/${_ng_triplet} -isystem ${_ng_cxx_include}/backward ${_ng_c_include}")
foreach(kind EXE SHARED MODULE)
  set(CMAKE_${kind}_LINKER_FLAGS_INIT "-B/usr/lib/${_ng_triplet}/ -L/usr/lib/${_ng_triplet}")
endforeach()

# CTest runs the target's test executables through it; dynamically linked ones find the
# target's loader and libraries where the :ARCH packages put them (/lib/ld-linux-*.so.1,
# /usr/lib/<triplet>).
set(CMAKE_CROSSCOMPILING_EMULATOR ${_ng_qemu})
