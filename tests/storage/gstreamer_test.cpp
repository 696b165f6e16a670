// GStreamer backend: real pipelines (videotestsrc, appsink, appsrc,
// videoconvert, jpegenc/matroskamux round trip through a file), zero-copy
// checked by pointer identity, layouts checked against GStreamer's own
// GstVideoFrame.
#include "neat/storage/gstreamer.hpp"

#include <gst/allocators/allocators.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "neat/contract/mapping.hpp"
#include "neat/storage/dmabuf.hpp"
#include "neat/storage/fd.hpp"
#include "support/fakes.hpp"
#include "support/fds.hpp"

namespace neat {
namespace {

class GstTest : public ::testing::Test {
 protected:
  void SetUp() override { NEAT_ASSERT_OK(ensure_gstreamer()); }
};

// Owns a parsed pipeline with an appsink named "sink" (and maybe an appsrc "src").
struct Pipeline {
  GstElement* pipeline = nullptr;
  explicit Pipeline(const std::string& description) {
    GError* err = nullptr;
    pipeline = gst_parse_launch(description.c_str(), &err);
    if (err != nullptr) {
      ADD_FAILURE() << "gst_parse_launch: " << err->message;
      g_error_free(err);
    }
  }
  ~Pipeline() {
    if (pipeline != nullptr) {
      gst_element_set_state(pipeline, GST_STATE_NULL);
      gst_object_unref(pipeline);
    }
  }
  GstElement* element(const char* name) const {
    GstElement* e = gst_bin_get_by_name(GST_BIN(pipeline), name);
    gst_object_unref(e);  // the bin keeps it alive
    return e;
  }
  GstAppSink* sink() const { return GST_APP_SINK(element("sink")); }
  GstAppSrc* src() const { return GST_APP_SRC(element("src")); }
  void play() {
    ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  }
  GstSample* pull(GstClockTime timeout = 10 * GST_SECOND) {
    return gst_app_sink_try_pull_sample(sink(), timeout);
  }
  // Waits for EOS or an error on the bus; returns the error text or "".
  std::string wait_eos() {
    GstBus* bus = gst_element_get_bus(pipeline);
    GstMessage* msg = gst_bus_timed_pop_filtered(
        bus, 30 * GST_SECOND, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
    std::string out;
    if (msg == nullptr) {
      out = "timeout";
    } else if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
      GError* err = nullptr;
      gst_message_parse_error(msg, &err, nullptr);
      out = err->message;
      g_error_free(err);
    }
    if (msg != nullptr) gst_message_unref(msg);
    gst_object_unref(bus);
    return out;
  }
};

struct SampleRef {
  GstSample* s;
  ~SampleRef() {
    if (s != nullptr) gst_sample_unref(s);
  }
};

// Compares every plane of a wrapped tensor with GStreamer's own view of the
// frame (GstVideoFrame): same addresses, strides and bytes.
void expect_same_frame(const NeatTensor& t, GstSample* sample) {
  GstVideoInfo info;
  ASSERT_TRUE(gst_video_info_from_caps(&info, gst_sample_get_caps(sample)));
  GstVideoFrame frame;
  ASSERT_TRUE(gst_video_frame_map(&frame, &info, gst_sample_get_buffer(sample), GST_MAP_READ));
  auto m = t.map();
  NEAT_ASSERT_OK(m);
  ASSERT_EQ(t.plane_count(), static_cast<int>(GST_VIDEO_FRAME_N_PLANES(&frame)));
  for (int i = 0; i < t.plane_count(); ++i) {
    const PlaneLayout& p = t.plane_layout(i);
    auto ptr = m->plane_data(p.role);
    NEAT_ASSERT_OK(ptr);
    EXPECT_EQ(static_cast<const void*>(*ptr), GST_VIDEO_FRAME_PLANE_DATA(&frame, i))
        << "plane " << i;
    EXPECT_EQ(p.row_stride, GST_VIDEO_FRAME_PLANE_STRIDE(&frame, i)) << "plane " << i;
    EXPECT_EQ(p.cols * p.samples, GST_VIDEO_FRAME_COMP_WIDTH(&frame, i) *
                                      (p.samples))  // U/V planes: one sample; UV: two per column
        << "plane " << i;
  }
  gst_video_frame_unmap(&frame);
}

TEST_F(GstTest, WrapsAppsinkSampleWithoutCopyNv12) {
  Pipeline p(
      "videotestsrc num-buffers=3 pattern=ball ! video/x-raw,format=NV12,width=640,height=480 "
      "! appsink name=sink sync=false");
  p.play();
  SampleRef s{p.pull()};
  ASSERT_NE(s.s, nullptr);
  const auto before = gst_storage_stats();
  auto t = wrap_gst_sample(s.s);
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(t->pixel_format(), PixelFormat::NV12);
  EXPECT_EQ(t->storage_kind(), StorageKind::GStreamer);
  ASSERT_EQ(t->plane_count(), 2);
  EXPECT_EQ(t->plane_layout(0).role, PlaneRole::Y);
  EXPECT_EQ(t->plane_layout(1).role, PlaneRole::UV);
  EXPECT_TRUE(t->storage()->read_only()) << "buffers pulled from appsink are never writable";
  EXPECT_FALSE(t->can_donate());
  // Deferred: wrapping maps nothing.
  EXPECT_EQ(gst_storage_stats().live_maps, before.live_maps);
  expect_same_frame(*t, s.s);
  {
    auto m1 = t->map();
    auto m2 = t->plane(PlaneRole::UV)->map();
    NEAT_ASSERT_OK(m1);
    NEAT_ASSERT_OK(m2);
    EXPECT_EQ(gst_storage_stats().live_maps, before.live_maps + 1) << "one GstMemory, mapped once";
  }
  EXPECT_EQ(gst_storage_stats().live_maps, before.live_maps) << "unmapped with the last mapping";
  NEAT_EXPECT_ERROR(t->map(MapMode::Write), ErrorCode::FailedPrecondition, "");
}

TEST_F(GstTest, TensorKeepsTheBufferAliveAfterTheSampleGoes) {
  Pipeline p(
      "videotestsrc num-buffers=1 ! video/x-raw,format=RGB,width=33,height=17 ! appsink name=sink");
  p.play();
  GstSample* sample = p.pull();
  ASSERT_NE(sample, nullptr);
  GstBuffer* buffer = gst_sample_get_buffer(sample);
  GstMapInfo info;
  ASSERT_TRUE(gst_buffer_map(buffer, &info, GST_MAP_READ));
  std::vector<std::uint8_t> expected(info.data, info.data + info.size);
  gst_buffer_unmap(buffer, &info);
  auto t = wrap_gst_sample(sample);
  NEAT_ASSERT_OK(t);
  gst_sample_unref(sample);
  p.~Pipeline();
  p.pipeline = nullptr;
  auto view = t->narrow(0, 5, 3);  // a view outlives the tensor too
  NEAT_ASSERT_OK(view);
  *t = NeatTensor();
  auto m = view->map();
  NEAT_ASSERT_OK(m);
  EXPECT_EQ(view->shape(), (Dims{3, 33, 3}));
  const std::int64_t stride = view->strides()[0];
  EXPECT_EQ(stride, 100) << "RGB rows of 99 bytes are padded to 4 in GStreamer";
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(std::memcmp(m->data() + r * stride, expected.data() + (5 + r) * stride, 99), 0);
  }
}

TEST_F(GstTest, OddWidthI420PaddedStridesComeThroughWithTheirLayout) {
  Pipeline p(
      "videotestsrc num-buffers=2 pattern=smpte ! video/x-raw,format=I420,width=1918,height=1081 "
      "! appsink name=sink");
  p.play();
  SampleRef s{p.pull()};
  ASSERT_NE(s.s, nullptr);
  auto t = wrap_gst_sample(s.s);
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(t->image().width, 1918);
  EXPECT_EQ(t->image().height, 1081);
  ASSERT_EQ(t->plane_count(), 3);
  EXPECT_EQ(t->plane_layout(0).row_stride, 1920);  // GStreamer rounds I420 strides to 4
  EXPECT_EQ(t->plane_layout(1).role, PlaneRole::U);
  EXPECT_EQ(t->plane_layout(1).row_stride, 960);
  EXPECT_EQ(t->plane_layout(1).rows, 541);
  EXPECT_EQ(t->plane_layout(1).cols, 959);
  EXPECT_EQ(t->plane_layout(2).role, PlaneRole::V);
  expect_same_frame(*t, s.s);
}

TEST_F(GstTest, Yv12PlanesAreRoleTaggedInGstreamerOrder) {
  Pipeline p(
      "videotestsrc num-buffers=1 ! video/x-raw,format=YV12,width=64,height=48 ! appsink "
      "name=sink");
  p.play();
  SampleRef s{p.pull()};
  ASSERT_NE(s.s, nullptr);
  auto t = wrap_gst_sample(s.s);
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(t->plane_layout(1).role, PlaneRole::V);
  EXPECT_EQ(t->plane_layout(2).role, PlaneRole::U);
  expect_same_frame(*t, s.s);
}

// A buffer whose GstVideoMeta disagrees with the caps' default layout: the meta wins.
TEST_F(GstTest, VideoMetaOverridesCapsLayout) {
  GstVideoInfo info;
  ASSERT_TRUE(gst_video_info_set_format(&info, GST_VIDEO_FORMAT_NV12, 100, 50));
  gsize offsets[GST_VIDEO_MAX_PLANES] = {64, 64 + 128 * 50 + 256};
  gint strides[GST_VIDEO_MAX_PLANES] = {128, 192};
  const gsize size = offsets[1] + 192 * 25;
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, size, nullptr);
  gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_NV12, 100, 50,
                                 2, offsets, strides);
  auto t = wrap_gst_buffer(buffer, info, GstTransfer::Full);
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(t->plane_layout(0).row_stride, 128);
  EXPECT_EQ(t->plane_layout(0).byte_offset, 64);
  EXPECT_EQ(t->plane_layout(1).row_stride, 192);
  EXPECT_EQ(t->plane_layout(1).byte_offset, static_cast<std::int64_t>(offsets[1]));
  EXPECT_TRUE(t->can_donate()) << "a writable buffer handed over can be written in place";
}

