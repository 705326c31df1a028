// The allowlist of the restricted unpickler: which globals a torch.save() state dict may name, and native C++
// versions of the few callables among them (OrderedDict, tensor and parameter rebuilding, storage loading).
#include "checkpoint/RestrictedUnpickler.h"

#include "io/LoadError.h"

#include <ATen/ATen.h>

namespace attnscope::detail {

namespace {

bool storageTypeFor(const std::string& name, at::ScalarType* type)
{
    static const std::pair<const char*, at::ScalarType> kTypes[] = {
        {"FloatStorage", at::kFloat}, {"DoubleStorage", at::kDouble},   {"HalfStorage", at::kHalf},
        {"BFloat16Storage", at::kBFloat16}, {"LongStorage", at::kLong}, {"IntStorage", at::kInt},
        {"ShortStorage", at::kShort}, {"CharStorage", at::kChar},       {"ByteStorage", at::kByte},
        {"BoolStorage", at::kBool},
    };
    for (const auto& [n, t] : kTypes) {
        if (name == n) {
            *type = t;
            return true;
        }
    }
    return false;
}

} // namespace

void RestrictedUnpickler::pushGlobal(const std::string& module, const std::string& name)
{
    PickleValue* g = make(PickleValue::Kind::Global);
    g->text = module + "." + name;
    at::ScalarType type = at::ScalarType::Undefined;
    if (module == "collections" && name == "OrderedDict") {
        g->global = PickleGlobal::OrderedDict;
    } else if (module == "torch._utils" && name == "_rebuild_tensor_v2") {
        g->global = PickleGlobal::RebuildTensorV2;
    } else if (module == "torch._utils" && name == "_rebuild_parameter") {
        g->global = PickleGlobal::RebuildParameter;
    } else if (module == "torch._utils" && name == "_rebuild_parameter_with_state") {
        g->global = PickleGlobal::RebuildParameterWithState;
    } else if (module == "torch" && storageTypeFor(name, &type)) {
        g->global = PickleGlobal::StorageType;
        g->storageType = type;
    } else {
        // Refused here, before its arguments are read: the file named something only Python could run.
        fail("refuses to load '" + printableForMessage(g->text) +
             "' from the pickle (only state dicts of tensors are read; no code is run)");
    }
    push(g);
}

int64_t RestrictedUnpickler::intArg(const PickleValue* value, const char* what) const
{
    if (value->kind == PickleValue::Kind::Int)
        return value->intValue;
    if (value->kind == PickleValue::Kind::Bool)
        return value->boolValue ? 1 : 0;
    failAt(m_opOffset, std::string(what) + " is a " + pickleKindName(value->kind) + ", not an int");
}

std::vector<int64_t> RestrictedUnpickler::intTuple(const PickleValue* value, const char* what) const
{
    if (value->kind != PickleValue::Kind::Tuple && value->kind != PickleValue::Kind::List)
        failAt(m_opOffset, std::string(what) + " is a " + pickleKindName(value->kind) + ", not a tuple");
    if (value->items.size() > kMaxDims)
        failAt(m_opOffset, std::string(what) + " has more than " + std::to_string(kMaxDims) + " dimensions");
    std::vector<int64_t> out;
    for (const PickleValue* item : value->items)
        out.push_back(intArg(item, what));
    return out;
}

void RestrictedUnpickler::persistentLoad(PickleValue* pid)
{
    // torch.save writes ('storage', torch.<Type>Storage, key, location, numel) for every storage, in 1.6
    // through 2.x. The location (e.g. 'cuda:1') is ignored: everything is read to the CPU.
    if (pid->kind != PickleValue::Kind::Tuple || pid->items.size() != 5 ||
        pid->items[0]->kind != PickleValue::Kind::String || pid->items[0]->text != "storage")
        failAt(m_opOffset, "persistent id is not a ('storage', type, key, location, numel) tuple");
    const PickleValue* type = pid->items[1];
    const PickleValue* key = pid->items[2];
    if (type->kind != PickleValue::Kind::Global || type->global != PickleGlobal::StorageType)
        failAt(m_opOffset, "storage type is not a torch.<Type>Storage");
    if (key->kind != PickleValue::Kind::String)
        failAt(m_opOffset, "storage key is not a str");
    const int64_t numel = intArg(pid->items[4], "storage size");
    if (numel < 0)
        failAt(m_opOffset, "negative storage size");

    auto cached = m_storages.find(key->text);
    if (cached != m_storages.end()) {
        PickleValue* s = cached->second;
        if (s->storageType != type->storageType || s->tensor.numel() != numel)
            failAt(m_opOffset, "storage '" + printableForMessage(key->text) + "' is declared twice with different types");
        push(s);
        return;
    }
    if (m_storages.size() >= kMaxMemo)
        failAt(m_opOffset, "too many storages");
    PickleValue* s = make(PickleValue::Kind::Storage);
    s->storageType = type->storageType;
    s->tensor = m_loader(key->text, type->storageType, numel);
    if (!s->tensor.defined() || s->tensor.dim() != 1 || s->tensor.numel() != numel ||
        s->tensor.scalar_type() != type->storageType)
        fail("storage '" + printableForMessage(key->text) + "' could not be read");
    m_storages.emplace(key->text, s);
    push(s);
}

PickleValue* RestrictedUnpickler::rebuildTensor(const std::vector<PickleValue*>& args)
{
    // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
    if (args.size() != 6 && args.size() != 7)
        failAt(m_opOffset, "_rebuild_tensor_v2 takes 6 or 7 arguments, got " + std::to_string(args.size()));
    const PickleValue* storage = args[0];
    if (storage->kind != PickleValue::Kind::Storage)
        failAt(m_opOffset, "_rebuild_tensor_v2 needs a storage, got a " + std::string(pickleKindName(storage->kind)));
    const int64_t offset = intArg(args[1], "storage offset");
    const std::vector<int64_t> sizes = intTuple(args[2], "tensor size");
    const std::vector<int64_t> strides = intTuple(args[3], "tensor stride");
    if (sizes.size() != strides.size())
        failAt(m_opOffset, "tensor size and stride differ in length");
    if (offset < 0)
        failAt(m_opOffset, "negative storage offset");

    // Every element the view addresses must lie inside the storage: the largest index is
    // offset + sum((size - 1) * stride), computed with overflow checks. Negative sizes or strides are refused.
    const int64_t storageNumel = storage->tensor.numel();
    int64_t numel = 1;
    int64_t maxIndex = offset;
    for (size_t d = 0; d < sizes.size(); ++d) {
        if (sizes[d] < 0 || strides[d] < 0)
            failAt(m_opOffset, "negative tensor size or stride");
        if (__builtin_mul_overflow(numel, sizes[d], &numel))
            failAt(m_opOffset, "tensor size overflows");
    }
    PickleValue* t = make(PickleValue::Kind::Tensor);
    try {
        if (numel == 0) {
            t->tensor = at::empty(sizes, at::TensorOptions().dtype(storage->storageType));
        } else {
            for (size_t d = 0; d < sizes.size(); ++d) {
                int64_t span = 0;
                if (__builtin_mul_overflow(sizes[d] - 1, strides[d], &span) ||
                    __builtin_add_overflow(maxIndex, span, &maxIndex))
                    failAt(m_opOffset, "tensor extent overflows");
            }
            if (maxIndex >= storageNumel)
                fail("a tensor of shape " + c10::str(at::IntArrayRef(sizes)) + " reaches element " +
                     std::to_string(maxIndex) + " of a storage of " + std::to_string(storageNumel) + " elements");
            // Views with zero or overlapping strides can address far more elements than the storage holds;
            // torch.save of an expand()ed tensor does that, but not at a size worth a gigabyte copy.
            if (numel > storageNumel && numel > (int64_t(1) << 26))
                fail("a broadcast tensor of shape " + c10::str(at::IntArrayRef(sizes)) + " is too large");
            // The copy owns its memory and is contiguous, whatever the view's strides were.
            t->tensor = storage->tensor.as_strided(sizes, strides, offset).clone(at::MemoryFormat::Contiguous);
        }
    } catch (const c10::Error& e) {
        fail("cannot rebuild tensor: " + printableForMessage(e.what_without_backtrace()));
    }
    return t;
}

void RestrictedUnpickler::reduce(PickleValue* callable, PickleValue* args)
{
    if (callable->kind != PickleValue::Kind::Global)
        failAt(m_opOffset, "REDUCE of a " + std::string(pickleKindName(callable->kind)));
    if (args->kind != PickleValue::Kind::Tuple)
        failAt(m_opOffset, "REDUCE arguments are a " + std::string(pickleKindName(args->kind)) + ", not a tuple");
    const std::vector<PickleValue*>& a = args->items;
    switch (callable->global) {
    case PickleGlobal::OrderedDict:
        // OrderedDict.__reduce__ passes no arguments; items come after by SETITEMS.
        if (!a.empty())
            failAt(m_opOffset, "OrderedDict() with arguments");
        push(make(PickleValue::Kind::Dict));
        return;
    case PickleGlobal::RebuildTensorV2:
        push(rebuildTensor(a));
        return;
    case PickleGlobal::RebuildParameter:           // (data, requires_grad, backward_hooks)
    case PickleGlobal::RebuildParameterWithState: { // (data, requires_grad, backward_hooks, state)
        const size_t expected = callable->global == PickleGlobal::RebuildParameter ? 3 : 4;
        if (a.size() != expected || a[0]->kind != PickleValue::Kind::Tensor)
            failAt(m_opOffset, printableForMessage(callable->text) + " with unexpected arguments");
        // A parameter's data is all a state dict needs; requires_grad, hooks and Python attributes are dropped.
        push(a[0]);
        return;
    }
    case PickleGlobal::StorageType:
        break;
    }
    failAt(m_opOffset, "'" + printableForMessage(callable->text) + "' cannot be called");
}

void RestrictedUnpickler::build(PickleValue* object, PickleValue* state)
{
    // model.state_dict() is an OrderedDict with a `_metadata` attribute (module versions), which pickle
    // restores by BUILD. Attributes carry no tensors, so they are dropped.
    (void)state;
    if (object->kind != PickleValue::Kind::Dict)
        failAt(m_opOffset, "BUILD on a " + std::string(pickleKindName(object->kind)));
}

} // namespace attnscope::detail
