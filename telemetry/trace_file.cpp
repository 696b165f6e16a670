#include "neat/telemetry/internal/trace_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace neat::detail {

namespace {
constexpr std::size_t kFlushAt = 1 << 20;  // write in 1 MiB chunks
constexpr std::size_t kCapacity = kFlushAt + (64 << 10);
constexpr std::int64_t kMinMaxBytes = 256;
}  // namespace

Result<std::unique_ptr<TraceFile>> TraceFile::open(const std::string& path,
                                                   const TraceFileOptions& options, Hooks hooks,
                                                   std::string_view who) {
  if (options.max_bytes < 0 || (options.max_bytes > 0 && options.max_bytes < kMinMaxBytes)) {
    return invalid_argument(
        std::string(who) + " '" + path + "': max_bytes = " + std::to_string(options.max_bytes) +
        " (0 for no rotation, or at least " + std::to_string(kMinMaxBytes) + " bytes)");
  }
  if (options.keep < 0) {
    return invalid_argument(std::string(who) + " '" + path + "': keep = " +
                            std::to_string(options.keep) + " (rotated files to keep: 0 or more)");
  }
  if (options.flush_interval.count() <= 0) {
    return invalid_argument(std::string(who) + " '" + path + "': flush interval " +
                            std::to_string(options.flush_interval.count()) +
                            " ms (it must be positive)");
  }
  const int fd = ::open(
      path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (options.append ? O_APPEND : O_TRUNC), 0644);
  if (fd < 0) {
    return failed_precondition(std::string(who) + ": cannot open '" + path +
                               "' for writing: " + std::strerror(errno));
  }
  std::unique_ptr<TraceFile> f(
      new TraceFile(fd, path, options, std::move(hooks), std::string(who)));
  if (options.append) {
    struct stat st {};
    if (::fstat(fd, &st) == 0) f->file_bytes_ = st.st_size;
  }
  {
    std::lock_guard lock(f->mutex_);
    const std::string header = f->hooks_.header ? f->hooks_.header(0) : std::string();
    NEAT_RETURN_IF_ERROR(f->write_text(header));
    f->header_bytes_ = static_cast<std::int64_t>(header.size());
  }
  f->thread_ = std::thread([p = f.get()] { p->flusher(); });
  return f;
}

TraceFile::TraceFile(int fd, std::string path, TraceFileOptions options, Hooks hooks,
                     std::string who)
    : fd_(fd),
      path_(std::move(path)),
      options_(options),
      hooks_(std::move(hooks)),
      who_(std::move(who)),
      buffer_(new char[kCapacity]),
      last_write_(std::chrono::steady_clock::now()) {}

TraceFile::~TraceFile() {
  (void)close({});
}

void TraceFile::flusher() {
  std::unique_lock lock(mutex_);
  while (!closing_) {
    wake_.wait_for(lock, options_.flush_interval);
    if (closing_) break;
    // Whatever is buffered, each interval: nothing waits longer than one.
    if (used_ > 0) (void)write_locked();
  }
}

bool TraceFile::is_open() const noexcept {
  return fd_ >= 0;
}

char* TraceFile::reserve_locked(std::size_t n) {
  if (n > kCapacity) return nullptr;
  if (used_ + n > kCapacity) (void)write_locked();
  return buffer_.get() + used_;
}

void TraceFile::commit_locked(const char* end, std::uint64_t records) {
  used_ = static_cast<std::size_t>(end - buffer_.get());
  buffered_records_ += records;
  if (used_ >= kFlushAt) (void)write_locked();
}

void TraceFile::append_locked(std::string_view text, std::uint64_t records) {
  if (char* p = reserve_locked(text.size())) {
    std::memcpy(p, text.data(), text.size());
    commit_locked(p + text.size(), records);
    return;
  }
  // Larger than the buffer (a record of over 1 MiB): what is buffered, then
  // the text on its own (not split by a rotation).
  (void)write_locked();
  if (fd_ < 0 || !write_all(text.data(), text.size()).ok()) count_lost(records);
}

void TraceFile::write_if_idle_locked(std::chrono::nanoseconds idle) {
  if (used_ > 0 && std::chrono::steady_clock::now() - last_write_ >= idle) (void)write_locked();
}

Status TraceFile::flush() {
  std::lock_guard lock(mutex_);
  return write_locked();
}

Status TraceFile::close(std::string_view footer) {
  std::unique_lock lock(mutex_);
  if (closed_) return close_status_;
  closing_ = true;
  wake_.notify_all();
  if (thread_.joinable()) {
    lock.unlock();
    thread_.join();
    lock.lock();
  }
  Status st = write_locked();
  if (st.ok() && fd_ >= 0) st = write_text(std::string(footer));
  if (fd_ >= 0 && ::close(fd_) != 0 && st.ok()) {
    st = resource_exhausted(who_ + ": closing '" + path_ + "' failed: " + std::strerror(errno));
  }
  fd_ = -1;
  closed_ = true;
  close_status_ = st;
  return st;
}

Status TraceFile::write_text(const std::string& text) {
  if (text.empty()) return {};
  if (fd_ < 0) return failed_precondition(who_ + ": '" + path_ + "' is not open");
  return write_all(text.data(), text.size());
}

Status TraceFile::write_all(const char* data, std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(fd_, data + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      return resource_exhausted(who_ + ": writing '" + path_ +
                                "' failed: " + std::strerror(w < 0 ? errno : ENOSPC));
    }
    done += static_cast<std::size_t>(w);
  }
  file_bytes_ += static_cast<std::int64_t>(n);
  return {};
}

Status TraceFile::rotate() {
  if (hooks_.part_footer) NEAT_RETURN_IF_ERROR(write_text(hooks_.part_footer(part_)));
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
    return failed_precondition(who_ + ": cannot reopen '" + path_ +
                               "' after rotating it: " + std::strerror(errno));
  }
  file_bytes_ = 0;
  ++part_;
  rotations_.fetch_add(1, std::memory_order_relaxed);
  const std::string header = hooks_.header ? hooks_.header(part_) : std::string();
  header_bytes_ = static_cast<std::int64_t>(header.size());
  return write_text(header);
}

Status TraceFile::write_locked() {
  last_write_ = std::chrono::steady_clock::now();
  if (used_ == 0) return {};
  Status st;
  if (fd_ < 0) {
    st = failed_precondition(who_ + ": '" + path_ + "' is not open (closed, or a rotation failed)");
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
  if (!st.ok()) count_lost(buffered_records_);
  used_ = 0;
  buffered_records_ = 0;
  return st;
}

}  // namespace neat::detail