TEST_F(GstTest, CapsLayoutWhenThereIsNoMeta) {
  GstVideoInfo info;
  ASSERT_TRUE(gst_video_info_set_format(&info, GST_VIDEO_FORMAT_I420, 37, 21));
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  auto t = wrap_gst_buffer(buffer, info);  // borrowed: the tensor takes its own ref
  gst_buffer_unref(buffer);
  NEAT_ASSERT_OK(t);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(t->plane_layout(i).row_stride, GST_VIDEO_INFO_PLANE_STRIDE(&info, i));
    EXPECT_EQ(t->plane_layout(i).byte_offset,
              static_cast<std::int64_t>(GST_VIDEO_INFO_PLANE_OFFSET(&info, i)));
  }
  EXPECT_FALSE(t->can_donate()) << "a borrowed buffer is shared: read-only";
  EXPECT_TRUE(t->storage()->read_only());
}

TEST_F(GstTest, HandedOverWritableBufferDonatesWithoutCopy) {
  GstVideoInfo info;
  ASSERT_TRUE(gst_video_info_set_format(&info, GST_VIDEO_FORMAT_GRAY8, 64, 8));
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  auto t = wrap_gst_buffer(buffer, info, GstTransfer::Full);
  NEAT_ASSERT_OK(t);
  const void* before = t->map()->data();
  ASSERT_TRUE(t->can_donate());
  auto w = std::move(*t).make_writable();
  NEAT_ASSERT_OK(w);
  auto m = w->map(MapMode::Write);
  NEAT_ASSERT_OK(m);
  EXPECT_EQ(static_cast<const void*>(m->data()), before);
  std::memset(m->mutable_data(), 7, 64);
}

