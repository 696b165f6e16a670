// The pipeline text syntax: tokens, quoting, every element's properties, and
// errors that point at the offending token.
#include "neat/stages/pipeline.hpp"
#include "neat/stages/elements.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "neat/stages/queue.hpp"
#include "support/fakes.hpp"

namespace neat {
namespace {

TEST(PipelineParse, SplitsElementsAndKeepsQuotedBangs) {
  const std::string text =
      R"(gst:"videotestsrc ! video/x-raw,format=NV12" ! resize size=64x48 name="my \"r\"" ! appsink)";
  auto els = parse_pipeline(text);
  NEAT_ASSERT_OK(els);
  ASSERT_EQ(els->size(), 3u);
  EXPECT_EQ((*els)[0].name, "gst");
  EXPECT_EQ((*els)[0].gst, "videotestsrc ! video/x-raw,format=NV12");
  EXPECT_EQ((*els)[1].name, "resize");
  ASSERT_EQ((*els)[1].properties.size(), 2u);
  EXPECT_EQ((*els)[1].properties[1].second, "my \"r\"");
  EXPECT_EQ((*els)[2].offset, text.rfind("appsink"));
}

TEST(PipelineParse, MalformedTextPointsAtTheToken) {
  NEAT_EXPECT_ERROR(parse_pipeline(""), ErrorCode::InvalidArgument, "empty pipeline");
  // A backslash ending a quoted string (found by the fuzzer).
  NEAT_EXPECT_ERROR(declare_pipeline("file location=\"x\\"), ErrorCode::InvalidArgument,
                    "unterminated quote");
  NEAT_EXPECT_ERROR(parse_pipeline("default ! ! appsink"), ErrorCode::InvalidArgument,
                    "empty element between '!'");
  NEAT_EXPECT_ERROR(parse_pipeline("default ! resize 640x640 ! appsink"),
                    ErrorCode::InvalidArgument, "expected key=value after 'resize', got '640x640'");
  NEAT_EXPECT_ERROR(parse_pipeline("gst:videotestsrc ! appsink"), ErrorCode::InvalidArgument,
                    "quoted GStreamer description");
  NEAT_EXPECT_ERROR(parse_pipeline("default ! size=3 ! appsink"), ErrorCode::InvalidArgument,
                    "starts with its name");
  auto e = parse_pipeline("default ! resize size=\"64x48 ! appsink");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message().find("unterminated quote (column 23)"), std::string::npos)
      << e.error().message();
  EXPECT_NE(e.error().message().find("\n                        ^"), std::string::npos)
      << e.error().message();
}

TEST(PipelineDeclare, EveryElementAndItsPropertiesBuild) {
  auto p = declare_pipeline(
      "synthetic format=NV12 size=64x48 frames=3 ! inspect ! crop x=2 y=2 size=32x32 ! "
      "convert format=RGB ! resize size=16x16 interp=nearest ! layout to=chw policy=trace ! "
      "layout to=hwc name=back ! cast dtype=f32 ! normalize mean=0.5,0.5,0.5 std=0.25,0.25,0.25 "
      "scale=1 dtype=f16 layout=hwc ! pack ! transfer device=cpu ! appsink capacity=2 "
      "overflow=drop-oldest");
  NEAT_ASSERT_OK(p);
  ASSERT_NE(p->appsink, nullptr);
  EXPECT_EQ(p->appsink->options().capacity, 2u);
  auto g = p->builder.build();
  NEAT_ASSERT_OK(g);
  EXPECT_EQ(g->plan().nodes.back().name, "appsink");
  EXPECT_EQ(g->plan().edges[4].name, "resize->layout");
  EXPECT_EQ(g->plan().edges[4].policy, ConversionPolicy::AllowWithTrace);
  auto r = g->run();
  NEAT_ASSERT_OK(r);
  auto f = p->appsink->try_pull();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->dtype(), DType::F16);
  EXPECT_EQ(f->shape(), (Dims{16, 16, 3}));
}

