#include "neat/stages/track.hpp"

#include "neat/telemetry/event_sink.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace neat {

void TrackJournal::post(const TrackRecord& record) {
  if (readers_.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard lock(mutex_);
  if (records_.size() >= capacity_) {
    records_.pop_front();
    dropped_.fetch_add(1, std::memory_order_relaxed);
  } else {
    pending_.fetch_add(1, std::memory_order_release);
  }
  records_.push_back(record);
}

void TrackJournal::take(std::int32_t stream_index, std::int64_t frame,
                        std::vector<TrackRecord>& out) {
  if (pending_.load(std::memory_order_acquire) == 0) return;
  std::lock_guard lock(mutex_);
  for (auto it = records_.begin(); it != records_.end();) {
    if (it->stream.index == stream_index && it->frame <= frame) {
      out.push_back(*it);
      it = records_.erase(it);
      pending_.fetch_sub(1, std::memory_order_relaxed);
    } else {
      ++it;
    }
  }
}

void TrackJournal::take_all(std::vector<TrackRecord>& out) {
  std::lock_guard lock(mutex_);
  out.insert(out.end(), records_.begin(), records_.end());
  records_.clear();
  pending_.store(0, std::memory_order_relaxed);
}

namespace {

class TrackStage final : public Stage {
 public:
  explicit TrackStage(TrackOptions o) : options_(std::move(o)) {}
  std::string_view kind() const noexcept override { return "track"; }
  Accepts accepts() const override {
    Accepts a;
    a.dtypes = {DType::F32};
    a.formats = {PixelFormat::None};
    return a;
  }
  Result<FrameSpec> output_spec(const FrameSpec& in) const override {
    if (in.shape.size() != 2 || in.shape[1] != 6) {
      return invalid_argument(
          "track: takes detections f32 [N, 6] (x1, y1, x2, y2, score, class), "
          "got " +
          in.to_string() + " (put `yolo` before `track`)");
    }
    FrameSpec out = in;
    out.shape = Dims{in.shape[0], 7};  // at most; M rows per frame
    out.contiguous = true;
    return out;
  }
  Status prepare(const FrameSpec& in, const FrameSpec&) override {
    max_rows_ = in.shape[0];
    rows_.reserve(static_cast<std::size_t>(max_rows_) * 6);
    return {};
  }
  bool may_forward_input(const FrameSpec&) const override { return false; }

  Result<NeatTensor> process(NeatTensor frame, StageContext& ctx) override {
    if (frame.dtype() != DType::F32 || frame.rank() != 2 || frame.shape()[1] != 6) {
      return invalid_argument("track: frame " + std::to_string(ctx.frame) + " is " +
                              frame.to_string() + ", not detections f32 [N, 6]");
    }
    const std::int64_t n = frame.shape()[0];
    if (n > max_rows_) {
      return invalid_argument("track: frame " + std::to_string(ctx.frame) + " has " +
                              std::to_string(n) + " detections, more than the " +
                              std::to_string(max_rows_) + " its input edge declared");
    }
    NEAT_RETURN_IF_ERROR(read_rows(frame, n));
    const FrameMeta& meta = frame.meta();
    Stream& s = stream(meta.stream);
    changes_.clear();
    if (s.session != meta.stream.session) {  // the graph restarted the source: start over
      s.tracker.reset(changes_);
      s.session = meta.stream.session;
    }
    NEAT_ASSIGN_OR_RETURN(
        NeatTensor out, NeatTensor::allocate(DType::F32, {std::max<std::int64_t>(max_rows_, 1), 7},
                                             AllocOptions{false, ctx.allocator}));
    NEAT_ASSIGN_OR_RETURN(out, std::move(out).make_writable());
    std::size_t m = 0;
    {
      NEAT_ASSIGN_OR_RETURN(Mapping w, out.map(MapMode::Write));
      auto* dst = reinterpret_cast<float*>(w.mutable_data());
      m = s.tracker.update(rows_, meta.frame,
                           std::span<float>(dst, static_cast<std::size_t>(max_rows_) * 7),
                           changes_);
    }
    for (const TrackChange& c : changes_) {
      if (options_.journal) {
        options_.journal->post(
            TrackRecord{meta.stream, meta.frame, meta.pts_ns, meta.capture_ns, c});
      }
      if (event_sink_count() > 0) emit(c, meta, ctx);  // a trace is written: it has the track
    }
    NEAT_ASSIGN_OR_RETURN(NeatTensor result, out.narrow(0, 0, static_cast<std::int64_t>(m)));
    result.set_meta(meta);
    return result;
  }

  std::string describe() const override {
    const TrackerParams& p = options_.tracker;
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "track high=%.2f low=%.2f new=%.2f iou=%.2f max-age=%d min-hits=%d%s -> f32 "
                  "[M, 7] + track id, one tracker per stream",
                  p.high, p.low, p.new_track, p.match_iou, p.max_age, p.min_hits,
                  p.per_class ? "" : " any-class");
    return buf;
  }

 private:
  struct Stream {
    ByteTracker tracker;
    std::int32_t session = 0;
  };

  Stream& stream(const StreamId& id) {
    const auto i = static_cast<std::size_t>(std::max(id.index, 0));
    while (streams_.size() <= i)  // a stream seen for the first time
      streams_.push_back(
          std::make_unique<Stream>(Stream{ByteTracker(options_.tracker), id.session}));
    return *streams_[i];
  }

  static void emit(const TrackChange& c, const FrameMeta& meta, const StageContext& ctx) {
    OutputEvent e;
    e.type = "track";
    e.event = c.kind == TrackChange::Kind::Start ? "start" : "end";
    e.graph = ctx.graph;
    e.node = ctx.stage;
    e.stream = meta.stream.name;
    e.frame = meta.frame;
    e.id = c.id;
    e.timestamp_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    e.thread_id = current_thread_number();
    emit_output_event(e);
  }

  // The detections as packed rows, whatever the input's strides.
  Status read_rows(const NeatTensor& frame, std::int64_t n) {
    rows_.resize(static_cast<std::size_t>(n) * 6);
    if (n == 0) return {};
    NEAT_ASSIGN_OR_RETURN(Mapping r, frame.map(MapMode::Read));
    const auto* base = static_cast<const std::byte*>(r.data());
    const std::int64_t rs = frame.strides()[0], cs = frame.strides()[1];
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t k = 0; k < 6; ++k)
        std::memcpy(&rows_[static_cast<std::size_t>(i * 6 + k)], base + i * rs + k * cs, 4);
    return {};
  }

  TrackOptions options_;
  std::int64_t max_rows_ = 0;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<float> rows_;
  std::vector<TrackChange> changes_;
};

Status check(const TrackerParams& p) {
  auto unit = [](float v) { return v >= 0 && v <= 1; };
  if (!unit(p.high) || !unit(p.low) || !unit(p.new_track) || !unit(p.match_iou) ||
      !unit(p.low_match_iou) || !unit(p.tentative_iou)) {
    return invalid_argument("track: scores and IoU thresholds are from 0 to 1");
  }
  if (p.low > p.high) {
    return invalid_argument("track: low=" + std::to_string(p.low) + " is above high=" +
                            std::to_string(p.high) + " (weak detections score below high)");
  }
  if (p.max_age < 1 || p.max_age > 100000)
    return invalid_argument("track: max-age is from 1 to 100000 frames");
  if (p.min_hits < 1 || p.min_hits > 1000)
    return invalid_argument("track: min-hits is from 1 to 1000 frames");
  return {};
}

}  // namespace

Result<std::unique_ptr<Stage>> track_stage(TrackOptions options) {
  NEAT_RETURN_IF_ERROR(check(options.tracker));
  return std::unique_ptr<Stage>(std::make_unique<TrackStage>(std::move(options)));
}

}  // namespace neat
