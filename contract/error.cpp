#include "neat/contract/error.hpp"

#include <cerrno>
#include <cstring>

namespace neat {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::InvalidArgument:
      return "invalid_argument";
    case ErrorCode::OutOfRange:
      return "out_of_range";
    case ErrorCode::FailedPrecondition:
      return "failed_precondition";
    case ErrorCode::Unimplemented:
      return "unimplemented";
    case ErrorCode::ResourceExhausted:
      return "resource_exhausted";
    case ErrorCode::Internal:
      return "internal";
    case ErrorCode::Unavailable:
      return "unavailable";
    case ErrorCode::Cancelled:
      return "cancelled";
  }
  return "unknown";
}

std::string Error::to_string() const {
  std::string out(neat::to_string(code_));
  out += ": ";
  out += message_;
  return out;
}

Error Error::with_context(std::string_view context) const {
  std::string m(context);
  m += ": ";
  m += message_;
  return Error(code_, std::move(m));
}

BadResultAccess::BadResultAccess(Error error)
    : error_(std::move(error)), what_("neat::Result holds an error: " + error_.to_string()) {}

const Error& Result<void>::no_error() {
  static const Error e(ErrorCode::Internal, "no error: the operation succeeded");
  return e;
}

Error invalid_argument(std::string message) {
  return Error(ErrorCode::InvalidArgument, std::move(message));
}
Error out_of_range(std::string message) {
  return Error(ErrorCode::OutOfRange, std::move(message));
}
Error failed_precondition(std::string message) {
  return Error(ErrorCode::FailedPrecondition, std::move(message));
}
Error unimplemented(std::string message) {
  return Error(ErrorCode::Unimplemented, std::move(message));
}
Error resource_exhausted(std::string message) {
  return Error(ErrorCode::ResourceExhausted, std::move(message));
}
Error internal_error(std::string message) {
  return Error(ErrorCode::Internal, std::move(message));
}
Error unavailable(std::string message) {
  return Error(ErrorCode::Unavailable, std::move(message));
}
Error cancelled_error(std::string message) {
  return Error(ErrorCode::Cancelled, std::move(message));
}

Error os_error(std::string_view what, int errnum) {
  std::string m(what);
  m += ": ";
  char buf[128];
  // GNU strerror_r returns the message (possibly not in buf).
  m += ::strerror_r(errnum, buf, sizeof buf);
  m += " (";
  if (const char* name = ::strerrorname_np(errnum); name != nullptr) {
    m += name;
    m += ", ";
  }
  m += "errno ";
  m += std::to_string(errnum);
  m += ')';
  switch (errnum) {
    case ENOMEM:
    case EMFILE:
    case ENFILE:
    case ENOSPC:
    case EAGAIN:
      return Error(ErrorCode::ResourceExhausted, std::move(m));
    case ENOENT:
    case ENODEV:
    case ENXIO:
    case EACCES:
    case EPERM:
    case ENOSYS:
      return Error(ErrorCode::Unavailable, std::move(m));
    case EBADF:
    case EINVAL:
      return Error(ErrorCode::InvalidArgument, std::move(m));
    case ENOTTY:
    case EOPNOTSUPP:
      return Error(ErrorCode::Unimplemented, std::move(m));
    default:
      return Error(ErrorCode::FailedPrecondition, std::move(m));
  }
}

}  // namespace neat
