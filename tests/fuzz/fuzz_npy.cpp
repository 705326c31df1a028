// libFuzzer harness of the .npy writer and reader (engine/include/attnscope/Npy.h).
//
// First byte even: round trip. The input gives a shape and the values: byte 1 is the rank (mod 9), the next
// rank bytes the dimensions (mod 7; at most 4096 elements in all), the rest the float32 values' raw bytes
// (repeated to fill, NaN payloads and signed zeros included). writeNpy must succeed, and readNpy of its file
// must return exactly that shape and those bits.
// First byte odd: the rest is a whole file handed to readNpy, which must return a value or an Error and never
// throw; a value must have as many elements as its shape says and fit in the file.
//
// Files go to a memfd (reading) and to a private folder under /dev/shm or $TMPDIR (writing, which renames).
// Seeds: tests/fuzz/corpus/npy (make_seeds.py). Dictionary: npy.dict.
#include "FuzzSupport.h"

#include <attnscope/Npy.h>
#include <attnscope/Tensor.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using attnscope::fuzz::fail;

std::string scratchPath()
{
    namespace fs = std::filesystem;
    const fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    const fs::path dir = base / ("attnscope-fuzz-npy-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    return (dir / "t.npy").string();
}

void roundTrip(const uint8_t* data, size_t size)
{
    static const std::string path = scratchPath();
    size_t at = 0;
    const size_t rank = at < size ? data[at++] % 9 : 0;
    std::vector<int64_t> shape;
    int64_t numel = 1;
    for (size_t i = 0; i < rank; ++i) {
        const int64_t d = at < size ? data[at++] % 7 : 1;
        shape.push_back(d);
        numel *= d;
    }
    if (numel > 4096)
        return;
    std::vector<float> values(size_t(numel), 0.0f);
    const size_t rest = size - at;
    for (size_t i = 0; i < values.size() && rest > 0; ++i) {
        uint8_t bytes[4];
        for (size_t b = 0; b < 4; ++b)
            bytes[b] = data[at + (i * 4 + b) % rest];
        std::memcpy(&values[i], bytes, 4);
    }
    const auto tensor = attnscope::Tensor::fromVector(shape, values);
    const auto written = attnscope::writeNpy(path, tensor);
    if (!written)
        fail("writeNpy: " + written.message());
    const auto read = attnscope::readNpy(path);
    if (!read)
        fail("readNpy of a written file: " + read.message());
    if (read->shape() != shape)
        fail("shape changed in the round trip");
    if (numel && std::memcmp(read->data(), values.data(), values.size() * 4) != 0)
        fail("values changed in the round trip");
}

void readBytes(const uint8_t* data, size_t size)
{
    static attnscope::fuzz::MemFile file("fuzz.npy");
    const auto result = attnscope::readNpy(file.write(data, size));
    if (!result)
        return;
    int64_t numel = 1;
    for (int64_t d : result->shape()) {
        if (d < 0)
            fail("negative dimension accepted");
        numel *= d;
    }
    if (numel != result->numel())
        fail("element count differs from the shape");
    if (uint64_t(numel) * 4 > size)
        fail("more elements than the file can hold");
    volatile float sink = 0;
    for (int64_t i = 0; i < numel; ++i)
        sink = sink + result->data()[i];
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] % 2 == 0)
        roundTrip(data + 1, size - 1);
    else
        readBytes(data + 1, size - 1);
    return 0;
}
