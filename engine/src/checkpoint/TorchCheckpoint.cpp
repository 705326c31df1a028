#include "checkpoint/TorchCheckpoint.h"

#include "checkpoint/RestrictedUnpickler.h"
#include "io/LoadError.h"

#include <ATen/ATen.h>
#include <zip.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <set>
#include <vector>

namespace attnscope {

namespace {

using detail::PickleValue;
using detail::printableForMessage;
using TensorMap = std::map<std::string, at::Tensor>;

// data.pkl of a state dict is ~100 bytes per tensor; anything near this is not a state dict.
constexpr uint64_t kMaxPickleBytes = uint64_t(256) << 20;
// Deflate cannot expand more than ~1032:1; a larger claimed ratio is a damaged or hostile directory.
constexpr uint64_t kMaxDeflateRatio = 1100;
constexpr int kMaxNesting = 32;
constexpr size_t kMaxVisits = size_t(1) << 24;

// torch.save(..., _use_new_zipfile_serialization=False) starts with the pickled magic number
// 0x1950a86a20f9469cfc6c (PROTO 2, LONG1 of 10 bytes).
constexpr uint8_t kLegacyMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

std::string firstLine(const std::string& s)
{
    const std::string line = s.substr(0, s.find('\n'));
    return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}

// Names a non-zip by its first bytes, so the user learns what the file is instead of "not a zip".
void checkSignature(const uint8_t* head, size_t n, const std::string& name)
{
    if (n >= sizeof kLegacyMagic && std::memcmp(head, kLegacyMagic, sizeof kLegacyMagic) == 0)
        throw LoadError(name + ": legacy (pre-1.6) torch.save format is not supported; re-save it with a current "
                               "PyTorch");
    if (n >= 2 && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5)
        throw LoadError(name + ": a bare pickle, not a torch.save zip archive (not read: it could run code)");
    if (n < 4 || head[0] != 'P' || head[1] != 'K')
        throw LoadError(name + ": not a PyTorch checkpoint (no zip signature)");
}

// Owns the archive; discarding (not closing) never writes anything back.
class ZipArchive {
public:
    ZipArchive(zip_source_t* source, uint64_t archiveBytes, std::string name)
        : m_archiveBytes(archiveBytes), m_name(std::move(name))
    {
        zip_error_t error;
        zip_error_init(&error);
        m_zip = zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, &error);
        if (!m_zip) {
            zip_source_free(source);
            const int code = zip_error_code_zip(&error);
            const std::string detail = zip_error_strerror(&error);
            zip_error_fini(&error);
            if (code == ZIP_ER_NOZIP || code == ZIP_ER_INCONS)
                fail("truncated or damaged zip archive (" + detail + ")");
            fail("cannot open as a zip archive (" + detail + ")");
        }
        zip_error_fini(&error);
    }
    ~ZipArchive() { zip_discard(m_zip); }
    ZipArchive(const ZipArchive&) = delete;
    ZipArchive& operator=(const ZipArchive&) = delete;

    [[noreturn]] void fail(const std::string& problem) const { throw LoadError(m_name + ": " + problem); }

    std::vector<std::string> names() const
    {
        std::vector<std::string> out;
        const zip_int64_t count = zip_get_num_entries(m_zip, 0);
        for (zip_int64_t i = 0; i < count; ++i) {
            const char* n = zip_get_name(m_zip, zip_uint64_t(i), ZIP_FL_ENC_RAW);
            out.emplace_back(n ? n : "");
        }
        return out;
    }

    bool has(const std::string& entry) const { return zip_name_locate(m_zip, entry.c_str(), ZIP_FL_ENC_RAW) >= 0; }

    // Size of an entry after decompression, checked against what the archive can plausibly hold so that a
    // lying directory cannot make us allocate gigabytes.
    uint64_t size(const std::string& entry) const
    {
        const zip_int64_t index = zip_name_locate(m_zip, entry.c_str(), ZIP_FL_ENC_RAW);
        if (index < 0)
            fail("record '" + printableForMessage(entry) + "' is missing");
        zip_stat_t st;
        zip_stat_init(&st);
        if (zip_stat_index(m_zip, zip_uint64_t(index), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE) ||
            !(st.valid & ZIP_STAT_COMP_SIZE))
            fail("cannot read the directory entry of '" + printableForMessage(entry) + "'");
        if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE)
            fail("record '" + printableForMessage(entry) + "' is encrypted");
        const bool stored = (st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method == ZIP_CM_STORE;
        if (st.comp_size > m_archiveBytes || (stored && st.size != st.comp_size) ||
            (!stored && st.size / kMaxDeflateRatio > st.comp_size))
            fail("record '" + printableForMessage(entry) + "' has an implausible size in the zip directory");
        return st.size;
    }

