#include "neat/stages/internal/disk_spool.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <system_error>

namespace neat {

namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kFirstSequence = std::uint64_t{1} << 62;  // room to prepend before it

std::uint64_t record_bytes(const SpoolRecord& r) {
  return 12 + r.topic.size() + r.key.size() + r.payload.size();
}

bool write_record(std::FILE* f, const SpoolRecord& r) {
  const std::array<std::uint32_t, 3> lengths = {static_cast<std::uint32_t>(r.topic.size()),
                                                static_cast<std::uint32_t>(r.key.size()),
                                                static_cast<std::uint32_t>(r.payload.size())};
  return std::fwrite(lengths.data(), 4, 3, f) == 3 &&
         std::fwrite(r.topic.data(), 1, r.topic.size(), f) == r.topic.size() &&
         std::fwrite(r.key.data(), 1, r.key.size(), f) == r.key.size() &&
         std::fwrite(r.payload.data(), 1, r.payload.size(), f) == r.payload.size();
}

// One record; nullopt at the end or at a record cut short.
std::optional<SpoolRecord> read_record(std::FILE* f) {
  std::array<std::uint32_t, 3> lengths{};
  if (std::fread(lengths.data(), 4, 3, f) != 3) return std::nullopt;
  if (lengths[0] > (1u << 20) || lengths[1] > (1u << 20) || lengths[2] > (1u << 30)) {
    return std::nullopt;  // not a record of ours
  }
  SpoolRecord r;
  r.topic.resize(lengths[0]);
  r.key.resize(lengths[1]);
  r.payload.resize(lengths[2]);
  if (std::fread(r.topic.data(), 1, r.topic.size(), f) != r.topic.size() ||
      std::fread(r.key.data(), 1, r.key.size(), f) != r.key.size() ||
      std::fread(r.payload.data(), 1, r.payload.size(), f) != r.payload.size()) {
    return std::nullopt;
  }
  return r;
}

}  // namespace

DiskSpool::DiskSpool(std::string dir, std::uint64_t max_bytes)
    : dir_(std::move(dir)),
      max_bytes_(max_bytes),
      segment_bytes_(std::max<std::uint64_t>(max_bytes / 8, 1)) {}

DiskSpool::~DiskSpool() {
  if (reader_) std::fclose(reader_);
  if (writer_) std::fclose(writer_);
}

std::string DiskSpool::path_of(std::uint64_t seq) const {
  char name[32];
  std::snprintf(name, sizeof name, "%020llu.spool", static_cast<unsigned long long>(seq));
  return (fs::path(dir_) / name).string();
}

Result<std::unique_ptr<DiskSpool>> DiskSpool::open(const std::string& dir,
                                                   std::uint64_t max_bytes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return os_error("spool-dir=" + dir + ": cannot create it", ec.value());
  std::unique_ptr<DiskSpool> s(new DiskSpool(dir, max_bytes));
  NEAT_RETURN_IF_ERROR(s->scan());
  const std::uint64_t next = s->segments_.empty() ? kFirstSequence : s->segments_.back().seq + 1;
  NEAT_RETURN_IF_ERROR(s->start_segment(next));
  return s;
}

// What an earlier run left: every record counted, a record cut short cut off.
Status DiskSpool::scan() {
  std::vector<std::uint64_t> seqs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() != 26 || name.substr(20) != ".spool") continue;
    std::uint64_t seq = 0;
    auto [p, err] = std::from_chars(name.data(), name.data() + 20, seq);
    if (err == std::errc() && p == name.data() + 20) seqs.push_back(seq);
  }
  if (ec) return os_error("spool-dir=" + dir_ + ": cannot list it", ec.value());
  std::sort(seqs.begin(), seqs.end());
  for (std::uint64_t seq : seqs) {
    Segment s;
    s.seq = seq;
    s.path = path_of(seq);
    std::FILE* f = std::fopen(s.path.c_str(), "rb");
    if (f == nullptr) return os_error("spool-dir: cannot read " + s.path, errno);
    while (auto r = read_record(f)) {
      s.bytes += record_bytes(*r);
      ++s.count;
    }
    std::fclose(f);
    fs::resize_file(s.path, s.bytes, ec);  // a record cut short by a crash goes
    if (s.count == 0) {
      fs::remove(s.path, ec);
      continue;
    }
    unread_ += s.count;
    bytes_ += s.bytes;
    segments_.push_back(std::move(s));
  }
  recovered_ = unread_;
  return {};
}