TEST(PipelineDeclare, BadPropertiesAndPlacementsAreTypedErrors) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"default", "needs a source and a sink"},
      {"default ! resise size=1x1 ! appsink", "unknown stage 'resise'"},
      {"default ! resize ! appsink", "'resize' needs size=WIDTHxHEIGHT"},
      {"default ! resize size=0x5 ! appsink", "is not WIDTHxHEIGHT"},
      {"default ! resize size=64x64 colour=red ! appsink", "'resize' has no property 'colour'"},
      {"default ! resize size=64x64 interp=cubic ! appsink", "interp=cubic is not one of"},
      {"default ! convert ! appsink", "'convert' needs format=FORMAT"},
      {"default ! convert format=XYZ ! appsink", "format=XYZ is not one of"},
      {"default ! cast ! appsink", "'cast' needs dtype"},
      {"default ! layout ! appsink", "'layout' needs to=chw or to=hwc"},
      {"default ! normalize mean=1,2 ! appsink", "mean takes 3 comma-separated numbers"},
      {"default ! normalize scale=abc ! appsink", "scale=abc is not a number"},
      {"default ! crop x=one size=4x4 ! appsink", "x=one is not an integer"},
      {"default ! inspect policy=lenient ! appsink", "policy=lenient is not one of"},
      {"default frames=0 ! appsink", "frames must be positive"},
      {"file ! appsink", "'file' needs location=PATH"},
      {"resize size=4x4 ! appsink", "the first element must be a source"},
      {"default ! resize size=4x4", "the last element of a pipeline or branch must be a sink"},
      {"default ! appsink ! appsink", "'appsink' can only end a pipeline"},
      {"default ! default ! appsink", "'default' is a source"},
      {"default ! inspect name=a ! inspect name=a ! appsink", "two elements are named 'a'"},
      {"default ! appsink capacity=0", "capacity must be positive"},
      {"default ! appsink overflow=spill", "overflow=spill is not one of"},
      {"default ! transfer device=gl ! appsink", "device=gl is not one of: cpu"},
      {"default ! pack size=2x2 ! appsink", "'pack' has no property 'size'"},
      {"default ! convert format=RGB colorimetry=bt.709 ! appsink",
       "colorimetry=bt.709 is not one of: bt601, bt709, bt2020"},
      {"default ! preprocess colorimetry=rec709 ! appsink", "colorimetry=rec709 is not one of"},
      {"default ! preprocess stores=nontemporal ! appsink",
       "stores=nontemporal is not one of: auto, cached, streamed"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    NEAT_EXPECT_ERROR(declare_pipeline(c.text), ErrorCode::InvalidArgument, c.error);
  }
}

TEST(PipelineDeclare, TheDefaultPipelineDeclares) {
  auto p = declare_pipeline(default_pipeline_text(), {.default_frames = 2});
  NEAT_ASSERT_OK(p);
  EXPECT_EQ(p->source_name, "default");
  auto g = p->builder.build();
  NEAT_ASSERT_OK(g);
  EXPECT_EQ(g->plan().edge_bytes_per_frame(), 0);
  // The demo is the detector on libtorch: no copy at the model boundary, and
  // explain says why there is none.
  EXPECT_NE(g->explain().find("infer model=detector.pt"), std::string::npos) << g->explain();
  EXPECT_NE(g->explain().find("nothing is copied"), std::string::npos) << g->explain();
  EXPECT_EQ(g->explain().find("model_output"), std::string::npos) << g->explain();
  EXPECT_EQ(g->explain().find("model_input"), std::string::npos) << g->explain();
}

