#!/bin/sh
# Builds a small static OpenCV 4.6.0 (core, imgproc, imgcodecs; PNG, JPEG, TIFF, WebP, BMP and PNM decoders compiled
# in) for a portable build of the headless tools: programs linked against it need no OpenCV, GDAL, codec or BLAS
# library on the machine that runs them, only LibTorch, libzip and zlib. Debian's OpenCV (what every other build
# uses) pulls in about 140 shared libraries through imgcodecs (GDAL, GDCM, OpenEXR, ...), which a GPU node or a
# cluster node without those packages does not have (docs/performance.md, "GPU").
#
# The source is OpenCV 4.6.0, the version Debian 12 ships, taken from PyPI's opencv-python-headless 4.6.0.66 source
# archive (pinned by sha256), so that decoding and resizing are the code Debian's build runs.
#
# Usage: scripts/get-opencv.sh [DEST]    (DEST defaults to third_party/opencv-4.6.0-static)
#   then: cmake --preset libtorch2-headless -DOpenCV_DIR=DEST/lib/cmake/opencv4 (make portable does both)
# A second run finds DEST's stamp and does nothing. Needs cmake, a C++ compiler and python3 with pip or curl.
set -eu

die() {
    echo "get-opencv.sh: $*" >&2
    exit 1
}

root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/third_party/opencv-4.6.0-static}
archive=opencv-python-headless-4.6.0.66.tar.gz
sha=d5291d7e10aa2c19cab6fd86f0d61af8617290ecd2d7ffcb051e446868d04cc5
url=https://files.pythonhosted.org/packages/fe/5d/f99eb2182c6f7bf9647babe6f86f5e397f6be07a2035bbdf272e7cb16cd4/$archive
stamp=$dest/.get-opencv-complete

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sha" ]; then
    echo "get-opencv.sh: static OpenCV 4.6.0 already in $dest"
    exit 0
fi
[ ! -e "$dest" ] || [ -f "$stamp" ] || die "$dest exists and is not a folder this script made: move it away first"
command -v cmake >/dev/null 2>&1 || die "cmake is needed (apt-get install cmake)"

work=$dest.tmp-$$
trap 'rm -rf "$work"' EXIT
trap 'exit 1' INT TERM HUP
mkdir -p "$work"
if [ -n "${OPENCV_ARCHIVE:-}" ]; then
    cp "$OPENCV_ARCHIVE" "$work/$archive"
else
    echo "get-opencv.sh: downloading $archive"
    if command -v curl >/dev/null 2>&1; then
        curl -sSLfo "$work/$archive" "$url" || die "could not download $url"
    else
        python3 -c "import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])" "$url" \
            "$work/$archive" || die "could not download $url"
    fi
fi
[ "$(sha256sum "$work/$archive" | cut -d' ' -f1)" = "$sha" ] || die "$archive: sha256 does not match"
tar -C "$work" -xzf "$work/$archive"
src=$work/opencv-python-headless-4.6.0.66/opencv
generator=
command -v ninja >/dev/null 2>&1 && generator="-G Ninja"
# Only what the engine calls (decode, encode, resize, colour conversion, split and merge); no parallel back-end but
# pthreads, no IPP (a download), no OpenCL, no BLAS. zlib is the system's, as the rest of the program uses it.
# shellcheck disable=SC2086
cmake -S "$src" -B "$work/build" $generator -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DBUILD_LIST=core,imgproc,imgcodecs -DCMAKE_INSTALL_PREFIX="$dest" -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DWITH_IPP=OFF -DWITH_TBB=OFF -DWITH_OPENMP=OFF -DWITH_LAPACK=OFF -DWITH_EIGEN=OFF -DWITH_OPENCL=OFF \
    -DWITH_VA=OFF -DWITH_VA_INTEL=OFF -DWITH_ITT=OFF -DWITH_GDAL=OFF -DWITH_GDCM=OFF -DWITH_OPENEXR=OFF \
    -DWITH_OPENJPEG=OFF -DWITH_JASPER=OFF -DWITH_PROTOBUF=OFF -DWITH_QUIRC=OFF -DWITH_ADE=OFF -DWITH_FFMPEG=OFF \
    -DWITH_GSTREAMER=OFF -DWITH_V4L=OFF -DWITH_GTK=OFF -DWITH_QT=OFF -DWITH_1394=OFF -DWITH_CUDA=OFF -DWITH_VTK=OFF \
    -DWITH_IMGCODEC_SUNRASTER=OFF -DWITH_IMGCODEC_PFM=OFF \
    -DBUILD_ZLIB=OFF -DBUILD_PNG=ON -DBUILD_JPEG=ON -DBUILD_TIFF=ON -DBUILD_WEBP=ON -DBUILD_OPENJPEG=OFF \
    -DBUILD_TESTS=OFF -DBUILD_PERF_TESTS=OFF -DBUILD_EXAMPLES=OFF -DBUILD_opencv_apps=OFF -DBUILD_opencv_python3=OFF \
    -DBUILD_opencv_python2=OFF -DBUILD_JAVA=OFF -DBUILD_DOCS=OFF -DOPENCV_GENERATE_PKGCONFIG=OFF -DBUILD_ITT=OFF \
    >"$work/configure.log" 2>&1 || die "configure failed (log: $work/configure.log)"
cmake --build "$work/build" -j "${JOBS:-$(nproc)}" >"$work/build.log" 2>&1 \
    || { tail -20 "$work/build.log" >&2; die "build failed"; }
cmake --install "$work/build" >/dev/null
echo "$sha" >"$stamp"
echo "get-opencv.sh: static OpenCV 4.6.0 in $dest"
