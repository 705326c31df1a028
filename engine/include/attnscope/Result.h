#pragma once

#include <string>
#include <utility>
#include <variant>

namespace attnscope {

// An error a user can cause (bad file, wrong shapes, unreadable image, no CUDA): one line that names the file
// and the problem. Programming errors are assertions, not Errors.
struct Error {
    std::string message;
};

// Either a value or an Error (the engine's boundary never throws).
template <typename T>
class Result {
public:
    Result(T value)
        : m_state(std::move(value))
    {
    }
    Result(Error error)
        : m_state(std::move(error))
    {
    }

    bool ok() const { return m_state.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() { return std::get<0>(m_state); }
    const T& value() const { return std::get<0>(m_state); }
    T& operator*() { return value(); }
    const T& operator*() const { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    const Error& error() const { return std::get<1>(m_state); }
    const std::string& message() const { return error().message; }

private:
    std::variant<T, Error> m_state;
};

} // namespace attnscope
