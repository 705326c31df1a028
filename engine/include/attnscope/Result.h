#pragma once

#include <string>
#include <utility>
#include <variant>

namespace attnscope {

// The one convention of every tier (engine, widgets, report, app) for what can fail: Result<T>, a value or an Error,
// and Status for an outcome without a value. A cancel asked for is an Error too, but a distinct one (cancelled()),
// so that a caller tells it from a failure by the result alone.

// An error a user can cause (bad file, wrong shapes, unreadable image, no CUDA): one line that names the file
// and the problem. Programming errors are assertions, not Errors.
struct Error {
    // Model::load only: the half of a user's own model that the file given lacks (a checkpoint whose tensor names need a
    // description, a description that names no weights), so that a window can ask for that file rather than fail.
    enum class Missing { Nothing, Weights, Description };

    std::string message;
    bool cancelled = false; // the caller asked to stop (Error::cancel): not a failure
    Missing missing = Missing::Nothing;

    static Error cancel() { return { "cancelled", true }; }
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
    // Stopped because the caller asked to (Error::cancel), not failed.
    bool cancelled() const { return !ok() && error().cancelled; }

private:
    std::variant<T, Error> m_state;
};

// The value of a Status that succeeded: `return Done {};`.
struct Done { };
// Done, or why not.
using Status = Result<Done>;

} // namespace attnscope
