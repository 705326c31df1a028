#include "RestrictedUnpickler.h"

#include "LoadError.h"

#include <ATen/ATen.h>

#include <cstring>
#include <limits>

namespace attnscope::detail {

namespace {

// Pickle opcodes (see CPython's Lib/pickle.py). Only those torch.save() writes for state dicts are run.
enum Op : uint8_t {
    MARK = '(', STOP = '.', POP = '0', POP_MARK = '1', DUP = '2', BININT = 'J', BININT1 = 'K', BININT2 = 'M',
    NONE = 'N', BINPERSID = 'Q', REDUCE = 'R', BINSTRING = 'T', SHORT_BINSTRING = 'U', BINUNICODE = 'X',
    APPEND = 'a', BUILD = 'b', GLOBAL = 'c', DICT = 'd', EMPTY_DICT = '}', APPENDS = 'e', GET = 'g',
    BINGET = 'h', LONG_BINGET = 'j', LIST = 'l', EMPTY_LIST = ']', PUT = 'p', BINPUT = 'q', LONG_BINPUT = 'r',
    SETITEM = 's', TUPLE = 't', EMPTY_TUPLE = ')', SETITEMS = 'u', BINFLOAT = 'G', BINBYTES = 'B',
    SHORT_BINBYTES = 'C', PROTO = 0x80, NEWOBJ = 0x81, TUPLE1 = 0x85, TUPLE2 = 0x86, TUPLE3 = 0x87,
    NEWTRUE = 0x88, NEWFALSE = 0x89, LONG1 = 0x8a, LONG4 = 0x8b, SHORT_BINUNICODE = 0x8c, BINUNICODE8 = 0x8d,
    BINBYTES8 = 0x8e, STACK_GLOBAL = 0x93, MEMOIZE = 0x94, FRAME = 0x95,
};

// Names of valid opcodes this reader does not run, so the error says what the file wanted.
const char* unsupportedOpName(uint8_t op)
{
    switch (op) {
    case 'F': return "FLOAT";
    case 'I': return "INT";
    case 'L': return "LONG";
    case 'P': return "PERSID";
    case 'S': return "STRING";
    case 'V': return "UNICODE";
    case 'i': return "INST";
    case 'o': return "OBJ";
    case 0x82: return "EXT1";
    case 0x83: return "EXT2";
    case 0x84: return "EXT4";
    case 0x8f: return "EMPTY_SET";
    case 0x90: return "ADDITEMS";
    case 0x91: return "FROZENSET";
    case 0x92: return "NEWOBJ_EX";
    case 0x96: return "BYTEARRAY8";
    case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    default: return nullptr;
    }
}

std::string hexByte(uint8_t b)
{
    static const char digits[] = "0123456789abcdef";
    return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

// Names from the file go into one-line messages: escape control bytes and cap the length.
std::string printable(const std::string& s)
{
    std::string out;
    for (const unsigned char c : s.substr(0, 200)) {
        if (c < 0x20 || c == 0x7f)
            out += "\\x" + hexByte(c).substr(2);
        else
            out += char(c);
    }
    if (s.size() > 200)
        out += "...";
    return out;
}

const char* kindName(PickleValue::Kind kind)
{
    switch (kind) {
    case PickleValue::Kind::None: return "None";
    case PickleValue::Kind::Bool: return "bool";
    case PickleValue::Kind::Int: return "int";
    case PickleValue::Kind::Float: return "float";
    case PickleValue::Kind::String: return "str";
    case PickleValue::Kind::Bytes: return "bytes";
    case PickleValue::Kind::Tuple: return "tuple";
    case PickleValue::Kind::List: return "list";
    case PickleValue::Kind::Dict: return "dict";
    case PickleValue::Kind::Global: return "class or function";
    case PickleValue::Kind::Storage: return "storage";
    case PickleValue::Kind::Tensor: return "tensor";
    }
    return "value";
}

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

const PickleValue* PickleValue::find(const std::string& key) const
{
    for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
        if (it->first->kind == Kind::String && it->first->text == key)
            return it->second;
    }
    return nullptr;
}

RestrictedUnpickler::RestrictedUnpickler(const uint8_t* data, size_t size, std::string messagePrefix,
                                         StorageLoader loader)
    : m_data(data), m_size(size), m_prefix(std::move(messagePrefix)), m_loader(std::move(loader))
{
    m_none.kind = PickleValue::Kind::None;
    m_true.kind = PickleValue::Kind::Bool;
    m_true.boolValue = true;
    m_false.kind = PickleValue::Kind::Bool;
}

RestrictedUnpickler::~RestrictedUnpickler() = default;

void RestrictedUnpickler::fail(const std::string& problem) const
{
    throw LoadError(m_prefix + ": " + problem);
}

void RestrictedUnpickler::failAt(size_t offset, const std::string& problem) const
{
    fail("malformed pickle (data.pkl offset " + std::to_string(offset) + "): " + problem);
}

const uint8_t* RestrictedUnpickler::take(size_t n)
{
    if (n > m_size - m_pos)
        failAt(m_opOffset, "truncated: needs " + std::to_string(n) + " more bytes, " +
                               std::to_string(m_size - m_pos) + " left");
    const uint8_t* p = m_data + m_pos;
    m_pos += n;
    return p;
}

uint8_t RestrictedUnpickler::readU8() { return *take(1); }

uint64_t RestrictedUnpickler::readLittle(size_t n)
{
    const uint8_t* p = take(n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i)
        v |= uint64_t(p[i]) << (8 * i);
    return v;
}

std::string RestrictedUnpickler::readLine(size_t maxLength)
{
    const size_t limit = std::min(maxLength + 1, m_size - m_pos);
    const void* nl = std::memchr(m_data + m_pos, '\n', limit);
    if (!nl)
        failAt(m_opOffset, "line argument missing or longer than " + std::to_string(maxLength) + " bytes");
    const size_t length = size_t(static_cast<const uint8_t*>(nl) - (m_data + m_pos));
    std::string line(reinterpret_cast<const char*>(m_data + m_pos), length);
    m_pos += length + 1;
    return line;
}

PickleValue* RestrictedUnpickler::make(PickleValue::Kind kind)
{
    if (m_arena.size() >= kMaxValues)
        failAt(m_opOffset, "more than " + std::to_string(kMaxValues) + " objects");
    m_arena.push_back(std::make_unique<PickleValue>());
    m_arena.back()->kind = kind;
    return m_arena.back().get();
}

void RestrictedUnpickler::push(PickleValue* value)
{
    if (m_stack.size() >= kMaxStack)
        failAt(m_opOffset, "stack deeper than " + std::to_string(kMaxStack));
    m_stack.push_back(value);
}

size_t RestrictedUnpickler::frameBase() const { return m_marks.empty() ? 0 : m_marks.back(); }

PickleValue* RestrictedUnpickler::pop()
{
    // Values below the innermost MARK belong to an enclosing frame and cannot be popped (as in CPython).
    if (m_stack.size() <= frameBase())
        failAt(m_opOffset, "stack underflow");
    PickleValue* v = m_stack.back();
    m_stack.pop_back();
    return v;
}

PickleValue* RestrictedUnpickler::top() const
{
    if (m_stack.size() <= frameBase())
        failAt(m_opOffset, "stack underflow");
    return m_stack.back();
}

std::vector<PickleValue*> RestrictedUnpickler::popMark()
{
    if (m_marks.empty())
        failAt(m_opOffset, "no MARK on the stack");
    const size_t base = m_marks.back();
    m_marks.pop_back();
    std::vector<PickleValue*> items(m_stack.begin() + std::ptrdiff_t(base), m_stack.end());
    m_stack.resize(base);
    return items;
}

void RestrictedUnpickler::memoPut(uint64_t index)
{
    PickleValue* v = top();
    auto it = m_memo.find(index);
    if (it != m_memo.end()) {
        it->second = v;
        return;
    }
    if (m_memo.size() >= kMaxMemo)
        failAt(m_opOffset, "memo larger than " + std::to_string(kMaxMemo));
    m_memo.emplace(index, v);
}

PickleValue* RestrictedUnpickler::memoGet(uint64_t index) const
{
    auto it = m_memo.find(index);
    if (it == m_memo.end())
        failAt(m_opOffset, "memo key " + std::to_string(index) + " not defined");
    return it->second;
}

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
        fail("refuses to load '" + printable(g->text) +
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
    failAt(m_opOffset, std::string(what) + " is a " + kindName(value->kind) + ", not an int");
}

std::vector<int64_t> RestrictedUnpickler::intTuple(const PickleValue* value, const char* what) const
{
    if (value->kind != PickleValue::Kind::Tuple && value->kind != PickleValue::Kind::List)
        failAt(m_opOffset, std::string(what) + " is a " + kindName(value->kind) + ", not a tuple");
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
            failAt(m_opOffset, "storage '" + printable(key->text) + "' is declared twice with different types");
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
        fail("storage '" + printable(key->text) + "' could not be read");
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
        failAt(m_opOffset, "_rebuild_tensor_v2 needs a storage, got a " + std::string(kindName(storage->kind)));
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
        fail("cannot rebuild tensor: " + printable(e.what_without_backtrace()));
    }
    return t;
}

void RestrictedUnpickler::reduce(PickleValue* callable, PickleValue* args)
{
    if (callable->kind != PickleValue::Kind::Global)
        failAt(m_opOffset, "REDUCE of a " + std::string(kindName(callable->kind)));
    if (args->kind != PickleValue::Kind::Tuple)
        failAt(m_opOffset, "REDUCE arguments are a " + std::string(kindName(args->kind)) + ", not a tuple");
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
            failAt(m_opOffset, printable(callable->text) + " with unexpected arguments");
        // A parameter's data is all a state dict needs; requires_grad, hooks and Python attributes are dropped.
        push(a[0]);
        return;
    }
    case PickleGlobal::StorageType:
        break;
    }
    failAt(m_opOffset, "'" + printable(callable->text) + "' cannot be called");
}