    // Reads the first `bytes` bytes of an entry into `out`.
    void read(const std::string& entry, void* out, uint64_t bytes) const
    {
        zip_file_t* file = zip_fopen(m_zip, entry.c_str(), ZIP_FL_ENC_RAW);
        if (!file)
            fail("cannot open record '" + printableForMessage(entry) + "' (" + zip_strerror(m_zip) + ")");
        uint64_t done = 0;
        while (done < bytes) {
            const zip_int64_t n = zip_fread(file, static_cast<uint8_t*>(out) + done, bytes - done);
            if (n <= 0) {
                const std::string detail = n < 0 ? zip_file_strerror(file) : "unexpected end";
                zip_fclose(file);
                fail("record '" + printableForMessage(entry) + "' is truncated or damaged (" + detail + ")");
            }
            done += uint64_t(n);
        }
        zip_fclose(file);
    }

private:
    zip_t* m_zip = nullptr;
    uint64_t m_archiveBytes;
    std::string m_name;
};

// torch.save names the top folder after the file ("model_final/data.pkl"); any name is accepted.
std::string findPrefix(const ZipArchive& zip, const std::string& name)
{
    const std::vector<std::string> entries = zip.names();
    // A TorchScript archive also has data.pkl, but its objects are only meaningful with the code next to it.
    for (const std::string& e : entries) {
        const size_t slash = e.find('/');
        const std::string inner = slash == std::string::npos ? e : e.substr(slash + 1);
        if (e.rfind("code/", 0) == 0 || inner.rfind("code/", 0) == 0 || e == "constants.pkl" ||
            inner == "constants.pkl")
            throw LoadError(name + ": TorchScript archive: not read, it would run code; export a state_dict");
    }
    const std::string* best = nullptr;
    for (const std::string& e : entries) {
        const bool match = e == "data.pkl" || (e.size() > 9 && e.compare(e.size() - 9, 9, "/data.pkl") == 0);
        if (match && (!best || e.size() < best->size()))
            best = &e;
    }
    if (!best)
        throw LoadError(name + ": zip archive without data.pkl: not a torch.save checkpoint");
    return best->substr(0, best->size() - 8);
}

void swapBytes(at::Tensor& t)
{
    const size_t width = t.element_size();
    if (width < 2)
        return;
    auto* p = static_cast<uint8_t*>(t.data_ptr());
    const size_t count = size_t(t.numel());
    for (size_t i = 0; i < count; ++i)
        std::reverse(p + i * width, p + (i + 1) * width);
}

// The dict's entries under str (or int) keys; a later duplicate replaces an earlier one, as in Python.
std::vector<std::pair<std::string, const PickleValue*>> dictItems(const PickleValue& dict)
{
    std::vector<std::pair<std::string, const PickleValue*>> out;
    std::map<std::string, size_t> seen;
    for (const auto& [key, value] : dict.entries) {
        std::string k;
        if (key->kind == PickleValue::Kind::String)
            k = key->text;
        else if (key->kind == PickleValue::Kind::Int)
            k = std::to_string(key->intValue);
        else
            continue; // not a name a tensor could have
        auto it = seen.find(k);
        if (it != seen.end()) {
            out[it->second].second = value;
        } else {
            seen.emplace(k, out.size());
            out.emplace_back(std::move(k), value);
        }
    }
    return out;
}

class Collector {
public:
    explicit Collector(std::string name) : m_name(std::move(name)) {}

    // Whether any tensor is reachable through dicts (a memo can make a dict contain itself: depth-bounded).
    bool holdsTensor(const PickleValue* v, int depth)
    {
        visit(depth);
        if (v->kind == PickleValue::Kind::Tensor)
            return true;
        if (v->kind != PickleValue::Kind::Dict)
            return false;
        for (const auto& [key, value] : v->entries) {
            (void)key;
            if (holdsTensor(value, depth + 1))
                return true;
        }
        return false;
    }

    void collect(const PickleValue* v, const std::string& prefix, int depth, TensorMap& out)
    {
        visit(depth);
        if (v->kind == PickleValue::Kind::Tensor) {
            if (!out.emplace(prefix, v->tensor).second)
                throw LoadError(m_name + ": tensor name '" + printableForMessage(prefix) + "' occurs twice after flattening");
        } else if (v->kind == PickleValue::Kind::Dict) {
            for (const auto& [key, value] : dictItems(*v))
                collect(value, prefix.empty() ? key : prefix + "." + key, depth + 1, out);
        }
    }

private:
    void visit(int depth)
    {
        if (depth > kMaxNesting)
            throw LoadError(m_name + ": dicts nested deeper than " + std::to_string(kMaxNesting) + " levels");
        if (++m_visits > kMaxVisits)
            throw LoadError(m_name + ": too many nested entries");
    }