TEST(BoundedQueue, BlocksWhenFullClosesAndAborts) {
  BoundedQueue<int> q(2);
  int a = 1, b = 2, c = 3, out = 0;
  EXPECT_EQ(q.push(a), BoundedQueue<int>::PushResult::Pushed);
  EXPECT_EQ(q.push(b), BoundedQueue<int>::PushResult::Pushed);
  EXPECT_EQ(q.push_for(c, std::chrono::milliseconds(10)), BoundedQueue<int>::PushResult::Timeout);
  std::optional<int> dropped;
  EXPECT_EQ(q.push_drop_oldest(c, dropped), BoundedQueue<int>::PushResult::Pushed);
  EXPECT_EQ(dropped, 1);
  EXPECT_EQ(q.pop(out, std::chrono::milliseconds(0)), BoundedQueue<int>::PopResult::Popped);
  EXPECT_EQ(out, 2);
  q.close();
  EXPECT_EQ(q.push(a), BoundedQueue<int>::PushResult::Closed);
  EXPECT_EQ(q.pop(out, std::chrono::milliseconds(0)), BoundedQueue<int>::PopResult::Popped);
  EXPECT_EQ(out, 3);
  EXPECT_EQ(q.pop(out, std::chrono::milliseconds(0)), BoundedQueue<int>::PopResult::Closed);
  BoundedQueue<int> r(1);
  EXPECT_EQ(r.push(a), BoundedQueue<int>::PushResult::Pushed);
  std::thread blocked([&] { EXPECT_EQ(r.push(b), BoundedQueue<int>::PushResult::Aborted); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto left = r.abort();
  blocked.join();
  EXPECT_EQ(left.size(), 1u);
  EXPECT_EQ(r.pop(out, std::chrono::milliseconds(0)), BoundedQueue<int>::PopResult::Aborted);
  EXPECT_EQ(r.pushed(), 1u);
}

// The registry is the one source of the syntax: every property it declares is
// one the element's factory reads (declaring one and forgetting it would make
// the element refuse it), and every element is reachable by name.
TEST(PipelineElements, EveryDeclaredPropertyIsReadByItsElement) {
  auto value = [](const PropertySpec& p) -> std::string {
    switch (p.type) {
      case PropertyType::Integer:
        return "2";
      case PropertyType::Number:
        return "0.5";
      case PropertyType::Numbers3:
        return "0.5,0.5,0.5";
      case PropertyType::Size:
        return "16x16";
      case PropertyType::Choice:
        return p.choices.front();
      case PropertyType::Text:
        return "x";
      case PropertyType::Format:
        return "RGB";
      case PropertyType::DType:
        return "f32";
      case PropertyType::Colorimetry:
        return "bt709-full";
      case PropertyType::Duration:
        return "250ms";
    }
    return "";
  };
  int checked = 0;
  for (const ElementSpec& e : pipeline_elements()) {
    if (e.name == "gst" || e.name == "file") continue;  // need a description / a real file
    SCOPED_TRACE(e.name);
    EXPECT_EQ(find_pipeline_element(e.name), &e);
    EXPECT_FALSE(e.summary.empty());
    std::string props;
    for (const PropertySpec& p : e.properties) {
      EXPECT_FALSE(p.help.empty()) << p.name;
      if (p.name == "name") continue;
      // Values an element checks against the world: a real model, its output, a class id.
      const std::string v = p.name == "model"         ? "models:scale"
                            : p.name == "output"      ? "y"
                            : p.name == "classes"     ? "0"
                            : p.name == "input-shape" ? "1x3x8x8"
                            : p.name == "pattern"     ? "ball"
                            : p.name == "ca-file"     ? "/etc/os-release"  // a file that exists
                            : p.name == "spool-bytes" ? "4096"
                                                      : value(p);
      props += " " + p.name + "=" + v;
    }
    std::string text;
    if (e.has_role(ElementRole::Source)) {
      text = e.name + props + " ! appsink";
    } else if (e.has_role(ElementRole::Stage)) {
      text = "synthetic ! " + e.name + props + " ! appsink";
    } else {
      text = "synthetic ! " + e.name + props;
    }
    auto p = declare_pipeline(text);
    EXPECT_TRUE(p.ok()) << text << ": " << p.error().message();
    ++checked;
  }
  EXPECT_EQ(checked, 19);  // every element but gst and file
  EXPECT_EQ(find_pipeline_element("resise"), nullptr);
  EXPECT_EQ(element_names(ElementRole::Sink), "gst:\"...\", appsink, mqtt, kafka");
  EXPECT_NE(describe_elements().find("preprocess  the fused"), std::string::npos);
  const std::string resize = describe_element(*find_pipeline_element("resize"));
  EXPECT_NE(resize.find("size=WIDTHxHEIGHT"), std::string::npos) << resize;
  EXPECT_NE(resize.find("required"), std::string::npos) << resize;
  EXPECT_NE(resize.find("interp=bilinear|nearest|area    default bilinear"), std::string::npos)
      << resize;
}

// interp=area reaches resize and the fused preprocess, and the plan says so.
TEST(PipelineDeclare, AreaInterpolationRunsInResizeAndPreprocess) {
  for (const char* text :
       {"synthetic format=NV12 size=96x64 frames=2 ! preprocess size=32x32 interp=area ! appsink "
        "capacity=2",
        "synthetic format=NV12 size=96x64 frames=2 ! convert format=RGB ! resize size=32x32 "
        "interp=area ! appsink capacity=2"}) {
    auto p = declare_pipeline(text);
    NEAT_ASSERT_OK(p);
    auto g = p->builder.build();
    NEAT_ASSERT_OK(g);
    EXPECT_NE(g->explain().find(" area"), std::string::npos) << g->explain();
    NEAT_ASSERT_OK(g->run());
    auto f = p->appsink->try_pull();
    ASSERT_TRUE(f.has_value()) << text;
    EXPECT_EQ(f->shape()[f->rank() - 1] == 32 || f->shape()[1] == 32, true) << f->to_string();
  }
}

TEST(PipelineElements, AnUnknownPropertyErrorListsWhatTheElementTakes) {
  NEAT_EXPECT_ERROR(declare_pipeline("default ! resize size=4x4 colour=red ! appsink"),
                    ErrorCode::InvalidArgument,
                    "'resize' has no property 'colour' (properties: size, interp, name, policy, "
                    "max-latency)");
  NEAT_EXPECT_ERROR(declare_pipeline("default ! appsink policy=strict"), ErrorCode::InvalidArgument,
                    "'appsink' has no property 'policy'");
}

// A source's restart waits from the text (backoff-min=, backoff-max=): they
// reach the graph's plan, and a wait that cannot be is refused at its token.
TEST(PipelineElements, ASourceTakesItsRestartBackoffAndRefusesOneThatCannotBe) {
  auto p = declare_pipeline(
      "synthetic format=NV12 size=64x48 frames=2 restart=always backoff-min=200ms backoff-max=1s "
      "! appsink");
  NEAT_ASSERT_OK(p);
  auto g = p->builder.build();
  NEAT_ASSERT_OK(g);
  EXPECT_NE(g->explain().find("restarted when down (backoff 0.2 s to 1 s)"), std::string::npos)
      << g->explain();
  NEAT_EXPECT_ERROR(declare_pipeline("synthetic backoff-min=2s backoff-max=1s ! appsink"),
                    ErrorCode::InvalidArgument, "backoff-max=1s is less than backoff-min=2s");
  // The default named as such where the text left one out.
  NEAT_EXPECT_ERROR(declare_pipeline("synthetic backoff-min=45s ! appsink"),
                    ErrorCode::InvalidArgument,
                    "backoff-max 30s (the default) is less than backoff-min=45s");
  NEAT_EXPECT_ERROR(declare_pipeline("synthetic backoff-min=0 ! appsink"),
                    ErrorCode::InvalidArgument, "backoff-min must be more than 0");
  NEAT_EXPECT_ERROR(declare_pipeline("synthetic backoff-max=soon ! appsink"),
                    ErrorCode::InvalidArgument, "backoff-max=soon is not a duration");
  NEAT_EXPECT_ERROR(declare_pipeline("synthetic backoff-max=-1s ! appsink"),
                    ErrorCode::InvalidArgument, "backoff-max=-1s is not a duration");
}

// Fan-out in the syntax, as gst-launch writes it: a named tee, branches
// starting with "NAME.", every branch ending in a sink; each branch gets every
// frame, shared read-only (no copy).
TEST(PipelineBranches, ATeeFeedsEveryBranchEveryFrameWithoutACopy) {
  auto p = declare_pipeline(
      "synthetic format=NV12 size=64x48 frames=5 ! tee name=t ! resize size=32x24 ! appsink "
      "t. ! convert format=RGB ! appsink name=rgb  t. ! appsink name=raw");
  NEAT_ASSERT_OK(p);
  ASSERT_EQ(p->appsinks.size(), 3u);
  EXPECT_EQ(p->appsinks[0].first, "appsink");
  EXPECT_EQ(p->appsinks[1].first, "rgb");
  EXPECT_EQ(p->appsink, p->appsinks[0].second);
  auto g = p->builder.build();
  NEAT_ASSERT_OK(g);
  int from_synthetic = 0;
  for (const EdgePlan& e : g->plan().edges) {
    if (e.from != "synthetic") continue;
    ++from_synthetic;
    EXPECT_EQ(e.consumers_sharing, 3) << e.name;
    EXPECT_EQ(e.bytes_per_frame(), 0) << e.name;
  }
  EXPECT_EQ(from_synthetic, 3);
  NEAT_ASSERT_OK(g->start());
  std::vector<int> got(3, 0);
  while (!g->done() || std::any_of(p->appsinks.begin(), p->appsinks.end(),
                                   [](const auto& a) { return !a.second->at_end(); })) {
    for (std::size_t k = 0; k < 3; ++k) {
      while (auto f = p->appsinks[k].second->try_pull())
        ++got[k];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  NEAT_ASSERT_OK(g->wait());
  EXPECT_EQ(got, (std::vector<int>{5, 5, 5}));
  EXPECT_TRUE(g->frames().balanced());
}

TEST(PipelineBranches, AnyStageOrSourceStartsABranchByItsName) {
  auto p = declare_pipeline(
      "synthetic size=64x48 frames=2 ! resize size=32x24 name=small ! appsink  small. ! "
      "appsink name=b  synthetic. ! appsink name=c");
  NEAT_ASSERT_OK(p);
  auto g = p->builder.build();
  NEAT_ASSERT_OK(g);
  std::vector<std::string> edges;
  for (const EdgePlan& e : g->plan().edges)
    edges.push_back(e.name);
  std::sort(edges.begin(), edges.end());
  EXPECT_EQ(edges, (std::vector<std::string>{"small->appsink", "small->b", "synthetic->c",
                                             "synthetic->small"}));
}

TEST(PipelineBranches, BadBranchesPointAtTheToken) {
  NEAT_EXPECT_ERROR(declare_pipeline("default ! tee name=t ! appsink x. ! appsink"),
                    ErrorCode::InvalidArgument,
                    "no tee or element named 'x' before this branch (branches can start at: t, "
                    "default) (column 32)");
  NEAT_EXPECT_ERROR(declare_pipeline("default ! appsink name=o o. ! appsink"),
                    ErrorCode::InvalidArgument, "'o' is a sink: a branch starts at a tee");
  NEAT_EXPECT_ERROR(declare_pipeline("default ! tee"), ErrorCode::InvalidArgument,
                    "the tee has no branches");
  NEAT_EXPECT_ERROR(declare_pipeline("default ! appsink t."), ErrorCode::InvalidArgument,
                    "the branch 't.' has no elements");
  NEAT_EXPECT_ERROR(declare_pipeline("t. ! appsink"), ErrorCode::InvalidArgument,
                    "a branch 't.' starts after an element");
  NEAT_EXPECT_ERROR(declare_pipeline("default ! tee name=t ! appsink t. x=1 ! appsink"),
                    ErrorCode::InvalidArgument, "is followed by '!' and its first element");
  NEAT_EXPECT_ERROR(declare_pipeline("default ! tee name=t ! resize size=2x2 t. ! appsink"),
                    ErrorCode::InvalidArgument,
                    "the last element of a pipeline or branch must be a sink");
  NEAT_EXPECT_ERROR(declare_pipeline("default ! tee name=t ! appsink t. ! default ! appsink"),
                    ErrorCode::InvalidArgument, "'default' is a source");
  NEAT_EXPECT_ERROR(declare_pipeline("default ! tee name=t ! tee name=t ! appsink"),
                    ErrorCode::InvalidArgument, "two elements are named 't'");
  // A dot inside a quoted value or a property is not a branch.
  NEAT_ASSERT_OK(declare_pipeline("default ! resize size=4x4 name=\"a.\" ! appsink"));
}

TEST(PipelineStreams, BranchesLinkIntoOneNamedStageAndEveryFrameKeepsItsStream) {
  // The form of docs/streams.md: each source's chain ends by linking into
  // the element named elsewhere (`NAME.`), which exists once.
  auto p = declare_pipeline(
      "synthetic name=a format=NV12 size=64x48 frames=7 ! resize size=32x24 ! join.\n"
      "synthetic name=b format=NV12 size=64x48 frames=5 ! resize size=32x24 ! join.\n"
      "convert name=join format=RGB ! appsink");
  NEAT_ASSERT_OK(p);
  auto g = p->builder.build();
  NEAT_ASSERT_OK(g);
  std::vector<std::string> edges;
  for (const EdgePlan& e : g->plan().edges)
    edges.push_back(e.name);
  std::sort(edges.begin(), edges.end());
  EXPECT_EQ(edges, (std::vector<std::string>{"a->resize", "b->resize2", "join->appsink",
                                             "resize->join", "resize2->join"}));
  NEAT_ASSERT_OK(g->start());
  std::map<std::string, std::vector<std::int64_t>> frames;
  while (auto f = p->appsink->pull(std::chrono::seconds(10))) {
    const FrameMeta& m = f->meta();
    ASSERT_TRUE(m.stream.known());
    frames[std::string(m.stream.name)].push_back(m.frame);
    EXPECT_EQ(m.stream.index, m.stream.name == "a" ? 0 : 1);
  }
  NEAT_ASSERT_OK(g->wait());
  EXPECT_EQ(frames["a"], (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6}));  // in order, each
  EXPECT_EQ(frames["b"], (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(g->frames().balanced());
}

TEST(PipelineStreams, ALinkMayNameAnElementBeforeItAndASinkMayTakeSeveralStreams) {
  auto p = declare_pipeline(
      "synthetic name=a size=8x8 frames=2 ! appsink name=out  "
      "synthetic name=b size=8x8 frames=3 ! out.");
  NEAT_ASSERT_OK(p);
  auto g = p->builder.build();
  NEAT_ASSERT_OK(g);
  NEAT_ASSERT_OK(g->start());
  int n = 0;
  while (p->appsink->pull(std::chrono::seconds(10)))
    ++n;
  NEAT_ASSERT_OK(g->wait());
  EXPECT_EQ(n, 5);
}

TEST(PipelineStreams, BadLinksPointAtTheTokenWithTheFix) {
  NEAT_EXPECT_ERROR(declare_pipeline("default ! det.  default name=b ! det."),
                    ErrorCode::InvalidArgument,
                    "no element is named 'det' (links go into: none); name the element that "
                    "takes the streams, e.g. infer name=det");
  NEAT_EXPECT_ERROR(declare_pipeline("default name=a ! b.  default name=b ! appsink"),
                    ErrorCode::InvalidArgument, "'b' is a source: it takes no input");
  NEAT_EXPECT_ERROR(declare_pipeline("default ! tee name=t ! appsink  default name=c ! t."),
                    ErrorCode::InvalidArgument, "'t' is a tee: a link goes into a stage or a sink");
  NEAT_EXPECT_ERROR(declare_pipeline("default ! j. ! appsink  resize name=j size=2x2 ! appsink"),
                    ErrorCode::InvalidArgument, "'j.' ends this chain");
  // A chain that starts with a stage nobody links into.
  NEAT_EXPECT_ERROR(declare_pipeline("default ! appsink  resize size=2x2 ! appsink"),
                    ErrorCode::InvalidArgument,
                    "an element that starts a chain must be a source (");
  // Streams that hand the shared stage different frames: refused at build, naming both.
  auto p = declare_pipeline(
      "synthetic name=a size=64x48 frames=1 ! j.  synthetic name=b size=32x24 frames=1 ! j.  "
      "convert name=j format=BGR ! appsink");
  NEAT_ASSERT_OK(p);
  NEAT_EXPECT_ERROR(
      p->builder.build(), ErrorCode::FailedPrecondition,
      "its inputs differ: edge 'a->j' hands it NV12 64x48 cpu:0, edge 'b->j' NV12 32x24");
}

}  // namespace
}  // namespace neat