TEST_F(GstTest, MultiMemoryBuffersMapEachMemory) {
  // Y and UV in separate GstMemory blocks, as some decoders produce them.
  GstVideoInfo info;
  ASSERT_TRUE(gst_video_info_set_format(&info, GST_VIDEO_FORMAT_NV12, 16, 8));
  GstBuffer* buffer = gst_buffer_new();
  gst_buffer_append_memory(buffer, gst_allocator_alloc(nullptr, 16 * 8, nullptr));
  gst_buffer_append_memory(buffer, gst_allocator_alloc(nullptr, 16 * 4, nullptr));
  gsize offsets[GST_VIDEO_MAX_PLANES] = {0, 16 * 8};
  gint strides[GST_VIDEO_MAX_PLANES] = {16, 16};
  gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_NV12, 16, 8, 2,
                                 offsets, strides);
  auto t = wrap_gst_buffer(buffer, info, GstTransfer::Full);
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(t->storage_count(), 2);
  const auto before = gst_storage_stats().live_maps;
  {
    auto m = t->map();
    NEAT_ASSERT_OK(m);
    EXPECT_EQ(gst_storage_stats().live_maps, before + 2);
  }
  EXPECT_EQ(gst_storage_stats().live_maps, before);
}

// fd-backed GstMemory (dmabuf / fd allocators) keeps its fd visible: the
// wrapped frame can be exported to a device or another process.
TEST_F(GstTest, FdMemoryFramesExportTheirFd) {
  GstVideoInfo info;
  ASSERT_TRUE(gst_video_info_set_format(&info, GST_VIDEO_FORMAT_NV12, 64, 32));
  const int fd = testing::make_memfd(static_cast<std::int64_t>(GST_VIDEO_INFO_SIZE(&info)));
  GstAllocator* allocator = gst_fd_allocator_new();
  GstMemory* mem = gst_fd_allocator_alloc(allocator, fd, GST_VIDEO_INFO_SIZE(&info),
                                          GST_FD_MEMORY_FLAG_NONE);  // takes fd
  GstBuffer* buffer = gst_buffer_new();
  gst_buffer_append_memory(buffer, mem);
  auto t = wrap_gst_buffer(buffer, info, GstTransfer::Full);
  NEAT_ASSERT_OK(t);
  EXPECT_EQ(t->storage()->native_fd(), fd);
  auto e = export_dmabuf_image(*t);
  NEAT_ASSERT_OK(e);
  EXPECT_EQ(e->image.planes[1].offset,
            static_cast<std::int64_t>(GST_VIDEO_INFO_PLANE_OFFSET(&info, 1)));
  auto again = wrap_dmabuf_image(e->image);
  NEAT_ASSERT_OK(again);
  auto id = fd_identity(fd);
  NEAT_ASSERT_OK(id);
  EXPECT_EQ(again->identity().id(), fd_buffer_id(*id));
  gst_object_unref(allocator);
}