    std::string m_name;
    size_t m_visits = 0;
};

// The wrapper entries a training script saves its model's state dict under, and the EMA copies beside it. The model's
// own is preferred to an EMA copy; which one was taken is said (`taken`), and `key` chooses another.
constexpr const char* kModelKeys[] = { "model", "state_dict", "model_state", "model_state_dict", "module", "net", "network" };
constexpr const char* kEmaKeys[] = { "model_ema", "ema", "state_dict_ema", "ema_state_dict", "model_ema_state_dict", "ema_model" };

std::string keyList(const std::vector<std::pair<std::string, const PickleValue*>>& items)
{
    std::string keys;
    for (size_t i = 0; i < items.size() && i < 8; ++i)
        keys += (i ? ", " : "") + (i == 7 ? std::string("...") : "'" + printableForMessage(items[i].first.substr(0, 60)) + "'");
    return keys;
}

TensorMap tensorsOf(const PickleValue& top, const std::string& name, const std::string& key, std::string* taken)
{
    if (top.kind != PickleValue::Kind::Dict) {
        const char* what = top.kind == PickleValue::Kind::Tensor ? "a single tensor" : "no dict";
        throw LoadError(name + ": the checkpoint holds " + std::string(what) + ", not a state dict of tensors");
    }
    Collector collector(name);
    const PickleValue* sd = &top;
    std::string path; // the wrapper keys walked through, "'model_state'"
    const auto holds = [&](const PickleValue* v) { return v && v->kind == PickleValue::Kind::Dict && collector.holdsTensor(v, 0); };
    if (!key.empty()) {
        const PickleValue* chosen = top.find(key);
        if (!holds(chosen))
            throw LoadError(name + ": weights_key '" + printableForMessage(key) + "' is not a dict of tensors in the checkpoint"
                            + " (its keys: " + keyList(dictItems(top)) + ")");
        sd = chosen;
        path = "'" + key + "' (the description's weights_key)";
    }
    for (int depth = 0; key.empty() && depth < kMaxNesting; ++depth) {
        const auto items = dictItems(*sd);
        const bool plain = !items.empty() && std::all_of(items.begin(), items.end(), [](const auto& item) {
            return item.second->kind == PickleValue::Kind::Tensor;
        });
        if (plain)
            break;
        const PickleValue* inner = nullptr;
        std::string innerKey;
        for (const char* k : kModelKeys)
            if (!inner && holds(sd->find(k))) {
                inner = sd->find(k);
                innerKey = k;
            }
        std::string emaKey;
        for (const char* k : kEmaKeys)
            if (emaKey.empty() && holds(sd->find(k)))
                emaKey = k;
        if (!inner && !emaKey.empty()) {
            inner = sd->find(emaKey);
            innerKey = emaKey;
            emaKey.clear();
        }
        if (!inner)
            break;
        std::string others;
        for (const auto& [k, v] : items)
            if (k != innerKey)
                others += (others.empty() ? "" : ", ") + ("'" + printableForMessage(k.substr(0, 60)) + "'");
        path += (path.empty() ? "" : " in ") + ("'" + innerKey + "'") + (others.empty() ? "" : " (beside " + others + ")")
                + (emaKey.empty() ? "" : "; the EMA copy '" + emaKey + "' was not taken (a description's weights_key chooses it)");
        sd = inner;
    }
    if (taken)
        *taken = path;
    TensorMap out;
    collector.collect(sd, "", 0, out);
    if (out.empty()) {
        std::string keys;
        const auto items = dictItems(top);
        for (size_t i = 0; i < items.size() && i < 6; ++i)
            keys += (i ? ", " : "") + (i == 5 ? std::string("...") : "'" + printableForMessage(items[i].first.substr(0, 60)) + "'");
        throw LoadError(name + ": the checkpoint holds no tensors (top-level keys: " + (keys.empty() ? "none" : keys) +
                        ")");
    }
    return out;
}

TensorMap readArchive(zip_source_t* source, uint64_t archiveBytes, const std::string& name, const std::string& key = {},
                      std::string* taken = nullptr)
{
    ZipArchive zip(source, archiveBytes, name);
    const std::string prefix = findPrefix(zip, name);

    bool bigEndian = false;
    if (zip.has(prefix + "byteorder")) {
        // Written by torch >= 2.1; "little" everywhere torch runs today, but honour "big" rather than misread.
        const uint64_t n = zip.size(prefix + "byteorder");
        if (n > 16)
            zip.fail("byteorder record is too long");
        char order[17] = {};
        zip.read(prefix + "byteorder", order, n);
        const std::string value(order);
        if (value == "big")
            bigEndian = true;
        else if (value != "little")
            zip.fail("unknown byteorder '" + printableForMessage(value) + "'");
    }

    const std::string pickleName = prefix + "data.pkl";
    const uint64_t pickleBytes = zip.size(pickleName);
    if (pickleBytes > kMaxPickleBytes)
        zip.fail("data.pkl is larger than " + std::to_string(kMaxPickleBytes >> 20) + " MiB");
    std::vector<uint8_t> pickle(static_cast<size_t>(pickleBytes));
    zip.read(pickleName, pickle.data(), pickleBytes);

    const auto loadStorage = [&](const std::string& key, at::ScalarType dtype, int64_t numel) {
        const std::string record = prefix + "data/" + key;
        const std::string shown = "'data/" + printableForMessage(key) + "'";
        if (!zip.has(record))
            zip.fail("storage record " + shown + " is missing");
        const uint64_t width = c10::elementSize(dtype);
        if (uint64_t(numel) > uint64_t(INT64_MAX) / width)
            zip.fail("storage " + shown + " is too large");
        const uint64_t needed = uint64_t(numel) * width;
        const uint64_t have = zip.size(record);
        if (have < needed)
            zip.fail("storage record " + shown + " holds " + std::to_string(have) + " bytes, the pickle needs " +
                     std::to_string(needed));
        at::Tensor storage = at::empty({numel}, at::TensorOptions().dtype(dtype));
        zip.read(record, storage.data_ptr(), needed);
        if (bigEndian)
            swapBytes(storage);
        return storage;
    };

    detail::RestrictedUnpickler unpickler(pickle.data(), pickle.size(), name, loadStorage);
    return tensorsOf(unpickler.load(), name, key, taken);
}

// Turns whatever escaped the reader (LibTorch, allocation) into the one-line LoadError callers expect.
template <typename Function>
TensorMap guarded(const std::string& name, Function&& function)
{
    try {
        return function();
    } catch (const LoadError&) {
        throw;
    } catch (const c10::Error& e) {
        throw LoadError(name + ": " + firstLine(e.what_without_backtrace()));
    } catch (const std::bad_alloc&) {
        throw LoadError(name + ": out of memory while reading the checkpoint");
    } catch (const std::exception& e) {
        throw LoadError(name + ": " + firstLine(e.what()));
    }
}

} // namespace

