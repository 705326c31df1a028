#include "checkpoint/RestrictedUnpickler.h"

#include "io/LoadError.h"

#include <algorithm>
#include <cstring>

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
    static const std::pair<uint8_t, const char*> kNames[] = {
        {'F', "FLOAT"}, {'I', "INT"}, {'L', "LONG"}, {'P', "PERSID"}, {'S', "STRING"}, {'V', "UNICODE"},
        {'i', "INST"}, {'o', "OBJ"}, {0x82, "EXT1"}, {0x83, "EXT2"}, {0x84, "EXT4"}, {0x8f, "EMPTY_SET"},
        {0x90, "ADDITEMS"}, {0x91, "FROZENSET"}, {0x92, "NEWOBJ_EX"}, {0x96, "BYTEARRAY8"},
        {0x97, "NEXT_BUFFER"}, {0x98, "READONLY_BUFFER"},
    };
    for (const auto& [code, name] : kNames) {
        if (code == op)
            return name;
    }
    return nullptr;
}

std::string hexByte(uint8_t b)
{
    static const char digits[] = "0123456789abcdef";
    return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

} // namespace

std::string printableForMessage(const std::string& s)
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

const char* pickleKindName(PickleValue::Kind kind)
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

void RestrictedUnpickler::pushString(PickleValue::Kind kind, uint64_t length)
{
    if (length > m_size - m_pos)
        failAt(m_opOffset, "string of " + std::to_string(length) + " bytes runs past the end");
    PickleValue* v = make(kind);
    const uint8_t* p = take(size_t(length));
    v->text.assign(reinterpret_cast<const char*>(p), size_t(length));
    push(v);
}

void RestrictedUnpickler::pushInt(int64_t value)
{
    PickleValue* v = make(PickleValue::Kind::Int);
    v->intValue = value;
    push(v);
}

void RestrictedUnpickler::pushSequence(PickleValue::Kind kind, std::vector<PickleValue*> items)
{
    PickleValue* v = make(kind);
    v->items = std::move(items);
    push(v);
}

uint64_t RestrictedUnpickler::memoIndex(const std::string& line) const
{
    if (line.empty() || line.size() > 18 || line.find_first_not_of("0123456789") != std::string::npos)
        failAt(m_opOffset, "bad memo index '" + printableForMessage(line) + "'");
    return uint64_t(std::stoull(line));
}

bool RestrictedUnpickler::runStackOp(uint8_t op)
{
    switch (op) {
    case PROTO: {
        const uint8_t version = readU8();
        if (version > 5)
            failAt(m_opOffset, "pickle protocol " + std::to_string(version) + " is newer than 5");
        return true;
    }
    case FRAME: {
        // Frames only group opcodes for buffered reading; the whole pickle is in memory already.
        const uint64_t length = readLittle(8);
        if (length > m_size - m_pos)
            failAt(m_opOffset, "frame runs past the end");
        return true;
    }
    case MARK:
        if (m_marks.size() >= kMaxMarks)
            failAt(m_opOffset, "MARKs nested deeper than " + std::to_string(kMaxMarks));
        m_marks.push_back(m_stack.size());
        return true;
    case POP:
        if (m_stack.size() <= frameBase() && !m_marks.empty())
            popMark(); // CPython pops the mark when the current frame is empty
        else
            pop();
        return true;
    case POP_MARK: popMark(); return true;
    case DUP: push(top()); return true;
    case PUT: memoPut(memoIndex(readLine(20))); return true;
    case BINPUT: memoPut(readU8()); return true;
    case LONG_BINPUT: memoPut(readLittle(4)); return true;
    case MEMOIZE: memoPut(m_memo.size()); return true;
    case GET: push(memoGet(memoIndex(readLine(20)))); return true;
    case BINGET: push(memoGet(readU8())); return true;
    case LONG_BINGET: push(memoGet(readLittle(4))); return true;
    default: return false;
    }
}

bool RestrictedUnpickler::runScalarOp(uint8_t op)
{
    using Kind = PickleValue::Kind;
    switch (op) {
    case NONE: push(&m_none); return true;
    case NEWTRUE: push(&m_true); return true;
    case NEWFALSE: push(&m_false); return true;
    case BININT: pushInt(int64_t(int32_t(uint32_t(readLittle(4))))); return true;
    case BININT1: pushInt(readU8()); return true;
    case BININT2: pushInt(int64_t(readLittle(2))); return true;
    case LONG1:
    case LONG4: {
        const uint64_t n = op == LONG1 ? readU8() : readLittle(4);
        if (n > 8)
            failAt(m_opOffset, "integer wider than 64 bits");
        uint64_t v = readLittle(size_t(n));
        if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1)
            v |= ~uint64_t(0) << (8 * n); // sign-extend the two's complement value
        pushInt(int64_t(v));
        return true;
    }
    case BINFLOAT: {
        const uint8_t* p = take(8);
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i)
            bits = (bits << 8) | p[i]; // big-endian on the wire
        PickleValue* v = make(Kind::Float);
        std::memcpy(&v->floatValue, &bits, sizeof bits);
        push(v);
        return true;
    }
    case SHORT_BINUNICODE: pushString(Kind::String, readU8()); return true;
    case BINUNICODE: pushString(Kind::String, readLittle(4)); return true;
    case BINUNICODE8: pushString(Kind::String, readLittle(8)); return true;
    case SHORT_BINSTRING: pushString(Kind::String, readU8()); return true;
    case BINSTRING: {
        const int32_t length = int32_t(uint32_t(readLittle(4)));
        if (length < 0)
            failAt(m_opOffset, "negative string length");
        pushString(Kind::String, uint64_t(length));
        return true;
    }
    case SHORT_BINBYTES: pushString(Kind::Bytes, readU8()); return true;
    case BINBYTES: pushString(Kind::Bytes, readLittle(4)); return true;
    case BINBYTES8: pushString(Kind::Bytes, readLittle(8)); return true;
    default: return false;
    }
}

