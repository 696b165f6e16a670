#include "neat/telemetry/jsonl_sink.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "neat/telemetry/event_json.hpp"

namespace neat {

namespace {
constexpr std::size_t kFlushAt = 1 << 20;  // write in 1 MiB chunks
constexpr std::size_t kCapacity = kFlushAt + (64 << 10);
}  // namespace

Result<std::shared_ptr<JsonlSink>> JsonlSink::open(const std::string& path, bool append) {
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
  if (fd < 0) {
    return failed_precondition("JsonlSink: cannot open '" + path +
                               "' for writing: " + std::strerror(errno));
  }
  return std::shared_ptr<JsonlSink>(new JsonlSink(fd, path));
}

JsonlSink::JsonlSink(int fd, std::string path)
    : fd_(fd), path_(std::move(path)), buffer_(new char[kCapacity]) {}

JsonlSink::~JsonlSink() {
  (void)flush();
  ::close(fd_);
}

void JsonlSink::on_event(const ConversionEvent& event) noexcept {
  try {
    std::lock_guard lock(mutex_);
    const std::size_t need = event_json_bound(event, &call_sites_) + 1;
    if (used_ + need > kCapacity) (void)write_locked();
    if (need > kCapacity) {  // an event larger than the buffer: encode it on its own
      std::string big;
      append_event_json(big, event, &call_sites_);
      big += '\n';
      std::memcpy(buffer_.get(), big.data(), std::min(big.size(), kCapacity));
      used_ = std::min(big.size(), kCapacity);
    } else {
      char* end = encode_event_json(buffer_.get() + used_, event, &call_sites_);
      *end++ = '\n';
      used_ = static_cast<std::size_t>(end - buffer_.get());
    }
    ++buffered_events_;
    events_.fetch_add(1, std::memory_order_relaxed);
    if (used_ >= kFlushAt) (void)write_locked();
  } catch (...) {
    lost_.fetch_add(1, std::memory_order_relaxed);
  }
}

Status JsonlSink::flush() {
  std::lock_guard lock(mutex_);
  return write_locked();
}

Status JsonlSink::write_locked() {
  std::size_t done = 0;
  while (done < used_) {
    const ssize_t n = ::write(fd_, buffer_.get() + done, used_ - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      lost_.fetch_add(buffered_events_, std::memory_order_relaxed);
      used_ = 0;
      buffered_events_ = 0;
      return resource_exhausted("JsonlSink: writing '" + path_ + "' failed: " + std::strerror(err));
    }
    done += static_cast<std::size_t>(n);
  }
  used_ = 0;
  buffered_events_ = 0;
  return {};
}

}  // namespace neat
