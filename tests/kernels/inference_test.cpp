// The model boundary: Model (OpenCV DNN) loading, running and accounting;
// the YOLO decoder; the generated detector end to end.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>
#include <set>

#include "neat/kernels/detections.hpp"
#include "neat/kernels/model.hpp"
#include "neat/kernels/preprocess.hpp"
#include "neat/stages/inference.hpp"
#include "neat/telemetry/event_sink.hpp"
#include "support/fakes.hpp"
#include "support/models.hpp"

namespace neat {
namespace {

using testing::floats_tensor;
using testing::model_path;
using testing::ramp;
using testing::values;

// ---- Model ---------------------------------------------------------------------

TEST(Model, LoadBadInput) {
  NEAT_EXPECT_ERROR(Model::load({}), ErrorCode::InvalidArgument, "no file given");
  NEAT_EXPECT_ERROR(Model::load({.path = "/nonexistent/model.onnx"}), ErrorCode::InvalidArgument,
                    "no such file");
  NEAT_EXPECT_ERROR(Model::load({.path = "/tmp"}), ErrorCode::InvalidArgument, "is a directory");
  const std::string garbage = ::testing::TempDir() + "/not_a_model.onnx";
  std::ofstream(garbage) << "this is not protobuf \xff\xff\xff\xff";
  NEAT_EXPECT_ERROR(Model::load({.path = garbage}), ErrorCode::InvalidArgument,
                    "not an ONNX model");
  // A detector cut in half: the graph does not parse or OpenCV refuses it.
  const std::string cut = ::testing::TempDir() + "/cut.onnx";
  {
    std::ifstream in(model_path("detector.onnx"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  auto r = Model::load({.path = cut});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::InvalidArgument) << r.error().to_string();
  NEAT_EXPECT_ERROR(Model::load({.path = model_path("scale.onnx"), .threads = -1}),
                    ErrorCode::InvalidArgument, "threads=-1");
  std::filesystem::remove(garbage);
  std::filesystem::remove(cut);
}

TEST(Model, ReadsItsInputFromTheFileAndRecordsBothCopies) {
  auto model = Model::load({.path = model_path("scale.onnx")});
  NEAT_ASSERT_OK(model);
  EXPECT_EQ((*model)->input().to_string(), "x f32 [1, 3, 8, 8]");
  ASSERT_EQ((*model)->outputs().size(), 1u);
  EXPECT_EQ((*model)->outputs()[0].shape, (std::vector<std::int64_t>{1, 3, 8, 8}));
  std::vector<float> in(192);
  for (std::size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<float>(i) * 0.5f;
  NeatTensor x = floats_tensor(in, {1, 3, 8, 8});
  FrameMeta meta;
  meta.frame = 4;
  x.set_meta(meta);
  auto sink = std::make_shared<MemorySink>();
  auto reg = add_event_sink(sink);
  std::vector<NeatTensor> out;
  NEAT_ASSERT_OK((*model)->run(x, out));
  ASSERT_EQ(out.size(), 1u);
  const auto y = values(out[0]);
  for (std::size_t i = 0; i < in.size(); ++i)
    ASSERT_FLOAT_EQ(y[i], 2 * in[i] + 1) << i;
  EXPECT_EQ(out[0].meta().frame, 4);
  const auto events = sink->events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].event.kind, ConversionKind::Transfer);
  EXPECT_EQ(events[0].event.reason, ConversionReason::ModelInput);
  EXPECT_EQ(events[0].event.bytes_written, 768);
  EXPECT_EQ(events[1].event.kind, ConversionKind::Pack);
  EXPECT_EQ(events[1].event.reason, ConversionReason::ModelOutput);
  EXPECT_EQ(events[1].event.bytes_written, 768);
  EXPECT_NE(events[1].detail.find("output 'y'"), std::string::npos) << events[1].detail;
  // What the run recorded is what the model declared (and explain lists).
  const std::vector<std::int64_t> shape{1, 3, 8, 8};
  const auto declared = (*model)->copies(shape);
  ASSERT_EQ(declared.size(), events.size());
  for (std::size_t i = 0; i < declared.size(); ++i) {
    EXPECT_EQ(declared[i].kind, events[i].event.kind) << i;
    EXPECT_EQ(declared[i].reason, events[i].event.reason) << i;
    EXPECT_EQ(declared[i].bytes, events[i].event.bytes_written) << i;
    EXPECT_EQ(declared[i].detail, events[i].detail) << i;
    EXPECT_EQ(declared[i].operation, events[i].operation) << i;
  }
  EXPECT_EQ(declared[0].what, "setInput copies x [1, 3, 8, 8] into the net");
}

// OpenCV has one pool: a model holds the size it set while it lives, the
// process's own size comes back after, and another size meanwhile is refused.
TEST(Model, ThreadsHoldOpenCvsPoolOnlyWhileTheModelLives) {
  const int before = cv::getNumThreads();
  const int asked = before == 1 ? 2 : 1;
  {
    auto a = Model::load({.path = model_path("scale.onnx"), .threads = asked});
    NEAT_ASSERT_OK(a);
    EXPECT_EQ(cv::getNumThreads(), asked);
    EXPECT_EQ((*a)->threads(), asked);
    auto same = Model::load({.path = model_path("scale.onnx"), .threads = asked});
    NEAT_ASSERT_OK(same);
    auto other = Model::load({.path = model_path("scale.onnx"), .threads = asked + 1});
    ASSERT_FALSE(other.ok());
    EXPECT_EQ(other.error().code(), ErrorCode::FailedPrecondition);
    EXPECT_NE(other.error().message().find("process-wide pool to " + std::to_string(asked)),
              std::string::npos)
        << other.error().message();
    ASSERT_FALSE(other.error().fixes().empty());
    auto leaves = Model::load({.path = model_path("scale.onnx")});  // threads=0: no claim
    NEAT_ASSERT_OK(leaves);
    EXPECT_EQ((*leaves)->threads(), 0);
    a->reset();
    EXPECT_EQ(cv::getNumThreads(), asked);  // `same` still holds it
  }
  EXPECT_EQ(cv::getNumThreads(), before);
}

// What the accounting rests on (OpenCV 4.6): setInput copies the blob (a
// later write to our buffer does not reach the net); forward(name) returns a
// header over the net's own buffer, rewritten by the next forward(); and
// forward(vector, names) copies each output into the Mat it is given.
// A graph OpenCV cannot import or run: the error names the node, its op
// type, and the fix (the TorchScript engine, or an export OpenCV takes).
TEST(Model, AGraphOpenCvCannotTakeNamesTheNodeAndTheFix) {
  auto imported = Model::load({.path = model_path("cannot_import.onnx")});
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.error().code(), ErrorCode::Unimplemented);
  EXPECT_EQ(imported.error().where(), "model 'cannot_import.onnx' node 'head/topk' (TopK)");
  EXPECT_NE(imported.error().what().find("cannot import this node"), std::string::npos)
      << imported.error().message();
  ASSERT_GE(imported.error().fixes().size(), 2u);
  EXPECT_NE(imported.error().fixes()[0].cpp.find("backend=torch"), std::string::npos);

  auto ran = Model::load({.path = model_path("cannot_run.onnx")});
  ASSERT_FALSE(ran.ok());
  EXPECT_EQ(ran.error().code(), ErrorCode::Unimplemented);
  // The first node that fails, not the first node: stem/relu, mid/sigmoid and
  // mid/mul run; head/scale does not.
  EXPECT_EQ(ran.error().where(), "model 'cannot_run.onnx' node 'head/scale' (Mul)");
  EXPECT_NE(ran.error().what().find("cannot run this node on input images f32 [1, 3, 8, 8]"),
            std::string::npos)
      << ran.error().message();
  EXPECT_NE(ran.error().message().find("TorchScript"), std::string::npos);

  // In a pipeline the same error reaches the infer element.
  auto stage = infer_stage({.model = {.path = model_path("cannot_run.onnx")}});
  ASSERT_FALSE(stage.ok());
  EXPECT_NE(stage.error().message().find("node 'head/scale' (Mul)"), std::string::npos)
      << stage.error().message();
}

TEST(Model, OpenCvCopiesOnSetInputAndReusesItsOutputBuffers) {
  cv::dnn::Net net = cv::dnn::readNetFromONNX(model_path("scale.onnx"));
  const std::string name = net.getUnconnectedOutLayersNames()[0];
  int dims[] = {1, 3, 8, 8};
  std::vector<float> buf(192, 1.f);
  net.setInput(cv::Mat(4, dims, CV_32F, buf.data()));
  buf.assign(192, 100.f);  // after setInput
  cv::Mat a = net.forward(name);
  EXPECT_FLOAT_EQ(a.ptr<float>()[0], 3.f)
      << "setInput no longer copies: re-check the model_input event";
  net.setInput(cv::Mat(4, dims, CV_32F, buf.data()));
  cv::Mat b = net.forward(name);
  EXPECT_EQ(a.data, b.data) << "forward(name) no longer returns the net's buffer";
  EXPECT_FLOAT_EQ(a.ptr<float>()[0], 201.f);  // the first result changed under its holder
  std::vector<float> mine(192, -1.f);
  std::vector<cv::Mat> given{cv::Mat(4, dims, CV_32F, mine.data())};
  net.setInput(cv::Mat(4, dims, CV_32F, buf.data()));
  net.forward(given, std::vector<cv::String>{name});
  EXPECT_EQ(given[0].data, reinterpret_cast<uchar*>(mine.data()));
  EXPECT_FLOAT_EQ(mine[0], 201.f) << "forward(vector) no longer copies into the given Mats";
}

TEST(Model, OutputsAreTheirOwnBuffers) {
  auto model = Model::load({.path = model_path("scale.onnx")});
  NEAT_ASSERT_OK(model);
  std::vector<NeatTensor> first, second;
  NEAT_ASSERT_OK((*model)->run(floats_tensor(std::vector<float>(192, 1.f), {1, 3, 8, 8}), first));
  NEAT_ASSERT_OK((*model)->run(floats_tensor(std::vector<float>(192, 5.f), {1, 3, 8, 8}), second));
  EXPECT_FLOAT_EQ(values(first[0])[0], 3.f) << "a held output changed after the next run";
  EXPECT_FLOAT_EQ(values(second[0])[0], 11.f);
}

TEST(Model, RunBadInput) {
  auto model = Model::load({.path = model_path("scale.onnx")});
  NEAT_ASSERT_OK(model);
  std::vector<NeatTensor> out;
  NEAT_EXPECT_ERROR((*model)->run(NeatTensor(), out), ErrorCode::FailedPrecondition, "undefined");
  auto u8 = NeatTensor::allocate(DType::U8, {1, 3, 8, 8});
  NEAT_EXPECT_ERROR((*model)->run(*u8, out), ErrorCode::InvalidArgument, "x f32 [1, 3, 8, 8]");
  auto small = NeatTensor::allocate(DType::F32, {1, 3, 4, 8});
  NEAT_EXPECT_ERROR((*model)->run(*small, out), ErrorCode::InvalidArgument, "dimension 2 is 4");
  auto rank3 = NeatTensor::allocate(DType::F32, {3, 8, 8});
  NEAT_EXPECT_ERROR((*model)->run(*rank3, out), ErrorCode::InvalidArgument, "rank 3");
  auto wide = NeatTensor::allocate(DType::F32, {1, 3, 8, 16});
  auto strided = wide->slice(3, 0, 16, 2);
  NEAT_ASSERT_OK(strided);
  NEAT_EXPECT_ERROR((*model)->run(*strided, out), ErrorCode::FailedPrecondition, "contiguous()");
}

TEST(Model, SeveralOutputsAndTheStagesChoice) {
  auto model = Model::load({.path = model_path("two_outputs.onnx")});
  NEAT_ASSERT_OK(model);
  ASSERT_EQ((*model)->outputs().size(), 2u);
  std::vector<NeatTensor> out;
  NEAT_ASSERT_OK((*model)->run(floats_tensor({1, 2, 3, 4}, {1, 4}), out));
  ASSERT_EQ(out.size(), 2u);
  std::set<std::string> names;
  for (const auto& o : (*model)->outputs())
    names.insert(o.name);
  EXPECT_EQ(names, (std::set<std::string>{"plus_one", "reshaped"}));
  auto stage =
      infer_stage({.model = {.path = model_path("two_outputs.onnx")}, .output = "reshaped"});
  NEAT_ASSERT_OK(stage);
  auto spec = (*stage)->output_spec(FrameSpec{.dtype = DType::F32, .shape = Dims{1, 4}});
  NEAT_ASSERT_OK(spec);
  EXPECT_EQ(spec->shape, (Dims{1, 2, 2}));
  NEAT_EXPECT_ERROR(
      infer_stage({.model = {.path = model_path("two_outputs.onnx")}, .output = "nope"}),
      ErrorCode::InvalidArgument, "has no output 'nope'");
  // The stage checks the edge at build(): a frame of another shape names the fix.
  auto det = infer_stage({.model = {.path = model_path("detector.onnx")}});
  NEAT_ASSERT_OK(det);
  NEAT_EXPECT_ERROR((*det)->output_spec(FrameSpec{.dtype = DType::F32, .shape = Dims{3, 320, 320}}),
                    ErrorCode::InvalidArgument, "preprocess size=640x640");
  auto ok = (*det)->output_spec(FrameSpec{.dtype = DType::F32, .shape = Dims{3, 640, 640}});
  NEAT_ASSERT_OK(ok);  // [3, H, W] takes a batch view
  EXPECT_EQ(ok->shape, (Dims{1, 84, 8400}));
  EXPECT_TRUE((*det)->inner_conversions().empty()) << "output_spec() decides, prepare() keeps";
  NEAT_ASSERT_OK((*det)->prepare(FrameSpec{.dtype = DType::F32, .shape = Dims{3, 640, 640}}, *ok));
  EXPECT_EQ((*det)->inner_conversions().size(), 2u);
}

TEST(Model, SeveralInputsInDeclaredOrderEachCopyRecorded) {
  auto model = Model::load({.path = model_path("two_inputs.onnx")});
  NEAT_ASSERT_OK(model);
  ASSERT_EQ((*model)->inputs().size(), 2u);
  EXPECT_EQ((*model)->inputs()[0].to_string(), "a f32 [1, 4]");
  EXPECT_EQ((*model)->inputs()[1].to_string(), "b f32 [1, 4]");
  EXPECT_EQ((*model)->input_bytes(), 32);
  auto sink = std::make_shared<MemorySink>();
  auto reg = add_event_sink(sink);
  std::vector<NeatTensor> out;
  const std::vector<NeatTensor> in = {floats_tensor({1, 2, 3, 4}, {1, 4}),
                                      floats_tensor({10, 20, 30, 40}, {1, 4})};
  NEAT_ASSERT_OK((*model)->run(in, out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(values(out[0]), (std::vector<float>{21, 42, 63, 84}));  // a + 2b, not b + 2a
  int inputs_copied = 0;
  for (const auto& e : sink->events())
    if (e.event.reason == ConversionReason::ModelInput) ++inputs_copied;
  EXPECT_EQ(inputs_copied, 2);
  // Wrong count, or one bad input: nothing is copied into the net.
  const std::size_t before = sink->events().size();
  NEAT_EXPECT_ERROR((*model)->run(in[0], out), ErrorCode::InvalidArgument,
                    "given 1 input(s), it takes 2");
  const std::vector<NeatTensor> bad = {in[0], floats_tensor({1, 2}, {1, 2})};
  NEAT_EXPECT_ERROR((*model)->run(bad, out), ErrorCode::InvalidArgument, "input 'b'");
  EXPECT_EQ(sink->events().size(), before);
  // The infer stage hands its model one tensor per frame: it says so and names the way.
  NEAT_EXPECT_ERROR(infer_stage({.model = {.path = model_path("two_inputs.onnx")}}),
                    ErrorCode::Unimplemented, "one tensor per frame");
}

// ---- YOLO decode -----------------------------------------------------------------

// A V8 output [1, 4 + classes, anchors] from per-anchor rows (cx, cy, w, h, scores...).
NeatTensor v8_output(const std::vector<std::vector<float>>& anchors) {
  const auto fields = anchors[0].size(), n = anchors.size();
  std::vector<float> v(fields * n);
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t f = 0; f < fields; ++f)
      v[f * n + a] = anchors[a][f];
  return floats_tensor(v, {1, static_cast<std::int64_t>(fields), static_cast<std::int64_t>(n)});
}

std::vector<std::array<float, 6>> rows(const NeatTensor& d) {
  std::vector<std::array<float, 6>> out;
  const auto v = values(d);
  for (std::size_t i = 0; i + 6 <= v.size(); i += 6)
    out.push_back({v[i], v[i + 1], v[i + 2], v[i + 3], v[i + 4], v[i + 5]});
  return out;
}

const std::vector<std::vector<float>> kAnchors = {
    {100, 100, 40, 40, 0.9f, 0.0f, 0.0f},  // class 0, best
    {102, 101, 40, 40, 0.8f, 0.0f, 0.0f},  // overlaps it: suppressed
    {101, 100, 40, 40, 0.0f, 0.7f, 0.0f},  // overlaps, class 1: kept (per-class NMS)
    {300, 300, 20, 20, 0.0f, 0.0f, 0.3f},  // class 2, far away
    {500, 500, 10, 10, 0.1f, 0.0f, 0.0f},  // below conf
};

TEST(Yolo, DecodesWithPerClassNmsAndThresholds) {
  const NeatTensor out = v8_output(kAnchors);
  auto sink = std::make_shared<MemorySink>();
  auto reg = add_event_sink(sink);
  const YoloParams v8{.layout = YoloLayout::V8};
  auto d = decode_yolo(out, v8);
  NEAT_ASSERT_OK(d);
  EXPECT_EQ(sink->size(), 0u) << "decoding packed or converted something";
  const auto r = rows(*d);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_FLOAT_EQ(r[0][0], 80);
  EXPECT_FLOAT_EQ(r[0][1], 80);
  EXPECT_FLOAT_EQ(r[0][2], 120);
  EXPECT_FLOAT_EQ(r[0][3], 120);
  EXPECT_FLOAT_EQ(r[0][4], 0.9f);
  EXPECT_FLOAT_EQ(r[0][5], 0);
  EXPECT_FLOAT_EQ(r[1][5], 1);
  EXPECT_FLOAT_EQ(r[2][5], 2);
  EXPECT_EQ(rows(*decode_yolo(out, {.layout = YoloLayout::V8, .class_agnostic = true})).size(), 2u);
  EXPECT_EQ(rows(*decode_yolo(out, {.layout = YoloLayout::V8, .classes = {2}})).size(), 1u);
  EXPECT_EQ(rows(*decode_yolo(out, {.max_detections = 1, .layout = YoloLayout::V8})).size(), 1u);
  auto none = decode_yolo(out, {.confidence = 0.95f, .layout = YoloLayout::V8});
  NEAT_ASSERT_OK(none);
  EXPECT_EQ(none->shape(), (Dims{0, 6}));  // zero detections: an empty tensor, not an error
}

TEST(Yolo, V5LayoutWithObjectnessThroughATransposeView) {
  // [1, anchors, 5 + classes]: cx, cy, w, h, objectness, class scores.
  std::vector<float> v = {100, 100, 40, 40, 0.5f, 0.9f, 0.1f,   // score 0.45, class 0
                          300, 300, 20, 20, 0.9f, 0.1f, 0.2f,   // score 0.18: below 0.25
                          500, 500, 20, 20, 1.0f, 0.0f, 0.6f};  // score 0.6, class 1
  const NeatTensor out = floats_tensor(v, {1, 3, 7});
  auto d = decode_yolo(out, {.layout = YoloLayout::V5});
  NEAT_ASSERT_OK(d);
  const auto r = rows(*d);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_FLOAT_EQ(r[0][4], 0.6f);
  EXPECT_FLOAT_EQ(r[0][5], 1);
  EXPECT_NEAR(r[1][4], 0.45f, 1e-6);
}

TEST(Yolo, BoxesGoBackToSourcePixelsThroughTheGeometry) {
  NeatTensor out = v8_output(kAnchors);
  FrameMeta m;
  m.geometry.source_width = 1280;
  m.geometry.source_height = 720;
  // A 640x640 letterbox of 1280x720: content rows 140..500, scale 2.
  m.geometry = m.geometry.then(2.0, 2.0, 0.0, -140.0);
  out.set_meta(m);
  auto d = decode_yolo(out, {.layout = YoloLayout::V8});
  NEAT_ASSERT_OK(d);
  const auto r = rows(*d);
  EXPECT_FLOAT_EQ(r[0][0], 160);  // 80 * 2
  EXPECT_FLOAT_EQ(r[0][1], 20);   // 80 * 2 - 140
  EXPECT_FLOAT_EQ(r[0][3], 100);  // 120 * 2 - 140
  // A box in the top padding comes back clamped to the frame's first row.
  auto top = v8_output({{100, 20, 40, 20, 0.9f, 0.f, 0.f}});
  top.set_meta(m);
  auto t = decode_yolo(top, {.layout = YoloLayout::V8});
  NEAT_ASSERT_OK(t);
  EXPECT_FLOAT_EQ(rows(*t)[0][1], 0);
  EXPECT_FLOAT_EQ(rows(*t)[0][3], 0);
  EXPECT_EQ(d->meta().geometry.is_identity(), true);
}

TEST(Yolo, BadInput) {
  NEAT_EXPECT_ERROR(decode_yolo(NeatTensor(), {}), ErrorCode::FailedPrecondition, "undefined");
  auto rank2 = NeatTensor::allocate(DType::F32, {84, 8400});
  NEAT_EXPECT_ERROR(decode_yolo(*rank2, {}), ErrorCode::InvalidArgument, "detector's output");
  auto batch2 = NeatTensor::allocate(DType::F32, {2, 84, 8400});
  NEAT_EXPECT_ERROR(decode_yolo(*batch2, {}), ErrorCode::InvalidArgument, "batch 2");
  auto out = NeatTensor::allocate(DType::F32, {1, 84, 8400});
  NEAT_EXPECT_ERROR(decode_yolo(*out, {.num_classes = 3}), ErrorCode::InvalidArgument,
                    "not num_classes=3");
  NEAT_EXPECT_ERROR(decode_yolo(*out, {.classes = {80}}), ErrorCode::InvalidArgument, "class 80");
  auto thin = NeatTensor::allocate(DType::F32, {1, 4, 8400});
  NEAT_EXPECT_ERROR(decode_yolo(*thin, {}), ErrorCode::InvalidArgument, "no room for a class");
  NEAT_EXPECT_ERROR(decode_yolo(*out, {.confidence = 2.f}), ErrorCode::InvalidArgument, "conf=");
  NEAT_EXPECT_ERROR(decode_yolo(*out, {.iou = 0.f}), ErrorCode::InvalidArgument, "iou=");
  NEAT_EXPECT_ERROR(decode_yolo(*out, {.max_detections = 0}), ErrorCode::InvalidArgument, "max=");
  auto image = NeatTensor::allocate_image(PixelFormat::RGB, 8, 8);
  NEAT_EXPECT_ERROR(decode_yolo(*image, {}), ErrorCode::InvalidArgument, "put `infer` before");
  auto nan = kAnchors;
  nan[3][6] = std::nanf("");
  NEAT_EXPECT_ERROR(decode_yolo(v8_output(nan), {.layout = YoloLayout::V8}),
                    ErrorCode::InvalidArgument, "NaN scores");
  NEAT_EXPECT_ERROR(yolo_stage({.iou = 3.f}), ErrorCode::InvalidArgument, "iou=");
}

// ---- the generated detector, end to end --------------------------------------------

// An I420 frame, black, with a white square (OpenCV's BT.601 limited encoding).
NeatTensor frame_with_square(int w, int h, cv::Rect square) {
  cv::Mat bgr(h, w, CV_8UC3, cv::Scalar(0, 0, 0));
  cv::rectangle(bgr, square, cv::Scalar(255, 255, 255), cv::FILLED);
  cv::Mat i420;
  cv::cvtColor(bgr, i420, cv::COLOR_BGR2YUV_I420);
  auto f = NeatTensor::allocate_image(PixelFormat::I420, w, h);
  auto wr = std::move(*f).make_writable();
  {
    auto m = wr->map(MapMode::Write);
    const uchar* src = i420.data;
    for (PlaneRole role : {PlaneRole::Y, PlaneRole::U, PlaneRole::V}) {
      const PlaneLayout& p = wr->plane_layout(role == PlaneRole::Y   ? 0
                                              : role == PlaneRole::U ? 1
                                                                     : 2);
      std::byte* dst = *m->mutable_plane_data(role);
      for (std::int64_t r = 0; r < p.rows; ++r, src += p.cols)
        std::memcpy(dst + r * p.row_stride, src, static_cast<std::size_t>(p.cols));
    }
  }
  return *std::move(wr)->with_colorimetry(kBT601Limited);
}

TEST(Detector, FindsTheSquareWhereItIsLetterboxedOrStretched) {
  auto model = Model::load({.path = model_path("detector.onnx")});
  NEAT_ASSERT_OK(model);
  YoloDecoder decoder({});
  struct Case {
    int w, h;
    cv::Rect square;
  };
  for (const Case c : {Case{1280, 720, {400, 300, 60, 60}}, Case{640, 480, {50, 380, 40, 40}},
                       Case{720, 1280, {600, 100, 80, 80}}}) {
    for (ResizeMode mode : {ResizeMode::Letterbox, ResizeMode::Stretch}) {
      PreprocessParams p;
      p.resize_mode = mode;
      p.batch_dim = true;
      auto input = preprocess(frame_with_square(c.w, c.h, c.square), p);
      NEAT_ASSERT_OK(input);
      std::vector<NeatTensor> out;
      NEAT_ASSERT_OK((*model)->run(*input, out));
      auto d = decoder.decode(out[0]);
      NEAT_ASSERT_OK(d);
      const auto r = rows(*d);
      ASSERT_EQ(r.size(), 1u) << c.w << "x" << c.h
                              << (mode == ResizeMode::Letterbox ? " letterbox" : " stretch");
      const float cx = (r[0][0] + r[0][2]) / 2, cy = (r[0][1] + r[0][3]) / 2;
      EXPECT_NEAR(cx, c.square.x + c.square.width / 2.0, 3.0) << c.w << "x" << c.h;
      EXPECT_NEAR(cy, c.square.y + c.square.height / 2.0, 3.0) << c.w << "x" << c.h;
      if (mode == ResizeMode::Letterbox) {  // same scale both ways: the box itself comes back
        EXPECT_NEAR(r[0][0], c.square.x, 3.0);
        EXPECT_NEAR(r[0][2], c.square.x + c.square.width, 3.0);
      }
      EXPECT_EQ(r[0][5], 0.f);
    }
  }
}

}  // namespace
}  // namespace neat
