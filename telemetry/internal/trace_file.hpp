// Internal to telemetry (not installed): the file a trace sink streams to,
// shared by JsonlSink and ChromeTraceSink. Lines are buffered in memory and
// written in large chunks; a flusher thread writes what is buffered at least
// every `flush_interval`, so a run that crashes or is killed loses at most
// that much of its trace, and memory stays constant however long the run.
// With max_bytes the file rotates like a log (PATH -> PATH.1 -> ... ->
// PATH.keep, the oldest removed); lines are never split across parts. Every
// part starts with the sink's header text (Hooks::header) and, when it is
// rotated away, ends with Hooks::part_footer; close() writes the final footer.
//
// Threading: every call takes the file's mutex except where it says "_locked"
// (the caller holds lock()). A sink keeps its own encoding state under the same
// mutex, so the hooks (called with it held) can read that state.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "neat/contract/error.hpp"

namespace neat::detail {

struct TraceFileOptions {
  bool append = false;         ///< keep what the file holds
  std::int64_t max_bytes = 0;  ///< rotate before the file grows past this; 0: never
  int keep = 5;                ///< rotated files kept (PATH.1 newest ... PATH.keep)
  /// The longest buffered bytes wait before they are written.
  std::chrono::milliseconds flush_interval = std::chrono::seconds(1);
};

class TraceFile {
 public:
  struct Hooks {
    /// The first lines of part N (0, 1, ...), each ending in '\n'.
    std::function<std::string(int part)> header;
    /// The last lines of a part that is rotated away ("" for none).
    std::function<std::string(int part)> part_footer;
  };

  /// Opens `path` (created, truncated unless options.append) and writes part
  /// 0's header. `who` names the sink in errors ("JsonlSink"). InvalidArgument
  /// for max_bytes below 256 (but not 0) or keep < 0; FailedPrecondition when
  /// the file cannot be opened.
  static Result<std::unique_ptr<TraceFile>> open(const std::string& path,
                                                 const TraceFileOptions& options, Hooks hooks,
                                                 std::string_view who);
  ~TraceFile();  ///< close("") if still open
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mutex_); }

  /// Room for `n` more bytes in the buffer (writing what is buffered first
  /// when needed); nullptr when n exceeds the buffer (append_locked() then).
  char* reserve_locked(std::size_t n);
  /// The bytes up to `end` (from reserve_locked()) hold one more complete line
  /// (or several); `records` counts them for lost_records().
  void commit_locked(const char* end, std::uint64_t records = 1);
  /// Appends `text` (whole lines), of any size.
  void append_locked(std::string_view text, std::uint64_t records = 1);
  /// Writes now when the last write is at least `idle` old: a low-rate
  /// record (a frame at 1 fps) reaches the disk at once.
  void write_if_idle_locked(std::chrono::nanoseconds idle);

  /// Writes what is buffered.
  Status flush();
  /// Writes what is buffered, then `footer`, and closes the file; later
  /// records are counted lost. Idempotent (a second call returns the first's status).
  Status close(std::string_view footer);

  bool is_open() const noexcept;
  const std::string& path() const noexcept { return path_; }
  int part() const noexcept { return part_; }
  std::uint64_t rotations() const noexcept { return rotations_.load(std::memory_order_relaxed); }
  std::uint64_t lost_records() const noexcept { return lost_.load(std::memory_order_relaxed); }
  void count_lost(std::uint64_t n = 1) noexcept { lost_.fetch_add(n, std::memory_order_relaxed); }

 private:
  TraceFile(int fd, std::string path, TraceFileOptions options, Hooks hooks, std::string who);
  Status write_locked();
  Status write_all(const char* data, std::size_t n);
  Status write_text(const std::string& text);
  Status rotate();
  void flusher();

  int fd_;
  std::string path_;
  TraceFileOptions options_;
  Hooks hooks_;
  std::string who_;
  std::int64_t file_bytes_ = 0;
  std::int64_t header_bytes_ = 0;
  int part_ = 0;
  std::atomic<std::uint64_t> rotations_{0};
  std::atomic<std::uint64_t> lost_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool closing_ = false;            // guarded by mutex_
  bool closed_ = false;             // guarded by mutex_
  Status close_status_;             // guarded by mutex_
  std::unique_ptr<char[]> buffer_;  // raw, never zero-filled
  std::size_t used_ = 0;
  std::uint64_t buffered_records_ = 0;
  std::chrono::steady_clock::time_point last_write_;
  std::thread thread_;  // the flusher; last: starts once the rest is set
};

}  // namespace neat::detail