Status DiskSpool::start_segment(std::uint64_t seq) {
  if (writer_) std::fclose(writer_);
  Segment s;
  s.seq = seq;
  s.path = path_of(seq);
  writer_ = std::fopen(s.path.c_str(), "ab");
  if (writer_ == nullptr) return os_error("spool-dir: cannot write " + s.path, errno);
  segments_.push_back(std::move(s));
  return {};
}

void DiskSpool::drop(std::deque<Segment>::iterator it) {
  if (reader_ && reader_seq_ == it->seq) {
    std::fclose(reader_);
    reader_ = nullptr;
  }
  std::error_code ec;
  fs::remove(it->path, ec);
  bytes_ -= it->bytes;
  unread_ -= it->count - it->read;
  segments_.erase(it);
}

Result<std::uint64_t> DiskSpool::append(const SpoolRecord& r) {
  const std::uint64_t size = record_bytes(r);
  std::uint64_t dropped = 0;
  while (bytes_ + size > max_bytes_) {  // the oldest segment nobody reads or writes goes
    auto it = std::find_if(segments_.begin(), segments_.end() - 1, [&](const Segment& s) {
      return s.read == 0 && !(reader_ && reader_seq_ == s.seq);
    });
    if (it == segments_.end() - 1) return dropped + 1;  // nothing older can go: this one does
    dropped += it->count;
    drop(it);
  }
  if (segments_.back().bytes >= segment_bytes_) {
    NEAT_RETURN_IF_ERROR(start_segment(segments_.back().seq + 1));
  }
  if (!write_record(writer_, r) || std::fflush(writer_) != 0) {
    return os_error("spool-dir: cannot write " + segments_.back().path, errno);
  }
  segments_.back().bytes += size;
  segments_.back().count += 1;
  bytes_ += size;
  ++unread_;
  return dropped;
}

Result<std::optional<std::pair<SpoolRecord, std::uint64_t>>> DiskSpool::next() {
  auto it = std::find_if(segments_.begin(), segments_.end(),
                         [](const Segment& s) { return s.read < s.count; });
  if (it == segments_.end()) return std::optional<std::pair<SpoolRecord, std::uint64_t>>{};
  if (!reader_ || reader_seq_ != it->seq) {
    if (reader_) std::fclose(reader_);
    reader_ = std::fopen(it->path.c_str(), "rb");
    if (reader_ == nullptr) return os_error("spool-dir: cannot read " + it->path, errno);
    reader_seq_ = it->seq;
    std::fseek(reader_, static_cast<long>(it->read_offset), SEEK_SET);
  }
  auto r = read_record(reader_);
  if (!r) return internal_error("spool-dir: " + it->path + " ends before its records do");
  it->read += 1;
  it->read_offset += record_bytes(*r);
  --unread_;
  return std::optional<std::pair<SpoolRecord, std::uint64_t>>{std::pair{std::move(*r), it->seq}};
}

void DiskSpool::done(std::uint64_t segment) {
  auto it = std::find_if(segments_.begin(), segments_.end(),
                         [&](const Segment& s) { return s.seq == segment; });
  if (it == segments_.end()) return;  // dropped meanwhile
  it->acked += 1;
  if (it->acked < it->count || it->read < it->count) return;
  const bool writing = it == segments_.end() - 1;
  const std::uint64_t seq = it->seq;
  drop(it);
  if (writing) {  // everything written was delivered: write on in a fresh file
    std::fclose(writer_);
    writer_ = nullptr;
    std::error_code ec;
    fs::remove(path_of(seq), ec);
    (void)start_segment(seq + 1);
  }
}

Status DiskSpool::prepend(const std::vector<SpoolRecord>& records) {
  if (records.empty()) return {};
  Segment s;
  s.seq = segments_.front().seq - 1;
  s.path = path_of(s.seq);
  std::FILE* f = std::fopen(s.path.c_str(), "wb");
  if (f == nullptr) return os_error("spool-dir: cannot write " + s.path, errno);
  for (const SpoolRecord& r : records) {
    if (!write_record(f, r)) {
      std::fclose(f);
      return os_error("spool-dir: cannot write " + s.path, errno);
    }
    s.bytes += record_bytes(r);
    ++s.count;
  }
  if (std::fclose(f) != 0) return os_error("spool-dir: cannot write " + s.path, errno);
  bytes_ += s.bytes;
  unread_ += s.count;
  segments_.push_front(std::move(s));
  return {};
}

}  // namespace neat
