// libFuzzer harness of the safetensors reader (engine/src/checkpoint/SafeTensors.cpp): the input is a whole .safetensors
// file, written to a memfd and read through readSafetensors(path), memory map included.
//
// Every input must end in a result or in LoadError; any other exception escapes and is a crash, as is a memory
// error or UB under the sanitizers. A result is checked against the file independently of the reader: every
// tensor is named in the header, has the header's shape, and for dtypes kept as they are (F32, integers, BOOL)
// its bytes are the file's bytes at data_offsets; converted dtypes (F16, BF16, F64) become float32 of that shape.
//
// Seeds: tests/fuzz/corpus/safetensors (make_seeds.py). Dictionary: safetensors.dict.
#include "FuzzSupport.h"
#include "checkpoint/SafeTensors.h"
#include "io/LoadError.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cstring>

namespace {

size_t fileDtypeBytes(const std::string& dtype)
{
    if (dtype == "F64" || dtype == "I64")
        return 8;
    if (dtype == "F32" || dtype == "I32")
        return 4;
    if (dtype == "F16" || dtype == "BF16" || dtype == "I16")
        return 2;
    return 1;
}

void check(const attnscope::SafetensorsFile& file, const uint8_t* data, size_t size)
{
    using attnscope::fuzz::fail;
    // The reader accepted the file, so the header is valid JSON of the declared length.
    uint64_t headerLen = 0;
    for (int i = 7; i >= 0; --i)
        headerLen = (headerLen << 8) | data[i];
    const auto header = nlohmann::json::parse(data + 8, data + 8 + headerLen);
    const uint8_t* base = data + 8 + headerLen;
    for (const auto& [name, tensor] : file.tensors) {
        if (name == "__metadata__" || !header.contains(name))
            fail("tensor " + name + " is not in the header");
        const auto& entry = header[name];
        const std::string dtype = entry["dtype"].get<std::string>();
        const auto shape = entry["shape"].get<std::vector<int64_t>>();
        if (tensor.sizes().vec() != shape)
            fail(name + ": shape differs from the header");
        const uint64_t begin = entry["data_offsets"][0].get<uint64_t>();
        const uint64_t end = entry["data_offsets"][1].get<uint64_t>();
        if (begin > end || end > size - 8 - headerLen)
            fail(name + ": accepted data_offsets outside the data");
        if (uint64_t(tensor.numel()) * fileDtypeBytes(dtype) != end - begin)
            fail(name + ": byte count differs from data_offsets");
        const bool converted = dtype == "F16" || dtype == "BF16" || dtype == "F64";
        if (converted) {
            if (tensor.scalar_type() != at::kFloat)
                fail(name + ": " + dtype + " not converted to float32");
            continue;
        }
        const auto bytes = size_t(tensor.numel()) * tensor.element_size();
        if (bytes && std::memcmp(tensor.contiguous().data_ptr(), base + begin, bytes) != 0)
            fail(name + ": tensor bytes differ from the file at data_offsets");
    }
    // Every tensor entry of the header is in the result.
    for (const auto& [key, value] : header.items())
        if (key != "__metadata__" && !file.tensors.count(key))
            fail("header entry " + key + " missing from the result");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static attnscope::fuzz::MemFile file("fuzz.safetensors");
    const std::string& path = file.write(data, size);
    try {
        const auto result = attnscope::readSafetensors(path);
        check(result, data, size);
    } catch (const attnscope::LoadError&) {
    }
    return 0;
}
