#pragma once

#include <ATen/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace attnscope::detail {

// The callables and classes a torch.save() state dict may name. Everything else is refused when the GLOBAL
// opcode names it, before any argument is even read, so no foreign code can be reached.
enum class PickleGlobal {
    OrderedDict,
    RebuildTensorV2,
    RebuildParameter,
    RebuildParameterWithState,
    StorageType, // torch.FloatStorage and friends; PickleValue::storageType says which
};

// One unpickled object. Containers refer to other values by pointer; all values are owned by the
// unpickler's arena, so self-referencing containers (possible through the memo) cannot leak or recurse.
struct PickleValue {
    enum class Kind { None, Bool, Int, Float, String, Bytes, Tuple, List, Dict, Global, Storage, Tensor };

    Kind kind = Kind::None;
    bool boolValue = false;
    int64_t intValue = 0;
    double floatValue = 0.0;
    std::string text;                                               // String, Bytes, Global ("module.name")
    PickleGlobal global = PickleGlobal::OrderedDict;                 // Global
    at::ScalarType storageType = at::ScalarType::Undefined;          // Global (StorageType) and Storage
    std::vector<PickleValue*> items;                                 // Tuple, List
    // Dict, in insertion order. SETITEM only appends (no key index to keep; a huge key repeated through the
    // memo would otherwise cost a hash of it per opcode): readers take the last entry of a key, as Python does.
    std::vector<std::pair<PickleValue*, PickleValue*>> entries;
    at::Tensor tensor;                                               // Storage (1-D, all elements), Tensor

    // Dict lookup by string key (last entry wins); nullptr when absent.
    const PickleValue* find(const std::string& key) const;
};

// "dict", "tensor", ... for messages.
const char* pickleKindName(PickleValue::Kind kind);

// Text from a file made fit for a one-line message: control bytes escaped, length capped.
std::string printableForMessage(const std::string& text);

// Returns the whole storage record `key` as a 1-D CPU tensor of `numel` elements of `dtype`. Called once per
// distinct key; it throws LoadError itself when the record is missing or too short.
using StorageLoader = std::function<at::Tensor(const std::string& key, at::ScalarType dtype, int64_t numel)>;

// A pickle reader that understands only what torch.save() writes for state dicts (protocols 2-5) and evaluates
// the few allowed callables natively in C++. All sizes are bounded and every read is range-checked, so a
// malformed or hostile pickle ends in LoadError, never in a crash or in running code.
class RestrictedUnpickler {
public:
    // `messagePrefix` starts every error message (e.g. "model.pt: data.pkl"); the data must outlive load().
    RestrictedUnpickler(const uint8_t* data, size_t size, std::string messagePrefix, StorageLoader loader);
    ~RestrictedUnpickler();
    RestrictedUnpickler(const RestrictedUnpickler&) = delete;
    RestrictedUnpickler& operator=(const RestrictedUnpickler&) = delete;

    // Runs the pickle up to STOP. The result stays owned by (and valid as long as) the unpickler.
    const PickleValue& load();

    // Limits; generous for any real state dict (a ViT-H has ~1k tensors, ~30 values each).
    static constexpr size_t kMaxValues = size_t(1) << 22;
    static constexpr size_t kMaxStack = size_t(1) << 22;
    static constexpr size_t kMaxMemo = size_t(1) << 22;
    static constexpr size_t kMaxMarks = size_t(1) << 16;
    static constexpr size_t kMaxDims = 64;

private:
    [[noreturn]] void fail(const std::string& problem) const;
    [[noreturn]] void failAt(size_t offset, const std::string& problem) const;

    // Reading primitives; every one checks the remaining byte count first.
    const uint8_t* take(size_t n);
    uint8_t readU8();
    uint64_t readLittle(size_t n);
    std::string readLine(size_t maxLength);

    PickleValue* make(PickleValue::Kind kind);
    void push(PickleValue* value);
    PickleValue* pop();
    PickleValue* top() const;
    size_t frameBase() const;
    std::vector<PickleValue*> popMark();
    void memoPut(uint64_t index);
    PickleValue* memoGet(uint64_t index) const;
    void pushString(PickleValue::Kind kind, uint64_t length);
    void pushInt(int64_t value);
    void pushSequence(PickleValue::Kind kind, std::vector<PickleValue*> items);
    uint64_t memoIndex(const std::string& line) const; // PUT's and GET's decimal argument

    // load()'s opcode families: each runs `op` and returns true when `op` is one of its own, false (having read
    // nothing) otherwise.
    bool runStackOp(uint8_t op); // protocol, frames, marks, stack and memo
    bool runScalarOp(uint8_t op); // None, bools, ints, floats, strings, bytes
    bool runContainerOp(uint8_t op); // tuples, lists, dicts
    bool runObjectOp(uint8_t op); // globals, calls, BUILD, persistent ids

    // The allowlist and the native callables (TorchPickleGlobals.cpp).
    void pushGlobal(const std::string& module, const std::string& name);
    void reduce(PickleValue* callable, PickleValue* args);
    void build(PickleValue* object, PickleValue* state);
    void persistentLoad(PickleValue* pid);
    PickleValue* rebuildTensor(const std::vector<PickleValue*>& args);
    int64_t intArg(const PickleValue* value, const char* what) const;
    std::vector<int64_t> intTuple(const PickleValue* value, const char* what) const;

    const uint8_t* m_data;
    size_t m_size;
    size_t m_pos = 0;
    size_t m_opOffset = 0; // offset of the opcode being run, for messages
    std::string m_prefix;
    StorageLoader m_loader;

    std::vector<std::unique_ptr<PickleValue>> m_arena;
    std::vector<PickleValue*> m_stack;
    std::vector<size_t> m_marks;
    std::unordered_map<uint64_t, PickleValue*> m_memo;
    std::unordered_map<std::string, PickleValue*> m_storages; // by record key: shared storages stay shared
    PickleValue m_none;
    PickleValue m_true;
    PickleValue m_false;
};

} // namespace attnscope::detail