bool RestrictedUnpickler::runContainerOp(uint8_t op)
{
    using Kind = PickleValue::Kind;
    switch (op) {
    case EMPTY_TUPLE: pushSequence(Kind::Tuple, {}); return true;
    case TUPLE1: {
        PickleValue* a = pop();
        pushSequence(Kind::Tuple, {a});
        return true;
    }
    case TUPLE2: {
        PickleValue* b = pop();
        PickleValue* a = pop();
        pushSequence(Kind::Tuple, {a, b});
        return true;
    }
    case TUPLE3: {
        PickleValue* c = pop();
        PickleValue* b = pop();
        PickleValue* a = pop();
        pushSequence(Kind::Tuple, {a, b, c});
        return true;
    }
    case TUPLE: pushSequence(Kind::Tuple, popMark()); return true;
    case EMPTY_LIST: pushSequence(Kind::List, {}); return true;
    case LIST: pushSequence(Kind::List, popMark()); return true;
    case EMPTY_DICT: push(make(Kind::Dict)); return true;
    case DICT:
    case SETITEMS: {
        std::vector<PickleValue*> items = popMark();
        if (items.size() % 2 != 0)
            failAt(m_opOffset, "odd number of items for a dict");
        PickleValue* dict = op == DICT ? make(Kind::Dict) : top();
        if (dict->kind != Kind::Dict)
            failAt(m_opOffset, "SETITEMS on a " + std::string(pickleKindName(dict->kind)));
        for (size_t i = 0; i < items.size(); i += 2)
            dict->entries.emplace_back(items[i], items[i + 1]);
        if (op == DICT)
            push(dict);
        return true;
    }
    case SETITEM: {
        PickleValue* value = pop();
        PickleValue* key = pop();
        PickleValue* dict = top();
        if (dict->kind != Kind::Dict)
            failAt(m_opOffset, "SETITEM on a " + std::string(pickleKindName(dict->kind)));
        dict->entries.emplace_back(key, value);
        return true;
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
            failAt(m_opOffset, "APPEND to a " + std::string(pickleKindName(list->kind)));
        list->items.insert(list->items.end(), items.begin(), items.end());
        return true;
    }
    default: return false;
    }
}

bool RestrictedUnpickler::runObjectOp(uint8_t op)
{
    using Kind = PickleValue::Kind;
    switch (op) {
    case GLOBAL: {
        const std::string module = readLine(256);
        const std::string name = readLine(256);
        pushGlobal(module, name);
        return true;
    }
    case STACK_GLOBAL: {
        PickleValue* name = pop();
        PickleValue* module = pop();
        if (module->kind != Kind::String || name->kind != Kind::String)
            failAt(m_opOffset, "STACK_GLOBAL needs two str");
        pushGlobal(module->text, name->text);
        return true;
    }
    case REDUCE: {
        PickleValue* args = pop();
        PickleValue* callable = pop();
        reduce(callable, args);
        return true;
    }
    case NEWOBJ: {
        // cls.__new__(cls, *args): only an empty OrderedDict is a plain data object.
        PickleValue* args = pop();
        PickleValue* cls = pop();
        if (cls->kind != Kind::Global || cls->global != PickleGlobal::OrderedDict)
            failAt(m_opOffset, "NEWOBJ of a " + std::string(pickleKindName(cls->kind)) + " other than OrderedDict");
        if (args->kind != Kind::Tuple || !args->items.empty())
            failAt(m_opOffset, "OrderedDict.__new__ with arguments");
        push(make(Kind::Dict));
        return true;
    }
    case BUILD: {
        PickleValue* state = pop();
        build(top(), state);
        return true;
    }
    case BINPERSID: persistentLoad(pop()); return true;
    default: return false;
    }
}

const PickleValue& RestrictedUnpickler::load()
{
    while (true) {
        m_opOffset = m_pos;
        if (m_pos >= m_size)
            failAt(m_pos, "ends without STOP");
        const uint8_t op = readU8();
        if (op == STOP) {
            PickleValue* result = pop();
            return *result;
        }
        // Each opcode belongs to exactly one family, so the order of these tries does not matter.
        if (runStackOp(op) || runScalarOp(op) || runContainerOp(op) || runObjectOp(op))
            continue;
        const char* name = unsupportedOpName(op);
        if (name)
            failAt(m_opOffset, std::string("unsupported pickle opcode ") + name + " (" + hexByte(op) + ")");
        failAt(m_opOffset, "unknown pickle opcode " + hexByte(op));
    }
}

} // namespace attnscope::detail
