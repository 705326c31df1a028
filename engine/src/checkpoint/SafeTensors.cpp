#include "checkpoint/SafeTensors.h"

#include "io/AtomicFile.h"
#include "io/LoadError.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

namespace attnscope {

namespace {

struct MappedFile {
    void* data = MAP_FAILED;
    size_t size = 0;
    ~MappedFile()
    {
        if (data != MAP_FAILED)
            munmap(data, size);
    }
};

std::shared_ptr<MappedFile> mapFile(const std::string& path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw LoadError(path + ": cannot open (" + std::strerror(errno) + ")");
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw LoadError(path + ": not a regular file");
    }
    auto file = std::make_shared<MappedFile>();
    file->size = size_t(st.st_size);
    if (file->size > 0) {
        // Private and writable: pages are copied on write, so a tensor aliasing the map can never modify the
        // file, and LibTorch's (read-only) use of it needs no copy.
        file->data = mmap(nullptr, file->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (file->data == MAP_FAILED) {
            ::close(fd);
            throw LoadError(path + ": cannot map (" + std::strerror(errno) + ")");
        }
    }
    ::close(fd);
    return file;
}

struct DtypeInfo {
    at::ScalarType type;
    size_t bytes;
};

bool dtypeFromName(const std::string& name, DtypeInfo& out)
{
    static const std::map<std::string, DtypeInfo> table {
        { "F32", { at::kFloat, 4 } },    { "F16", { at::kHalf, 2 } },  { "BF16", { at::kBFloat16, 2 } },
        { "F64", { at::kDouble, 8 } },   { "I64", { at::kLong, 8 } },  { "I32", { at::kInt, 4 } },
        { "I16", { at::kShort, 2 } },    { "I8", { at::kChar, 1 } },   { "U8", { at::kByte, 1 } },
        { "BOOL", { at::kBool, 1 } },
    };
    auto it = table.find(name);
    if (it == table.end())
        return false;
    out = it->second;
    return true;
}

std::string shapeString(const std::vector<int64_t>& shape)
{
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i)
        s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

struct Entry {
    std::string name;
    DtypeInfo dtype;
    std::vector<int64_t> shape;
    uint64_t begin = 0;
    uint64_t end = 0;
};

} // namespace

SafetensorsFile readSafetensors(const std::string& path)
{
    auto file = mapFile(path);
    const auto* bytes = static_cast<const uint8_t*>(file->data);
    const auto fail = [&](const std::string& problem) { throw LoadError(path + ": " + problem); };

    if (file->size < 8)
        fail("not a safetensors file (" + std::to_string(file->size) + " bytes, shorter than the 8-byte header length)");
    if (file->size > 8 && bytes[8] != '{') // the format requires the header to start with '{'
        fail("not a safetensors file (its header does not start with '{')");
    uint64_t headerLen = 0;
    for (int i = 7; i >= 0; --i)
        headerLen = (headerLen << 8) | bytes[i];
    if (headerLen > kMaxSafetensorsHeader)
        fail("safetensors header length " + std::to_string(headerLen) + " exceeds the limit of "
             + std::to_string(kMaxSafetensorsHeader) + " bytes");
    if (headerLen > file->size - 8)
        fail("safetensors header length " + std::to_string(headerLen) + " is beyond the end of the file ("
             + std::to_string(file->size) + " bytes): truncated file?");

    nlohmann::json header;
    try {
        header = nlohmann::json::parse(bytes + 8, bytes + 8 + headerLen);
    } catch (const nlohmann::json::exception& e) {
        fail(std::string("invalid safetensors header JSON (") + e.what() + ")");
    }
    if (!header.is_object())
        fail("safetensors header is not a JSON object");

    const uint64_t dataStart = 8 + headerLen;
    const uint64_t dataSize = file->size - dataStart;
    SafetensorsFile out;
    std::vector<Entry> entries;
    for (const auto& [name, value] : header.items()) {
        if (name == "__metadata__") {
            if (!value.is_object())
                fail("__metadata__ is not an object");
            for (const auto& [k, v] : value.items())
                out.metadata[k] = v.is_string() ? v.get<std::string>() : v.dump();
            continue;
        }
        if (!value.is_object() || !value.contains("dtype") || !value.contains("shape")
            || !value.contains("data_offsets"))
            fail(name + ": header entry lacks dtype, shape or data_offsets");
        Entry e;
        e.name = name;
        const auto& dt = value["dtype"];
        if (!dt.is_string() || !dtypeFromName(dt.get<std::string>(), e.dtype))
            fail(name + ": unknown dtype " + dt.dump());
        const auto& shape = value["shape"];
        if (!shape.is_array())
            fail(name + ": shape is not a list");
        uint64_t numel = 1;
        for (const auto& d : shape) {
            if (!d.is_number_unsigned())
                fail(name + ": shape " + shape.dump() + " has a negative or non-integer dimension");
            const uint64_t v = d.get<uint64_t>();
            if (v > (uint64_t(1) << 40) || (v && numel > std::numeric_limits<uint64_t>::max() / 64 / v))
                fail(name + ": shape " + shape.dump() + " is implausibly large");
            numel *= v;
            e.shape.push_back(int64_t(v));
        }
        const auto& off = value["data_offsets"];
        if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
            fail(name + ": data_offsets " + off.dump() + " are not two non-negative integers");
        e.begin = off[0].get<uint64_t>();
        e.end = off[1].get<uint64_t>();
        if (e.begin > e.end)
            fail(name + ": data_offsets " + off.dump() + " end before they begin");
        if (e.end > dataSize)
            fail(name + ": data_offsets " + off.dump() + " reach beyond the data (" + std::to_string(dataSize)
                 + " bytes): truncated file?");
        if (e.end - e.begin != numel * e.dtype.bytes)
            fail(name + ": shape " + shapeString(e.shape) + " of " + dt.get<std::string>() + " needs "
                 + std::to_string(numel * e.dtype.bytes) + " bytes, data_offsets give "
                 + std::to_string(e.end - e.begin));
        entries.push_back(std::move(e));
    }

    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
    for (size_t i = 1; i < entries.size(); ++i)
        if (entries[i].begin < entries[i - 1].end)
            fail(entries[i].name + ": data overlaps " + entries[i - 1].name);

    uint8_t* base = static_cast<uint8_t*>(file->data) + dataStart;
    for (const auto& e : entries) {
        uint8_t* ptr = base + e.begin;
        const auto options = at::TensorOptions().dtype(e.dtype.type);
        const bool aligned = reinterpret_cast<uintptr_t>(ptr) % e.dtype.bytes == 0;
        at::Tensor view;
        if (aligned) {
            view = at::from_blob(ptr, e.shape, [file](void*) {}, options); // keeps the map alive
        } else {
            view = at::empty(e.shape, options);
            std::memcpy(view.data_ptr(), ptr, e.end - e.begin);
        }
        if (e.dtype.type == at::kHalf || e.dtype.type == at::kBFloat16 || e.dtype.type == at::kDouble)
            view = view.to(at::kFloat);
        out.tensors.emplace(e.name, view);
    }
    return out;
}

void writeSafetensors(const std::string& path, const TensorMap& tensors, const std::map<std::string, std::string>& metadata)
{
    nlohmann::json header = nlohmann::json::object();
    if (!metadata.empty())
        header["__metadata__"] = metadata;
    std::vector<at::Tensor> data;
    uint64_t offset = 0;
    for (const auto& [name, t] : tensors) {
        auto c = t.detach().to(at::kCPU, at::kFloat).contiguous();
        const uint64_t n = uint64_t(c.numel()) * 4;
        header[name] = { { "dtype", "F32" }, { "shape", c.sizes().vec() }, { "data_offsets", { offset, offset + n } } };
        offset += n;
        data.push_back(c);
    }
    std::string h = header.dump();
    while ((h.size() + 8) % 8 != 0) // pad so that the data starts 8-byte aligned, as the reference writer does
        h += ' ';
    AtomicFile out(path);
    uint64_t len = h.size();
    uint8_t lenBytes[8];
    for (int i = 0; i < 8; ++i)
        lenBytes[i] = uint8_t(len >> (8 * i));
    out.write(lenBytes, 8);
    out.write(h.data(), h.size());
    for (const auto& c : data)
        out.write(c.data_ptr(), size_t(c.numel()) * 4);
    out.commit();
}

} // namespace attnscope
