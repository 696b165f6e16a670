#include "neat/stages/source.hpp"

#include <cstring>

#include "neat/contract/mapping.hpp"
#include "neat/storage/heap.hpp"

namespace neat {
namespace {

class SyntheticSource final : public Source {
 public:
  SyntheticSource(FrameSpec spec, std::int64_t frames)
      : spec_(std::move(spec)), frames_(frames), pool_(HeapPool::create()) {}
  std::string_view kind() const noexcept override { return "synthetic"; }
  Result<FrameSpec> prepare() override {
    if (frames_ < 0) return invalid_argument("synthetic source: negative frame count");
    if (spec_.device.type != DeviceType::Cpu) {
      return invalid_argument("synthetic source: frames are generated on the CPU");
    }
    NEAT_ASSIGN_OR_RETURN(NeatTensor probe, make());  // validates the spec once
    spec_ = FrameSpec::of(probe);
    return spec_;
  }
  Result<std::optional<NeatTensor>> next(const std::atomic<bool>&) override {
    if (produced_ >= frames_) return std::optional<NeatTensor>();
    NEAT_ASSIGN_OR_RETURN(NeatTensor t, make());
    NEAT_ASSIGN_OR_RETURN(NeatTensor w, std::move(t).make_writable());
    {
      NEAT_ASSIGN_OR_RETURN(Mapping m, w.map(MapMode::Write));
      std::byte* row =
          w.is_composite() ? m.mutable_plane_data(PlaneRole::Y).value() : m.mutable_data();
      const std::int64_t n =
          w.is_composite() ? w.plane_layout(0).cols : (w.rank() > 0 ? w.strides()[0] : 0);
      for (std::int64_t i = 0; i < n; ++i)
        row[i] = static_cast<std::byte>((produced_ + i) & 0xff);
    }
    ++produced_;
    return std::optional<NeatTensor>(std::move(w));
  }
  std::string describe() const override {
    return "synthetic " + spec_.to_string() + " x" + std::to_string(frames_);
  }

 private:
  Result<NeatTensor> make() {
    if (spec_.is_image()) {
      return NeatTensor::allocate_image(spec_.format, spec_.width, spec_.height,
                                        {.zero_fill = false, .allocator = pool_.get()});
    }
    return NeatTensor::allocate(spec_.dtype, spec_.shape,
                                {.zero_fill = false, .allocator = pool_.get()});
  }
  FrameSpec spec_;
  std::int64_t frames_;
  std::int64_t produced_ = 0;
  std::shared_ptr<HeapPool> pool_;
};

class SharedSource final : public Source {
 public:
  explicit SharedSource(std::shared_ptr<Source> s) : s_(std::move(s)) {}
  std::string_view kind() const noexcept override { return s_->kind(); }
  Result<FrameSpec> prepare() override { return s_->prepare(); }
  Result<std::optional<NeatTensor>> next(const std::atomic<bool>& stop) override {
    return s_->next(stop);
  }
  void close() override { s_->close(); }
  void close_after_plan() override { s_->close_after_plan(); }
  std::string describe() const override { return s_->describe(); }
  std::vector<InnerConversion> inner_conversions() const override {
    return s_->inner_conversions();
  }
  int frames_held_inside() const override { return s_->frames_held_inside(); }
  std::string frames_held_inside_text() const override { return s_->frames_held_inside_text(); }

 private:
  std::shared_ptr<Source> s_;
};

}  // namespace

std::unique_ptr<Source> synthetic_source(FrameSpec spec, std::int64_t frames) {
  return std::make_unique<SyntheticSource>(std::move(spec), frames);
}

std::unique_ptr<Source> shared_source(std::shared_ptr<Source> source) {
  return std::make_unique<SharedSource>(std::move(source));
}

std::shared_ptr<PushSource> PushSource::create(FrameSpec spec, std::size_t capacity) {
  return std::make_shared<PushSource>(std::move(spec), capacity);
}

PushSource::PushSource(FrameSpec spec, std::size_t capacity)
    : spec_(std::move(spec)), queue_(capacity) {}

Status PushSource::push(NeatTensor frame, std::chrono::milliseconds timeout) {
  FrameSpec got = FrameSpec::of(frame);
  got.contiguous = spec_.contiguous;  // strides may differ; the format may not
  if (got.dtype != spec_.dtype || got.format != spec_.format || got.shape != spec_.shape ||
      got.device != spec_.device || got.width != spec_.width || got.height != spec_.height) {
    return invalid_argument("push source: the frame is " + FrameSpec::of(frame).to_string() +
                            ", the source was declared as " + spec_.to_string());
  }
  if (queue_.closed()) return failed_precondition("push source: end_of_stream() was called");
  if (queue_.aborted()) return failed_precondition("push source: the graph has stopped");
  switch (queue_.push_for(frame, timeout)) {
    case BoundedQueue<NeatTensor>::PushResult::Pushed:
      return {};
    case BoundedQueue<NeatTensor>::PushResult::Closed:
      return failed_precondition("push source: end_of_stream() was called");
    case BoundedQueue<NeatTensor>::PushResult::Aborted:
      return failed_precondition("push source: the graph has stopped");
    case BoundedQueue<NeatTensor>::PushResult::Timeout:
      break;
  }
  return resource_exhausted("push source: the graph did not take the frame within " +
                            std::to_string(timeout.count()) + " ms (it is behind)");
}

void PushSource::end_of_stream() {
  queue_.close();
}

Result<std::optional<NeatTensor>> PushSource::next(const std::atomic<bool>& stop) {
  NeatTensor t;
  for (;;) {
    switch (queue_.pop(t, std::chrono::milliseconds(50))) {
      case BoundedQueue<NeatTensor>::PopResult::Popped:
        return std::optional<NeatTensor>(std::move(t));
      case BoundedQueue<NeatTensor>::PopResult::Closed:
      case BoundedQueue<NeatTensor>::PopResult::Aborted:
        return std::optional<NeatTensor>();
      case BoundedQueue<NeatTensor>::PopResult::Timeout:
        if (stop.load()) return std::optional<NeatTensor>();
        break;
    }
  }
}

void PushSource::close() {
  (void)queue_.abort();
}

}  // namespace neat