TEST_F(GstTest, AppsrcReceivesTensorBytesWithoutCopy) {
  auto t = NeatTensor::allocate_image(PixelFormat::NV12, 320, 240, {.row_alignment = 64});
  NEAT_ASSERT_OK(t);
  t = std::move(*t).make_writable();
  NEAT_ASSERT_OK(t);
  {
    auto m = t->map(MapMode::Write);
    NEAT_ASSERT_OK(m);
    std::memset(*m->mutable_plane_data(PlaneRole::Y), 0x42, 64);
  }
  const void* y = *t->map()->plane_data(PlaneRole::Y);
  const void* uv = *t->map()->plane_data(PlaneRole::UV);
  auto caps = gst_caps_for(t->image(), 30, 1);
  NEAT_ASSERT_OK(caps);
  // videoconvert with identical caps is passthrough: the buffer reaches the sink untouched.
  Pipeline p("appsrc name=src format=time ! videoconvert ! appsink name=sink");
  g_object_set(p.src(), "caps", *caps, nullptr);
  gst_caps_unref(*caps);
  p.play();
  auto buffer = export_gst_buffer(*t);  // the tensor stays ours: read-only memory
  NEAT_ASSERT_OK(buffer);
  EXPECT_TRUE(GST_MEMORY_IS_READONLY(gst_buffer_peek_memory(*buffer, 0)));
  ASSERT_EQ(gst_app_src_push_buffer(p.src(), *buffer), GST_FLOW_OK);
  gst_app_src_end_of_stream(p.src());
  SampleRef s{p.pull()};
  ASSERT_NE(s.s, nullptr);
  auto back = wrap_gst_sample(s.s);
  NEAT_ASSERT_OK(back);
  auto m = back->map();
  NEAT_ASSERT_OK(m);
  EXPECT_EQ(static_cast<const void*>(*m->plane_data(PlaneRole::Y)), y);
  EXPECT_EQ(static_cast<const void*>(*m->plane_data(PlaneRole::UV)), uv);
  EXPECT_EQ(back->plane_layout(0).row_stride, t->plane_layout(0).row_stride);
  EXPECT_EQ(std::to_integer<int>((*m->plane_data(PlaneRole::Y))[10]), 0x42);
}

