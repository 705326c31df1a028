// libFuzzer harness of the image header reader (engine/src/image/ImageHeader.h) and the decoder
// (engine/include/attnscope/Image.h). The input is a whole image file.
//
// readImageHeader gets a copy of the input in a heap buffer of exactly its size, so that a read past `size` is a
// heap-buffer-overflow under ASan. Its result must keep the header's documented promises: the format is empty or
// one of the names listed there; width and height are -1 (truncated) or >= 0; an unrecognised input has no size,
// `complete` false only for JPEG, `grey` only for PNG, `refused` only for JPEG 2000.
//
// decodeImage gets the same bytes through a memfd (its /proc/self/fd path), with a pixel budget of 1 megapixel. It
// must return an image or an Error and never throw; an Error is one line naming the path; an image has 1 or 3
// channels, positive sides within the budget and width x height x channels pixels. Image.h promises that the
// budget bounds the memory of decoding (100 megapixels: ~800 MB, 16-bit RGBA), the declared size being checked
// before anything is allocated: under the sanitizers a malloc hook records the largest block allocated during
// the decode and the most bytes allocated at once (OpenCV and the codec libraries included). More than 64 MB in
// one block or 128 MB in all for this 1-megapixel budget (8 MB as 16-bit RGBA) is a failure: a header misread
// while the decoder saw a larger size, or a decoder allocating out of proportion to the size.
//
// decodeImage sends fd 2 to a temporary file while OpenCV decodes (Image.cpp, StderrCapture). A report written
// there during a decode would be lost with the process, so LLVMFuzzerInitialize keeps a copy of the original
// stderr: the sanitizers report to it (when built with them), and so do this harness's failures. run.sh runs
// this harness with -close_fd_mask=2, which gives libFuzzer's own messages (crash, timeout, oversized malloc,
// artifact path) a copy of stderr too and sends fd 2 to /dev/null outside the captures.
//
// Seeds: tests/fuzz/corpus/image (make_seeds.py). Dictionary: image.dict.
#include "FuzzSupport.h"
#include "image/ImageHeader.h"

#include <attnscope/Image.h>

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

extern "C" void __sanitizer_set_report_fd(void* fd) __attribute__((weak));
extern "C" size_t __sanitizer_get_current_allocated_bytes() __attribute__((weak));
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*, size_t),
                                                         void (*free_hook)(const volatile void*))
    __attribute__((weak));

