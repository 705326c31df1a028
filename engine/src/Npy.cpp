#include "attnscope/Npy.h"

#include "AtomicFile.h"
#include "LoadError.h"

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

namespace attnscope {

Result<bool> writeNpy(const std::string& path, const Tensor& tensor)
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
    return true;
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
    std::smatch m;
    if (!std::regex_search(header, m, std::regex("'descr'\\s*:\\s*'([^']*)'")))
        return Error { path + ": .npy header has no descr" };
    const std::string descr = m[1];
    if (descr != "<f4" && descr != "<f8")
        return Error { path + ": .npy dtype " + descr + " is not float32 or float64" };
    if (std::regex_search(header, std::regex("'fortran_order'\\s*:\\s*True")))
        return Error { path + ": Fortran-order .npy files are not read" };
    if (!std::regex_search(header, m, std::regex("'shape'\\s*:\\s*\\(([^)]*)\\)")))
        return Error { path + ": .npy header has no shape" };
    std::vector<int64_t> shape;
    int64_t numel = 1;
    std::stringstream dims(m[1].str());
    std::string item;
    while (std::getline(dims, item, ',')) {
        if (item.find_first_not_of(" ") == std::string::npos)
            continue;
        const long long v = std::stoll(item);
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
    if (elem == 4) {
        std::memcpy(values.data(), bytes.data() + dataStart, size_t(numel) * 4);
    } else {
        for (int64_t i = 0; i < numel; ++i) {
            double d;
            std::memcpy(&d, bytes.data() + dataStart + size_t(i) * 8, 8);
            values[size_t(i)] = float(d);
        }
    }
    return Tensor::fromVector(std::move(shape), std::move(values));
}

} // namespace attnscope
