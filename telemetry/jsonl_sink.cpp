#include "neat/telemetry/jsonl_sink.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "neat/telemetry/event_json.hpp"

namespace neat {

namespace {
constexpr std::size_t kFlushAt = 1 << 20;  // write in 1 MiB chunks
constexpr std::size_t kCapacity = kFlushAt + (64 << 10);
constexpr std::int64_t kMinMaxBytes = 256;
}  // namespace

Result<std::shared_ptr<JsonlSink>> JsonlSink::open(const std::string& path, bool append) {
  JsonlSinkOptions o;
  o.append = append;
  return open(path, o);
}

Result<std::shared_ptr<JsonlSink>> JsonlSink::open(const std::string& path,
                                                   const JsonlSinkOptions& options) {
  if (options.max_bytes < 0 || (options.max_bytes > 0 && options.max_bytes < kMinMaxBytes)) {
    return invalid_argument(
        "JsonlSink '" + path + "': max_bytes = " + std::to_string(options.max_bytes) +
        " (0 for no rotation, or at least " + std::to_string(kMinMaxBytes) + " bytes)");
  }
  if (options.keep < 0)
    return invalid_argument("JsonlSink '" + path + "': keep = " + std::to_string(options.keep) +
                            " (rotated files to keep: 0 or more)");
  const int fd = ::open(
      path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (options.append ? O_APPEND : O_TRUNC), 0644);
  if (fd < 0) {
    return failed_precondition("JsonlSink: cannot open '" + path +
                               "' for writing: " + std::strerror(errno));
  }
  std::shared_ptr<JsonlSink> sink(new JsonlSink(fd, path, options));
  if (options.append) {
    struct stat st {};
    if (::fstat(fd, &st) == 0) sink->file_bytes_ = st.st_size;
  }
  std::lock_guard lock(sink->mutex_);
  NEAT_RETURN_IF_ERROR(sink->write_header());
  return sink;
}

JsonlSink::JsonlSink(int fd, std::string path, JsonlSinkOptions options)
    : fd_(fd), path_(std::move(path)), options_(options), buffer_(new char[kCapacity]) {
  const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  run_ = std::to_string(::getpid()) + "-" + std::to_string(now);
}

Status JsonlSink::write_header() {
  const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  const std::string header =
      "{\"neat_trace\":1,\"run\":\"" + run_ + "\",\"part\":" + std::to_string(part_) +
      ",\"pid\":" + std::to_string(::getpid()) + ",\"ts_ns\":" + std::to_string(now) + "}\n";
  NEAT_RETURN_IF_ERROR(write_all(header.data(), header.size()));
  header_bytes_ = static_cast<std::int64_t>(header.size());
  return {};
}

Status JsonlSink::write_all(const char* data, std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(fd_, data + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      return resource_exhausted("JsonlSink: writing '" + path_ +
                                "' failed: " + std::strerror(w < 0 ? errno : ENOSPC));
    }
    done += static_cast<std::size_t>(w);
  }
  file_bytes_ += static_cast<std::int64_t>(n);
  return {};
}

Status JsonlSink::rotate() {
  const auto name = [&](int i) { return i == 0 ? path_ : path_ + "." + std::to_string(i); };
  ::close(fd_);
  fd_ = -1;
  if (options_.keep == 0) {
    ::unlink(path_.c_str());
  } else {
    ::unlink(name(options_.keep).c_str());
    for (int i = options_.keep - 1; i >= 0; --i)
      ::rename(name(i).c_str(), name(i + 1).c_str());  // a missing one is fine
  }
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_TRUNC, 0644);
  if (fd_ < 0) {
    return failed_precondition("JsonlSink: cannot reopen '" + path_ +
                               "' after rotating it: " + std::strerror(errno));
  }
  file_bytes_ = 0;
  ++part_;
  rotations_.fetch_add(1, std::memory_order_relaxed);
  return write_header();
}

JsonlSink::~JsonlSink() {
  (void)flush();
  if (fd_ >= 0) ::close(fd_);
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

void JsonlSink::on_frame(const FrameEvent& e) noexcept {
  try {
    std::lock_guard lock(mutex_);
    std::string& l = frame_line_;  // keeps its capacity: no allocation once warm
    l.clear();
    append_frame_json(l, e);
    l += '\n';
    if (used_ + l.size() > kCapacity) (void)write_locked();
    const std::size_t n = std::min(l.size(), kCapacity);
    std::memcpy(buffer_.get() + used_, l.data(), n);
    used_ += n;
    ++buffered_events_;
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
  Status st;
  if (fd_ < 0) {
    st = failed_precondition("JsonlSink: '" + path_ + "' is not open (a rotation failed)");
  } else if (options_.max_bytes == 0) {
    st = write_all(buffer_.get(), used_);
  } else {
    // Whole lines into the current file while they fit, then rotate.
    const char* p = buffer_.get();
    const char* end = p + used_;
    while (st.ok() && p < end) {
      const std::int64_t room = options_.max_bytes - file_bytes_;
      if (end - p <= room) {
        st = write_all(p, static_cast<std::size_t>(end - p));
        break;
      }
      // The last newline that still fits.
      const char* cut = nullptr;
      if (room > 0) {
        for (const char* q = p + room - 1; q >= p; --q) {
          if (*q == '\n') {
            cut = q + 1;
            break;
          }
        }
      }
      if (cut == nullptr && file_bytes_ <= header_bytes_) {
        // A fresh file and a line longer than max_bytes: it goes in whole.
        cut = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
        cut = cut ? cut + 1 : end;
      }
      if (cut != nullptr) {
        st = write_all(p, static_cast<std::size_t>(cut - p));
        p = cut;
      }
      if (st.ok() && p < end) st = rotate();
    }
  }
  if (!st.ok()) lost_.fetch_add(buffered_events_, std::memory_order_relaxed);
  used_ = 0;
  buffered_events_ = 0;
  return st;
}

}  // namespace neat