namespace {

// A copy of stderr made before libFuzzer or decodeImage redirect fd 2 (LLVMFuzzerInitialize).
int g_stderr = 2;

// FuzzSupport.h's fail, written to the copy of stderr.
[[noreturn]] void fail(const std::string& why)
{
    const std::string line = "harness check failed: " + why + "\n";
    [[maybe_unused]] const ssize_t written = ::write(g_stderr, line.data(), line.size());
    std::abort();
}

constexpr int64_t kBudget = 1 << 20;
constexpr size_t kMaxBlock = size_t(64) << 20;
constexpr size_t kMaxLive = size_t(128) << 20;

// While `g_measuring`: the largest block allocated and the most bytes allocated at once (any thread: OpenCV may
// decode in parallel).
std::atomic<bool> g_measuring { false };
std::atomic<size_t> g_largest { 0 };
std::atomic<size_t> g_peakLive { 0 };

void raiseTo(std::atomic<size_t>& max, size_t value)
{
    size_t seen = max.load(std::memory_order_relaxed);
    while (value > seen && !max.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
    }
}

void onMalloc(const volatile void*, size_t size)
{
    if (!g_measuring.load(std::memory_order_relaxed))
        return;
    raiseTo(g_largest, size);
    if (__sanitizer_get_current_allocated_bytes)
        raiseTo(g_peakLive, __sanitizer_get_current_allocated_bytes());
}

void onFree(const volatile void*) { }

// The names ImageHeader.h lists.
const char* const kFormats[] = { "PNG", "JPEG", "GIF", "BMP", "TIFF", "WebP", "PNM", "PFM", "Sun raster", "JPEG 2000",
                                 "Radiance HDR" };

void checkHeader(const uint8_t* data, size_t size)
{
    // new[] of exactly `size` bytes: ASan's redzone starts right after the last byte (libFuzzer's own buffer is
    // exact too, the replay driver's std::string is not).
    const std::unique_ptr<uint8_t[]> copy(new uint8_t[size]);
    if (size)
        std::memcpy(copy.get(), data, size);
    const attnscope::ImageHeader h = attnscope::readImageHeader(copy.get(), size);

    bool known = h.format.empty();
    for (const char* f : kFormats)
        known = known || h.format == f;
    if (!known)
        fail("unknown format name \"" + h.format + "\"");
    if (h.width < -1 || h.height < -1)
        fail(h.format + " header with a negative size " + std::to_string(h.width) + "x" + std::to_string(h.height));
    if (h.hasSize() && !h.recognised())
        fail("a size without a format");
    if (!h.recognised() && (h.width != -1 || h.height != -1 || !h.complete || h.grey || !h.refused.empty()))
        fail("an unrecognised input with header fields set");
    if (!h.refused.empty() && h.format != "JPEG 2000")
        fail(h.format + " header refused (only JPEG 2000 ones are): " + h.refused);
    if (!h.complete && h.format != "JPEG")
        fail(h.format + " header marked incomplete (only JPEGs are)");
    if (h.grey && h.format != "PNG")
        fail(h.format + " header marked grey (only PNGs are)");
}

void checkDecode(const uint8_t* data, size_t size)
{
    static attnscope::fuzz::MemFile file("fuzz.image");
    const std::string& path = file.write(data, size);
    attnscope::DecodeOptions options;
    options.maxPixels = kBudget;
    // Any exception escapes and is reported by libFuzzer (or terminates the replay): decodeImage must not throw.
    const size_t before = __sanitizer_get_current_allocated_bytes ? __sanitizer_get_current_allocated_bytes() : 0;
    g_largest = 0;
    g_peakLive = before;
    g_measuring = true;
    const auto result = attnscope::decodeImage(path, options);
    g_measuring = false;
    const std::string outcome = result ? "decoded" : result.message();
    if (g_largest > kMaxBlock)
        fail("decodeImage allocated a block of " + std::to_string(g_largest >> 20) + " MB for a budget of "
             + std::to_string(kBudget) + " pixels (" + outcome + ")");
    if (g_peakLive - before > kMaxLive)
        fail("decodeImage had " + std::to_string((g_peakLive - before) >> 20) + " MB allocated at once for a budget of "
             + std::to_string(kBudget) + " pixels (" + outcome + ")");
    if (!result) {
        const std::string& message = result.message();
        if (message.find('\n') != std::string::npos || message.find('\r') != std::string::npos)
            fail("error message of more than one line: " + message);
        if (message.find(path) == std::string::npos)
            fail("error message does not name the file: " + message);
        return;
    }
    const attnscope::Image& img = *result;
    if (img.channels != 1 && img.channels != 3)
        fail("image with " + std::to_string(img.channels) + " channels");
    if (img.width <= 0 || img.height <= 0)
        fail("image of " + std::to_string(img.width) + "x" + std::to_string(img.height));
    if (int64_t(img.width) * img.height > kBudget)
        fail("image of " + std::to_string(img.width) + "x" + std::to_string(img.height) + " exceeds the budget");
    if (img.pixels.size() != size_t(img.width) * size_t(img.height) * size_t(img.channels))
        fail("pixel count differs from width x height x channels");
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    if (__sanitizer_install_malloc_and_free_hooks)
        __sanitizer_install_malloc_and_free_hooks(onMalloc, onFree);
    const int fd = ::dup(2);
    if (fd >= 0) {
        g_stderr = fd;
        if (__sanitizer_set_report_fd)
            __sanitizer_set_report_fd(reinterpret_cast<void*>(intptr_t(fd)));
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    checkHeader(data, size);
    checkDecode(data, size);
    return 0;
}