TensorMap readTorchCheckpoint(const std::string& path, const std::string& key, std::string* taken)
{
    return guarded(path, [&] {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0)
            throw LoadError(path + ": cannot open (" + std::strerror(errno) + ")");
        if (!S_ISREG(st.st_mode))
            throw LoadError(path + ": not a regular file");
        uint8_t head[16] = {};
        size_t headBytes = 0;
        if (FILE* f = std::fopen(path.c_str(), "rb")) {
            headBytes = std::fread(head, 1, sizeof head, f);
            std::fclose(f);
        } else {
            throw LoadError(path + ": cannot open (" + std::strerror(errno) + ")");
        }
        checkSignature(head, headBytes, path);

        zip_error_t error;
        zip_error_init(&error);
        zip_source_t* source = zip_source_file_create(path.c_str(), 0, -1, &error);
        if (!source) {
            const std::string detail = zip_error_strerror(&error);
            zip_error_fini(&error);
            throw LoadError(path + ": cannot open (" + detail + ")");
        }
        zip_error_fini(&error);
        return readArchive(source, uint64_t(st.st_size), path, key, taken);
    });
}

TensorMap readTorchCheckpointFromMemory(const void* data, size_t size, const std::string& nameForMessages)
{
    return guarded(nameForMessages, [&] {
        checkSignature(static_cast<const uint8_t*>(data), size, nameForMessages);
        zip_error_t error;
        zip_error_init(&error);
        zip_source_t* source = zip_source_buffer_create(data, size, 0, &error);
        if (!source) {
            const std::string detail = zip_error_strerror(&error);
            zip_error_fini(&error);
            throw LoadError(nameForMessages + ": cannot read (" + detail + ")");
        }
        zip_error_fini(&error);
        return readArchive(source, size, nameForMessages);
    });
}

} // namespace attnscope
