# All third-party packages come from Debian (see the Makefile's DEPS); a CUDA LibTorch can be used instead by
# pointing CMAKE_PREFIX_PATH at it.
find_package(Torch REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(OpenCV REQUIRED COMPONENTS core imgproc imgcodecs)
find_package(CLI11 REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBZIP REQUIRED IMPORTED_TARGET libzip)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