TEST_F(GstTest, ExportedMemoryReleasesTheTensorWhenGstreamerIsDone) {
  const auto before = gst_storage_stats().live_exports;
  auto t = NeatTensor::allocate_image(PixelFormat::RGB, 8, 4);
  NEAT_ASSERT_OK(t);
  std::weak_ptr<Storage> weak = t->storage();
  auto buffer = export_gst_buffer(std::move(*t));  // moved in and held alone: donated, writable
  NEAT_ASSERT_OK(buffer);
  EXPECT_FALSE(GST_MEMORY_IS_READONLY(gst_buffer_peek_memory(*buffer, 0)));
  GstVideoMeta* meta = gst_buffer_get_video_meta(*buffer);
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->stride[0], 24);
  EXPECT_EQ(gst_storage_stats().live_exports, before + 1);
  EXPECT_FALSE(weak.expired());
  gst_buffer_unref(*buffer);
  EXPECT_TRUE(weak.expired()) << "the destroy notify released the storage";
  EXPECT_EQ(gst_storage_stats().live_exports, before);
}

TEST_F(GstTest, ToGstBufferRefusesLayoutsGstreamerCannotDescribe) {
  auto t = NeatTensor::allocate_image(PixelFormat::RGB, 8, 4);
  NEAT_ASSERT_OK(t);
  auto flipped = t->transpose(0, 1);
  NEAT_ASSERT_OK(flipped);
  NEAT_EXPECT_ERROR(export_gst_buffer(*flipped), ErrorCode::FailedPrecondition, "contiguous()");
  auto dense = NeatTensor::allocate(DType::F32, Dims{4, 4});
  NEAT_ASSERT_OK(dense);
  auto strided = dense->slice(1, 0, 4, 2);
  NEAT_ASSERT_OK(strided);
  NEAT_EXPECT_ERROR(export_gst_buffer(*strided), ErrorCode::FailedPrecondition, "contiguous()");
  NEAT_EXPECT_ERROR(export_gst_buffer(NeatTensor()), ErrorCode::FailedPrecondition, "undefined");
  auto ok = export_gst_buffer(*dense);  // dense and contiguous: plain memory, no meta
  NEAT_ASSERT_OK(ok);
  EXPECT_EQ(gst_buffer_get_size(*ok), 64u);
  EXPECT_EQ(gst_buffer_get_video_meta(*ok), nullptr);
  gst_buffer_unref(*ok);
}

