// Errors are values. An Error names the operation that failed with its
// arguments and the errno the kernel gave, and gains context as it rises:
//   "mount /repo/.git read-only: mount_setattr(\"/repo/.git\", RDONLY): EPERM".
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace stockade {

class Error {
  public:
    // A failed system call: `call` names it with its arguments.
    static Error fromErrno(std::string call, int err = errno) {
        return Error(std::move(call), err);
    }
    // A failure that has no errno (bad input, a contradiction).
    static Error message(std::string text) { return Error(std::move(text), 0); }

    // Prepends "context: " to the message; keeps the errno.
    Error withContext(const std::string& context) const& {
        return Error(context + ": " + text_, errno_);
    }

    // "text: ENAME" when an errno is set, else "text".
    std::string describe() const;
    const std::string& text() const { return text_; }
    int errnum() const { return errno_; }

  private:
    Error(std::string text, int err) : text_(std::move(text)), errno_(err) {}
    std::string text_;
    int errno_ = 0;
};

// The symbolic name of an errno value ("EPERM"), or "errno N".
std::string errnoName(int err);

// A value or the Error that prevented it.
template <class T>
class [[nodiscard]] Result {
  public:
    Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
    Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }
    T& value() & { return std::get<0>(v_); }
    const T& value() const& { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T&& operator*() && { return std::move(*this).value(); }
    const Error& error() const { return std::get<1>(v_); }

  private:
    std::variant<T, Error> v_;
};

// For operations that produce nothing but may fail.
struct Ok {};
using Status = Result<Ok>;
inline Status okStatus() {
    return Ok{};
}

}  // namespace stockade