void RestrictedUnpickler::build(PickleValue* object, PickleValue* state)
{
    // model.state_dict() is an OrderedDict with a `_metadata` attribute (module versions), which pickle
    // restores by BUILD. Attributes carry no tensors, so they are dropped.
    (void)state;
    if (object->kind != PickleValue::Kind::Dict)
        failAt(m_opOffset, "BUILD on a " + std::string(kindName(object->kind)));
}

const PickleValue& RestrictedUnpickler::load()
{
    using Kind = PickleValue::Kind;
    const auto pushString = [this](Kind kind, uint64_t length) {
        if (length > m_size - m_pos)
            failAt(m_opOffset, "string of " + std::to_string(length) + " bytes runs past the end");
        PickleValue* v = make(kind);
        const uint8_t* p = take(size_t(length));
        v->text.assign(reinterpret_cast<const char*>(p), size_t(length));
        push(v);
    };
    const auto pushInt = [this](int64_t value) {
        PickleValue* v = make(Kind::Int);
        v->intValue = value;
        push(v);
    };
    const auto makeSequence = [this](Kind kind, std::vector<PickleValue*> items) {
        PickleValue* v = make(kind);
        v->items = std::move(items);
        push(v);
    };
    const auto decimal = [this](const std::string& line) {
        if (line.empty() || line.size() > 18 || line.find_first_not_of("0123456789") != std::string::npos)
            failAt(m_opOffset, "bad memo index '" + printable(line) + "'");
        return uint64_t(std::stoull(line));
    };

    while (true) {
        m_opOffset = m_pos;
        if (m_pos >= m_size)
            failAt(m_pos, "ends without STOP");
        const uint8_t op = readU8();
        switch (op) {
        case PROTO: {
            const uint8_t version = readU8();
            if (version > 5)
                failAt(m_opOffset, "pickle protocol " + std::to_string(version) + " is newer than 5");
            break;
        }
        case FRAME: {
            // Frames only group opcodes for buffered reading; the whole pickle is in memory already.
            const uint64_t length = readLittle(8);
            if (length > m_size - m_pos)
                failAt(m_opOffset, "frame runs past the end");
            break;
        }
        case STOP: {
            PickleValue* result = pop();
            return *result;
        }
        case MARK:
            if (m_marks.size() >= kMaxMarks)
                failAt(m_opOffset, "MARKs nested deeper than " + std::to_string(kMaxMarks));
            m_marks.push_back(m_stack.size());
            break;
        case POP:
            if (m_stack.size() <= frameBase() && !m_marks.empty())
                popMark(); // CPython pops the mark when the current frame is empty
            else
                pop();
            break;
        case POP_MARK: popMark(); break;
        case DUP: push(top()); break;
        case NONE: push(&m_none); break;
        case NEWTRUE: push(&m_true); break;
        case NEWFALSE: push(&m_false); break;
        case BININT: pushInt(int64_t(int32_t(uint32_t(readLittle(4))))); break;
        case BININT1: pushInt(readU8()); break;
        case BININT2: pushInt(int64_t(readLittle(2))); break;
        case LONG1:
        case LONG4: {
            const uint64_t n = op == LONG1 ? readU8() : readLittle(4);
            if (n > 8)
                failAt(m_opOffset, "integer wider than 64 bits");
            uint64_t v = readLittle(size_t(n));
            if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1)
                v |= ~uint64_t(0) << (8 * n); // sign-extend the two's complement value
            pushInt(int64_t(v));
            break;
        }
        case BINFLOAT: {
            const uint8_t* p = take(8);
            uint64_t bits = 0;
            for (int i = 0; i < 8; ++i)
                bits = (bits << 8) | p[i]; // big-endian on the wire
            PickleValue* v = make(Kind::Float);
            std::memcpy(&v->floatValue, &bits, sizeof bits);
            push(v);
            break;
        }
        case SHORT_BINUNICODE: pushString(Kind::String, readU8()); break;
        case BINUNICODE: pushString(Kind::String, readLittle(4)); break;
        case BINUNICODE8: pushString(Kind::String, readLittle(8)); break;
        case SHORT_BINSTRING: pushString(Kind::String, readU8()); break;
        case BINSTRING: {
            const int32_t length = int32_t(uint32_t(readLittle(4)));
            if (length < 0)
                failAt(m_opOffset, "negative string length");
            pushString(Kind::String, uint64_t(length));
            break;
        }
        case SHORT_BINBYTES: pushString(Kind::Bytes, readU8()); break;
        case BINBYTES: pushString(Kind::Bytes, readLittle(4)); break;
        case BINBYTES8: pushString(Kind::Bytes, readLittle(8)); break;
        case EMPTY_TUPLE: makeSequence(Kind::Tuple, {}); break;
        case TUPLE1: {
            PickleValue* a = pop();
            makeSequence(Kind::Tuple, {a});
            break;
        }
        case TUPLE2: {
            PickleValue* b = pop();
            PickleValue* a = pop();
            makeSequence(Kind::Tuple, {a, b});
            break;
        }
        case TUPLE3: {
            PickleValue* c = pop();
            PickleValue* b = pop();
            PickleValue* a = pop();
            makeSequence(Kind::Tuple, {a, b, c});
            break;
        }
        case TUPLE: makeSequence(Kind::Tuple, popMark()); break;
        case EMPTY_LIST: makeSequence(Kind::List, {}); break;
        case LIST: makeSequence(Kind::List, popMark()); break;
        case EMPTY_DICT: push(make(Kind::Dict)); break;
        case DICT:
        case SETITEMS: {
            std::vector<PickleValue*> items = popMark();
            if (items.size() % 2 != 0)
                failAt(m_opOffset, "odd number of items for a dict");
            PickleValue* dict = op == DICT ? make(Kind::Dict) : top();
            if (dict->kind != Kind::Dict)
                failAt(m_opOffset, "SETITEMS on a " + std::string(kindName(dict->kind)));
            for (size_t i = 0; i < items.size(); i += 2)
                dict->entries.emplace_back(items[i], items[i + 1]);
            if (op == DICT)
                push(dict);
            break;
        }
        case SETITEM: {
            PickleValue* value = pop();
            PickleValue* key = pop();
            PickleValue* dict = top();
            if (dict->kind != Kind::Dict)
                failAt(m_opOffset, "SETITEM on a " + std::string(kindName(dict->kind)));
            dict->entries.emplace_back(key, value);
            break;
        }
        case APPEND:
        case APPENDS: {
            std::vector<PickleValue*> items;
            if (op == APPEND)
                items.push_back(pop());
            else
                items = popMark();
            PickleValue* list = top();
            if (list->kind != Kind::List)
                failAt(m_opOffset, "APPEND to a " + std::string(kindName(list->kind)));
            list->items.insert(list->items.end(), items.begin(), items.end());
            break;
        }
        case PUT: memoPut(decimal(readLine(20))); break;
        case BINPUT: memoPut(readU8()); break;
        case LONG_BINPUT: memoPut(readLittle(4)); break;
        case MEMOIZE: memoPut(m_memo.size()); break;
        case GET: push(memoGet(decimal(readLine(20)))); break;
        case BINGET: push(memoGet(readU8())); break;
        case LONG_BINGET: push(memoGet(readLittle(4))); break;
        case GLOBAL: {
            const std::string module = readLine(256);
            const std::string name = readLine(256);
            pushGlobal(module, name);
            break;
        }
        case STACK_GLOBAL: {
            PickleValue* name = pop();
            PickleValue* module = pop();
            if (module->kind != Kind::String || name->kind != Kind::String)
                failAt(m_opOffset, "STACK_GLOBAL needs two str");
            pushGlobal(module->text, name->text);
            break;
        }
        case REDUCE: {
            PickleValue* args = pop();
            PickleValue* callable = pop();
            reduce(callable, args);
            break;
        }
        case NEWOBJ: {
            // cls.__new__(cls, *args): only an empty OrderedDict is a plain data object.
            PickleValue* args = pop();
            PickleValue* cls = pop();
            if (cls->kind != Kind::Global || cls->global != PickleGlobal::OrderedDict)
                failAt(m_opOffset, "NEWOBJ of a " + std::string(kindName(cls->kind)) + " other than OrderedDict");
            if (args->kind != Kind::Tuple || !args->items.empty())
                failAt(m_opOffset, "OrderedDict.__new__ with arguments");
            push(make(Kind::Dict));
            break;
        }
        case BUILD: {
            PickleValue* state = pop();
            build(top(), state);
            break;
        }
        case BINPERSID: persistentLoad(pop()); break;
        default: {
            const char* name = unsupportedOpName(op);
            if (name)
                failAt(m_opOffset, std::string("unsupported pickle opcode ") + name + " (" + hexByte(op) + ")");
            failAt(m_opOffset, "unknown pickle opcode " + hexByte(op));
        }
        }
    }
}

} // namespace attnscope::detail