TEST_F(GstTest, BadInputsGetTypedErrors) {
  GstVideoInfo info;
  gst_video_info_init(&info);
  NEAT_EXPECT_ERROR(wrap_gst_buffer(nullptr, info), ErrorCode::InvalidArgument, "not a GstBuffer");
  NEAT_EXPECT_ERROR(wrap_gst_sample(nullptr), ErrorCode::InvalidArgument, "not a GstSample");
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, 100, nullptr);
  NEAT_EXPECT_ERROR(wrap_gst_buffer(buffer, static_cast<const GstCaps*>(nullptr)),
                    ErrorCode::InvalidArgument, "no caps");
  GstCaps* audio = gst_caps_from_string("audio/x-raw,format=S16LE,rate=48000,channels=2");
  NEAT_EXPECT_ERROR(wrap_gst_buffer(buffer, audio), ErrorCode::InvalidArgument,
                    "not fixed raw video caps");
  gst_caps_unref(audio);
  NEAT_EXPECT_ERROR(wrap_gst_buffer(buffer, info), ErrorCode::InvalidArgument, "no raw format");
  GstVideoInfo yuy2;
  ASSERT_TRUE(gst_video_info_set_format(&yuy2, GST_VIDEO_FORMAT_YUY2, 10, 10));
  NEAT_EXPECT_ERROR(wrap_gst_buffer(buffer, yuy2), ErrorCode::Unimplemented, "videoconvert");
  GstVideoInfo big;
  ASSERT_TRUE(gst_video_info_set_format(&big, GST_VIDEO_FORMAT_RGB, 64, 64));
  NEAT_EXPECT_ERROR(wrap_gst_buffer(buffer, big), ErrorCode::OutOfRange, "lies outside the buffer");
  EXPECT_EQ(GST_MINI_OBJECT_REFCOUNT_VALUE(buffer), 1) << "failed wraps give their reference back";
  gst_buffer_unref(buffer);
  GstSample* empty = gst_sample_new(nullptr, nullptr, nullptr, nullptr);
  NEAT_EXPECT_ERROR(wrap_gst_sample(empty), ErrorCode::InvalidArgument, "no buffer");
  gst_sample_unref(empty);
  NEAT_EXPECT_ERROR(gst_caps_for(ImageSpec{PixelFormat::NV12, 0, 10}), ErrorCode::InvalidArgument,
                    "not a valid video size");
  NEAT_EXPECT_ERROR(gst_caps_for(ImageSpec{PixelFormat::NV12, 4, 4}, 30, 0),
                    ErrorCode::InvalidArgument, "framerate");
  NEAT_EXPECT_ERROR(gst_caps_for(ImageSpec{}), ErrorCode::InvalidArgument,
                    "no GStreamer video format");
}

