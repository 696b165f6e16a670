// The message sinks' spool on disk (spool-dir=): messages past the memory
// spool wait in segment files, oldest first, up to a byte cap; messages a
// run could not deliver are left there and the next run with the same
// directory delivers them first.
//
// Layout: DIR/<20-digit sequence>.spool, each a run of records (three
// little-endian u32 lengths: topic, key, payload; then their bytes). A
// segment is deleted once every message read from it was acknowledged; a
// record cut short by a crash is cut off when the directory is opened.
// Over the cap, the oldest segment not being read is dropped (its messages
// counted); when none can go, the new message is.
//
// Threading: not thread-safe; the message sink calls it under its lock.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "neat/contract/error.hpp"

namespace neat {

struct SpoolRecord {
  std::string topic, key, payload;
};

class DiskSpool {
 public:
  /// Opens (creates) `dir` and reads what an earlier run left there.
  static Result<std::unique_ptr<DiskSpool>> open(const std::string& dir, std::uint64_t max_bytes);
  ~DiskSpool();

  bool empty() const noexcept { return unread_ == 0; }
  std::uint64_t unread() const noexcept { return unread_; }  ///< messages not read yet
  std::uint64_t bytes() const noexcept { return bytes_; }
  /// Messages found at open (left by an earlier run).
  std::uint64_t recovered() const noexcept { return recovered_; }

  /// Appends at the end (the newest); returns the messages dropped to keep
  /// the cap (this one included when nothing older could go).
  Result<std::uint64_t> append(const SpoolRecord& r);
  /// The oldest message not read yet and its segment (for done()).
  Result<std::optional<std::pair<SpoolRecord, std::uint64_t>>> next();
  /// A message read from `segment` was acknowledged: the segment goes once
  /// all of its messages were read and acknowledged.
  void done(std::uint64_t segment);
  /// Writes `records` before everything else (what a run ends with in memory).
  Status prepend(const std::vector<SpoolRecord>& records);

 private:
  struct Segment {
    std::uint64_t seq = 0;
    std::string path;
    std::uint64_t bytes = 0, count = 0;  // written
    std::uint64_t read = 0, acked = 0;   // messages read from it, acknowledged
    std::uint64_t read_offset = 0;
  };
  explicit DiskSpool(std::string dir, std::uint64_t max_bytes);
  Status scan();
  Status start_segment(std::uint64_t seq);
  void drop(std::deque<Segment>::iterator it);
  std::string path_of(std::uint64_t seq) const;

  std::string dir_;
  std::uint64_t max_bytes_, segment_bytes_;
  std::deque<Segment> segments_;  // oldest first; the last is written to
  std::FILE* writer_ = nullptr;
  std::FILE* reader_ = nullptr;
  std::uint64_t reader_seq_ = 0;
  std::uint64_t unread_ = 0, bytes_ = 0, recovered_ = 0;
};

}  // namespace neat
