#include "attnscope/Npy.h"

#include "io/AtomicFile.h"
#include "io/LoadError.h"

#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

namespace attnscope {

namespace {
const char* const kSpace = " \t\n\r\f\v"; // what the header's Python literal may hold between tokens
}

Status writeNpy(const std::string& path, const Tensor& tensor)
{
    std::string shape = "(";
    for (size_t i = 0; i < tensor.shape().size(); ++i)
        shape += std::to_string(tensor.shape()[i]) + (tensor.shape().size() == 1 ? "," : (i + 1 < tensor.shape().size() ? ", " : ""));
    shape += ")";
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    // Format 1.0: magic, version, little-endian u16 header length; the header is padded with spaces and ends in
    // a newline so that the data starts on a 64-byte boundary.
    const size_t preamble = 10;
    size_t total = preamble + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
    try {
        AtomicFile out(path);
        const unsigned char magic[8] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0 };
        out.write(magic, 8);
        const unsigned char len[2] = { uint8_t(header.size() & 0xff), uint8_t(header.size() >> 8) };
        out.write(len, 2);
        out.write(header);
        out.write(tensor.data(), sizeof(float) * size_t(tensor.numel()));
        out.commit();
    } catch (const LoadError& e) {
        return Error { e.what() };
    }
    return Done {};
}

Result<Tensor> readNpy(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Error { path + ": cannot open" };
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
        return Error { path + ": not a .npy file" };
    const int major = uint8_t(bytes[6]);
    size_t headerLen = 0;
    size_t offset = 0;
    if (major == 1) {
        headerLen = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
        offset = 10;
    } else if (major == 2 || major == 3) {
        if (bytes.size() < 12)
            return Error { path + ": truncated .npy header" };
        headerLen = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8) | (size_t(uint8_t(bytes[10])) << 16)
            | (size_t(uint8_t(bytes[11])) << 24);
        offset = 12;
    } else {
        return Error { path + ": unsupported .npy version " + std::to_string(major) };
    }
    if (headerLen > bytes.size() - offset)
        return Error { path + ": truncated .npy header" };
    const std::string header = bytes.substr(offset, headerLen);
    // A scan, not std::regex: libstdc++'s regex matcher recurses once per character, so a long header (v2/v3
    // allow 4 GiB) overflowed the stack (found by tests/fuzz/fuzz_npy).
    const auto valueOf = [&](const char* key) -> size_t { // where the value after "'key' :" starts, or npos
        size_t at = header.find(key);
        if (at == std::string::npos)
            return at;
        at = header.find_first_not_of(kSpace, at + std::strlen(key));
        if (at == std::string::npos || header[at] != ':')
            return std::string::npos;
        return header.find_first_not_of(kSpace, at + 1);
    };
    const size_t descrAt = valueOf("'descr'");
    const size_t descrEnd = descrAt == std::string::npos || header[descrAt] != '\'' ? std::string::npos : header.find('\'', descrAt + 1);
    if (descrEnd == std::string::npos)
        return Error { path + ": .npy header has no descr" };
    const std::string descr = header.substr(descrAt + 1, descrEnd - descrAt - 1);
    if (descr != "<f4" && descr != "<f8")
        return Error { path + ": .npy dtype " + descr + " is not float32 or float64" };
    const size_t fortranAt = valueOf("'fortran_order'");
    if (fortranAt != std::string::npos && header.compare(fortranAt, 4, "True") == 0)
        return Error { path + ": Fortran-order .npy files are not read" };
    const size_t shapeAt = valueOf("'shape'");
    const size_t shapeEnd = shapeAt == std::string::npos || header[shapeAt] != '(' ? std::string::npos : header.find(')', shapeAt);
    if (shapeEnd == std::string::npos)
        return Error { path + ": .npy header has no shape" };
    const std::string shapeText = header.substr(shapeAt + 1, shapeEnd - shapeAt - 1);
    std::vector<int64_t> shape;
    int64_t numel = 1;
    std::stringstream dims(shapeText);
    std::string item;
    while (std::getline(dims, item, ',')) {
        const size_t first = item.find_first_not_of(kSpace);
        if (first == std::string::npos)
            continue;
        // from_chars, not stoll: a dimension that is not a number (or overflows) is an Error, not an exception.
        size_t last = item.find_last_not_of(kSpace) + 1;
        if (item[last - 1] == 'L' && last - 1 > first) // Python 2 wrote longs as "3L"
            --last;
        long long v = 0;
        const auto parsed = std::from_chars(item.data() + first, item.data() + last, v);
        if (parsed.ec != std::errc() || parsed.ptr != item.data() + last)
            return Error { path + ": .npy shape (" + shapeText.substr(0, 40) + ") is not a list of integers" };
        if (v < 0 || v > (1LL << 40) || (v && numel > (1LL << 40) / v))
            return Error { path + ": implausible .npy shape" };
        shape.push_back(v);
        numel *= v;
    }
    const size_t elem = descr == "<f4" ? 4 : 8;
    const size_t dataStart = offset + headerLen;
    if (bytes.size() - dataStart < size_t(numel) * elem)
        return Error { path + ": .npy data is truncated" };
    std::vector<float> values(static_cast<size_t>(numel));
    if (elem == 4 && numel > 0) { // memcpy with a null pointer (an empty vector's) is undefined even for 0 bytes
        std::memcpy(values.data(), bytes.data() + dataStart, size_t(numel) * 4);
    } else if (elem == 8) {
        for (int64_t i = 0; i < numel; ++i) {
            double d;
            std::memcpy(&d, bytes.data() + dataStart + size_t(i) * 8, 8);
            values[size_t(i)] = float(d);
        }
    }
    return Tensor::fromVector(std::move(shape), std::move(values));
}

} // namespace attnscope