// appsrc (padded I420 at width 1918) -> jpegenc -> matroskamux -> file, then
// filesrc -> matroskademux -> jpegdec -> appsink: layout and pixels survive.
TEST_F(GstTest, EncoderRoundTripThroughAFile) {
  const std::int64_t w = 1918, h = 1080;
  const std::string path =
      (std::filesystem::temp_directory_path() / ("neat_gst_" + std::to_string(::getpid()) + ".mkv"))
          .string();
  std::vector<NeatTensor> frames;
  {
    Pipeline enc(
        "appsrc name=src format=time ! jpegenc quality=95 ! matroskamux ! filesink location=" +
        path);
    auto caps = gst_caps_for(ImageSpec{PixelFormat::I420, w, h}, 10, 1);
    NEAT_ASSERT_OK(caps);
    g_object_set(enc.src(), "caps", *caps, nullptr);
    gst_caps_unref(*caps);
    enc.play();
    for (int f = 0; f < 3; ++f) {
      auto t = NeatTensor::allocate_image(PixelFormat::I420, w, h, {.row_alignment = 64});
      NEAT_ASSERT_OK(t);
      t = std::move(*t).make_writable();
      NEAT_ASSERT_OK(t);
      ASSERT_EQ(t->plane_layout(0).row_stride, 1920);
      {
        auto m = t->map(MapMode::Write);
        NEAT_ASSERT_OK(m);
        for (int i = 0; i < 3; ++i) {
          const PlaneLayout& p = t->plane_layout(i);
          std::byte* base = *m->mutable_plane_data(p.role);
          for (std::int64_t r = 0; r < p.rows; ++r) {
            for (std::int64_t c = 0; c < p.cols; ++c) {  // smooth gradients survive JPEG
              base[r * p.row_stride + c] = static_cast<std::byte>(
                  i == 0 ? 16 + (c * 200 / p.cols) : 128 + ((r + f * 8) * 60 / p.rows) - 30);
            }
          }
        }
      }
      auto b = export_gst_buffer(*t);
      NEAT_ASSERT_OK(b);
      GST_BUFFER_PTS(*b) = static_cast<GstClockTime>(f) * GST_SECOND / 10;
      GST_BUFFER_DURATION(*b) = GST_SECOND / 10;
      ASSERT_EQ(gst_app_src_push_buffer(enc.src(), *b), GST_FLOW_OK);
      frames.push_back(std::move(*t));
    }
    gst_app_src_end_of_stream(enc.src());
    ASSERT_EQ(enc.wait_eos(), "");
  }
  Pipeline dec("filesrc location=" + path +
               " ! matroskademux ! jpegdec ! appsink name=sink sync=false");
  dec.play();
  for (int f = 0; f < 3; ++f) {
    SampleRef s{dec.pull()};
    ASSERT_NE(s.s, nullptr) << "frame " << f;
    auto t = wrap_gst_sample(s.s);
    NEAT_ASSERT_OK(t);
    EXPECT_EQ(t->pixel_format(), PixelFormat::I420);
    EXPECT_EQ(t->image().width, w);
    EXPECT_EQ(t->image().height, h);
    expect_same_frame(*t, s.s);
    auto got = t->map();
    auto want = frames[static_cast<std::size_t>(f)].map();
    NEAT_ASSERT_OK(got);
    NEAT_ASSERT_OK(want);
    for (int i = 0; i < 3; ++i) {
      const PlaneLayout& a = t->plane_layout(i);
      const PlaneLayout& b = frames[static_cast<std::size_t>(f)].plane_layout(i);
      ASSERT_EQ(a.rows, b.rows);
      ASSERT_EQ(a.cols, b.cols);
      const std::byte* pa = *got->plane_data(a.role);
      const std::byte* pb = *want->plane_data(b.role);
      double diff = 0;
      for (std::int64_t r = 0; r < a.rows; ++r) {
        for (std::int64_t c = 0; c < a.cols; ++c) {
          diff += std::abs(std::to_integer<int>(pa[r * a.row_stride + c]) -
                           std::to_integer<int>(pb[r * b.row_stride + c]));
        }
      }
      EXPECT_LT(diff / static_cast<double>(a.rows * a.cols), 2.0)
          << "frame " << f << " plane " << i;
    }
  }
  std::filesystem::remove(path);
}

TEST_F(GstTest, TenThousandWrapsLeaveNothingBehind) {
  GstVideoInfo info;
  ASSERT_TRUE(gst_video_info_set_format(&info, GST_VIDEO_FORMAT_NV12, 64, 32));
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  const auto before = gst_storage_stats();
  for (int i = 0; i < 10000; ++i) {
    auto t = wrap_gst_buffer(buffer, info);
    ASSERT_TRUE(t.ok());
    auto m = t->map();
    ASSERT_TRUE(m.ok());
  }
  const auto after = gst_storage_stats();
  EXPECT_EQ(after.live_storages, before.live_storages);
  EXPECT_EQ(after.live_maps, before.live_maps);
  EXPECT_EQ(after.maps - before.maps, 10000u);
  EXPECT_EQ(after.unmaps - before.unmaps, 10000u);
  EXPECT_EQ(GST_MINI_OBJECT_REFCOUNT_VALUE(buffer), 1);
  gst_buffer_unref(buffer);
}

}  // namespace
}  // namespace neat
