#include "neat/stages/elements.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "neat/stages/builtin.hpp"
#include "neat/stages/gst_io.hpp"
#include "neat/stages/inference.hpp"
#include "neat/stages/internal/element_helpers.hpp"

namespace neat {

Error pipeline_error(std::string_view text, std::size_t offset, std::size_t length,
                     const std::string& what) {
  std::string m = "pipeline: " + what + " (column " + std::to_string(offset + 1) + ")\n  ";
  m += text;
  m += "\n  ";
  m.append(offset, ' ');
  m.append(std::max<std::size_t>(length, 1), '^');
  return invalid_argument(std::move(m));
}

std::string_view to_string(ElementRole r) noexcept {
  switch (r) {
    case ElementRole::Source:
      return "source";
    case ElementRole::Stage:
      return "stage";
    case ElementRole::Sink:
      return "sink";
  }
  return "?";
}

std::string_view to_string(PropertyType t) noexcept {
  switch (t) {
    case PropertyType::Integer:
      return "integer";
    case PropertyType::Number:
      return "number";
    case PropertyType::Numbers3:
      return "a,b,c";
    case PropertyType::Size:
      return "WIDTHxHEIGHT";
    case PropertyType::Choice:
      return "choice";
    case PropertyType::Text:
      return "text";
    case PropertyType::Format:
      return "pixel format";
    case PropertyType::DType:
      return "dtype";
    case PropertyType::Colorimetry:
      return "bt601|bt709|bt2020[-full]";
    case PropertyType::Duration:
      return "duration (5s, 250ms)";
  }
  return "?";
}

// ---- the registry ---------------------------------------------------------------

PropertySpec prop(std::string name, PropertyType type, std::string default_value, std::string help,
                  std::vector<std::string> choices) {
  PropertySpec p;
  p.name = std::move(name);
  p.type = type;
  p.default_value = std::move(default_value);
  p.help = std::move(help);
  p.choices = std::move(choices);
  return p;
}

PropertySpec required(std::string name, PropertyType type, std::string placeholder,
                      std::string help, std::vector<std::string> choices) {
  PropertySpec p = prop(std::move(name), type, "", std::move(help), std::move(choices));
  p.required = true;
  p.placeholder = std::move(placeholder);
  return p;
}

namespace {

using R = ElementRole;
using T = PropertyType;

GstSourceOptions gst_source_options(const PipelineOptions& o) {
  GstSourceOptions so;
  so.first_frame_timeout = o.first_frame_timeout;
  so.timeout_setting = o.timeout_setting;
  so.cancelled = o.cancelled;
  return so;
}

const PropertySpec kColorimetry =
    prop("colorimetry", T::Colorimetry, "",
         "the colour standard to decode YUV with (default: the frame's own, else GStreamer's "
         "default for its size)");
const PropertySpec kInterp =
    prop("interp", T::Choice, "bilinear", "interpolation", {"bilinear", "nearest", "area"});

// "models:NAME" names a model generated with the build (models/make_models.py):
// NEAT_MODEL_DIR if set, else the build tree's, else the installed one. A
// name in none of them is an error listing the models there are, and where.
// models:NAME: a model generated with the build, in the file that fits the
// engine (NAME.pt for torch, NAME.onnx for opencv; auto takes the ONNX file
// when there is one, else the TorchScript one).
Result<std::string> resolve_model_path(const std::string& path, ModelBackend backend) {
  constexpr std::string_view kPrefix = "models:";
  if (path.rfind(kPrefix, 0) != 0) return path;
  const std::string stem = path.substr(kPrefix.size());
  std::vector<std::string> extensions;
  if (backend != ModelBackend::Torch) extensions.push_back(".onnx");
  if (backend != ModelBackend::OpenCv) extensions.push_back(".pt");
  std::vector<std::string> dirs;
  if (const char* dir = std::getenv("NEAT_MODEL_DIR"); dir != nullptr && *dir != '\0') {
    dirs = {dir};
  } else {
    dirs = {NEAT_BUILD_MODEL_DIR, NEAT_INSTALL_MODEL_DIR};
  }
  std::error_code ec;
  for (const std::string& ext : extensions) {
    for (const std::string& dir : dirs) {
      if (std::filesystem::exists(dir + "/" + stem + ext, ec)) return dir + "/" + stem + ext;
    }
  }
  std::set<std::string> names;
  for (const std::string& dir : dirs) {
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      const auto ext = entry.path().extension().string();
      if (std::find(extensions.begin(), extensions.end(), ext) != extensions.end())
        names.insert("models:" + entry.path().stem().string());
    }
  }
  std::string there, where, files;
  for (const std::string& n : names)
    there += (there.empty() ? "" : ", ") + n;
  for (const std::string& d : dirs)
    where += (where.empty() ? "" : ", ") + d;
  for (const std::string& ext : extensions)
    files += (files.empty() ? "" : " or ") + stem + ext;
  return invalid_argument("model '" + path + "': no " + files + " in " + where + " (" +
                          (there.empty() ? "no models there: build them with the project, or set "
                                           "NEAT_MODEL_DIR"
                                         : "models there: " + there) +
                          "; or give the path of a model file)");
}

BuiltElement source(std::unique_ptr<Source> s) {
  BuiltElement b;
  b.source = std::move(s);
  return b;
}
BuiltElement stage(std::unique_ptr<Stage> s) {
  BuiltElement b;
  b.stage = std::move(s);
  return b;
}

// Sources: the built-in input, files, generated frames, GStreamer descriptions.
void add_sources(std::vector<ElementSpec>& r) {
  r.push_back({"default",
               {R::Source},
               "the built-in input: videotestsrc, 1920x1080 NV12",
               {prop("frames", T::Integer, "300", "frames to produce (videotestsrc num-buffers)"),
                prop("pattern", T::Text, "smpte",
                     "videotestsrc's picture: smpte, ball (a white ball moving on black), "
                     "snow, ... (gst-inspect-1.0 videotestsrc lists them)")},
               [](ElementArgs& a, ElementRole) -> Result<BuiltElement> {
                 NEAT_ASSIGN_OR_RETURN(std::int64_t frames,
                                       a.integer("frames", a.options().default_frames));
                 if (frames <= 0) return a.fail("frames must be positive");
                 std::string pattern = a.take("pattern").value_or("");
                 if (!pattern.empty()) {
                   NEAT_ASSIGN_OR_RETURN(std::vector<std::string> known, videotestsrc_patterns());
                   if (std::find(known.begin(), known.end(), pattern) == known.end()) {
                     std::string list;
                     for (const std::string& k : known)
                       list += (list.empty() ? "" : ", ") + k;
                     return a.fail("pattern=" + pattern + " is not a videotestsrc pattern (" +
                                   list + ")");
                   }
                 }
                 return source(gst_source(default_gst_source_description(frames, pattern),
                                          gst_source_options(a.options())));
               }});
  r.push_back(
      {"file",
       {R::Source},
       "a video file through filesrc ! decodebin; frames in the decoder's own format",
       {required("location", T::Text, "PATH", "the file to read"),
        prop("format", T::Format, "",
             "another pixel format: NeatTensor inserts a videoconvert, an implicit conversion "
             "(refused under Strict unless the decoder already gives it)")},
       [](ElementArgs& a, ElementRole) -> Result<BuiltElement> {
         auto location = a.take("location");
         NEAT_ASSIGN_OR_RETURN(PixelFormat f, a.format("format", PixelFormat::None));
         std::string escaped;
         for (char c : *location) {
           if (c == '"' || c == '\\') escaped += '\\';
           escaped += c;
         }
         std::string description = "filesrc location=\"" + escaped + "\" ! decodebin";
         GstSourceOptions so = gst_source_options(a.options());
         if (f != PixelFormat::None) {
           description += " ! videoconvert name=file_convert ! video/x-raw,format=" +
                          std::string(to_string(f));
           so.implicit_elements = {"file_convert"};
           so.implicit_fix =
               "drop format= to take the decoder's own format and convert in the graph "
               "(e.g. `convert format=RGB`, traced), or write the conversion yourself in a "
               "gst:\"...\" description";
         }
         return source(gst_source(std::move(description), std::move(so)));
       }});
  r.push_back({"synthetic",
               {R::Source},
               "generated frames from a pool (tests, benchmarks)",
               {prop("format", T::Format, "NV12", "pixel format"),
                prop("size", T::Size, "1920x1080", "frame size"),
                prop("frames", T::Integer, "300", "frames to produce")},
               [](ElementArgs& a, ElementRole) -> Result<BuiltElement> {
                 NEAT_ASSIGN_OR_RETURN(PixelFormat f, a.format("format", PixelFormat::NV12));
                 NEAT_ASSIGN_OR_RETURN(auto size, a.size("size", false));
                 if (size.first == 0) size = {1920, 1080};
                 NEAT_ASSIGN_OR_RETURN(std::int64_t frames,
                                       a.integer("frames", a.options().default_frames));
                 if (frames <= 0) return a.fail("frames must be positive");
                 return source(
                     synthetic_source(FrameSpec::image(f, size.first, size.second), frames));
               }});
  r.push_back({"gst",
               {R::Source, R::Sink},
               "gst:\"DESCRIPTION\": a GStreamer pipeline (first: ends in an appsink; last: fed "
               "by an appsrc)",
               {},
               [](ElementArgs& a, ElementRole role) -> Result<BuiltElement> {
                 if (role == ElementRole::Source) {
                   return source(gst_source(a.element().gst, gst_source_options(a.options())));
                 }
                 BuiltElement b;
                 b.sink = gst_appsrc_sink(a.element().gst);
                 return b;
               }});
}

// Stages that convert, resize, crop, normalise, cast, lay out, pack or move frames.
void add_image_stages(std::vector<ElementSpec>& r) {
  r.push_back(
      {"convert",
       {R::Stage},
       "pixel-format conversion (convert_color)",
       {required("format", T::Format, "FORMAT (e.g. RGB)", "the target format"), kColorimetry},
       [](ElementArgs& a, ElementRole) -> Result<BuiltElement> {
         NEAT_ASSIGN_OR_RETURN(PixelFormat f, a.format("format", PixelFormat::RGB));
         NEAT_ASSIGN_OR_RETURN(Colorimetry c, a.colorimetry());
         return stage(convert_stage(f, c));
       }});
  r.push_back({"resize",
               {R::Stage},
               "resize images (interleaved, CHW or planar)",
               {required("size", T::Size, "WIDTHxHEIGHT", "output size"), kInterp},
               [](ElementArgs& a, ElementRole) -> Result<BuiltElement> {
                 NEAT_ASSIGN_OR_RETURN(auto size, a.size("size", true));
                 NEAT_ASSIGN_OR_RETURN(Interpolation interp, a.interpolation());
                 return stage(resize_stage(size.first, size.second, interp));
               }});
  r.push_back({"crop",
               {R::Stage},
               "a crop view (no copy); planar frames start on even coordinates",
               {prop("x", T::Integer, "0", "left column"), prop("y", T::Integer, "0", "top row"),
                required("size", T::Size, "WIDTHxHEIGHT", "crop size")},
               [](ElementArgs& a, ElementRole) -> Result<BuiltElement> {
                 NEAT_ASSIGN_OR_RETURN(std::int64_t x, a.integer("x", 0));
                 NEAT_ASSIGN_OR_RETURN(std::int64_t y, a.integer("y", 0));
                 NEAT_ASSIGN_OR_RETURN(auto size, a.size("size", true));
                 return stage(crop_stage(x, y, size.first, size.second));
               }});
  r.push_back(
      {"normalize",
       {R::Stage},
       "(x * scale - mean) / std per channel into f32/f16/bf16, in place when it can",
       {prop("mean", T::Numbers3, "0,0,0", "per channel, after scale"),
        prop("std", T::Numbers3, "1,1,1", "per channel"),
        prop("scale", T::Number, "1/255", "applied first"),
        prop("dtype", T::Choice, "f32", "output dtype", {"f32", "f16", "bf16"}),
        prop("layout", T::Choice, "chw", "output layout", {"chw", "hwc"})},
       [](ElementArgs& a, ElementRole) -> Result<BuiltElement> {
         NormalizeParams np;
         NEAT_ASSIGN_OR_RETURN(np.scale, a.number("scale", 1.0f / 255.0f));
         NEAT_ASSIGN_OR_RETURN(auto mean, a.numbers3("mean", {0.f, 0.f, 0.f}));
         NEAT_ASSIGN_OR_RETURN(auto stdv, a.numbers3("std", {1.f, 1.f, 1.f}));
         for (std::size_t c = 0; c < 3; ++c) {
           np.mean[c] = mean[c];
           np.std[c] = stdv[c];
         }
         NEAT_ASSIGN_OR_RETURN(
             np.out_dtype,
             a.choice<DType>("dtype", DType::F32,
                             {{"f32", DType::F32}, {"f16", DType::F16}, {"bf16", DType::BF16}}));
         NEAT_ASSIGN_OR_RETURN(
             np.out_layout,
             a.choice<Layout>("layout", Layout::CHW, {{"chw", Layout::CHW}, {"hwc", Layout::HWC}}));
         return stage(normalize_stage(np));
       }});
  r.push_back({"cast",
               {R::Stage},
               "element type conversion (convert_dtype)",
               {required("dtype", T::DType, "DTYPE (e.g. f32)", "the target dtype")},
               [](ElementArgs& a, ElementRole) -> Result<BuiltElement> {
                 NEAT_ASSIGN_OR_RETURN(DType d, a.dtype("dtype", DType::F32));
                 return stage(cast_stage(d));
               }});
  r.push_back({"layout",
               {R::Stage},
               "HWC <-> CHW (to_chw / to_hwc)",
               {required("to", T::Choice, "chw or to=hwc", "the target layout", {"chw", "hwc"})},
               [](ElementArgs& a, ElementRole) -> Result<BuiltElement> {
                 NEAT_ASSIGN_OR_RETURN(
                     Layout l, a.choice<Layout>("to", Layout::None,
                                                {{"chw", Layout::CHW}, {"hwc", Layout::HWC}}));
                 return stage(layout_stage(l));
               }});
  r.push_back(
      {"pack",
       {R::Stage},
       "make strided frames contiguous (contiguous()); packed frames pass through",
       {},
       [](ElementArgs&, ElementRole) -> Result<BuiltElement> { return stage(pack_stage()); }});
  r.push_back({"transfer",
               {R::Stage},
               "bring frames on another device to the CPU (to_cpu_if_needed())",
               {prop("device", T::Choice, "cpu", "the target device", {"cpu"})},
               [](ElementArgs& a, ElementRole) -> Result<BuiltElement> {
                 NEAT_ASSIGN_OR_RETURN(int d, a.choice<int>("device", 0, {{"cpu", 0}}));
                 (void)d;  // only the CPU is a target today
                 return stage(transfer_stage(kCpu));
               }});
}

// The fused preprocess: camera frames to a model's input in one pass.
void add_preprocess_stage(std::vector<ElementSpec>& r) {
  r.push_back(
      {"preprocess",
       {R::Stage},
       "the fused NV12/NV21/I420/YV12 -> resized, normalized CHW model input",
       {prop("size", T::Size, "640x640", "model input size"),
        prop("mean", T::Numbers3, "0,0,0", "per channel, after scale"),
        prop("std", T::Numbers3, "1,1,1", "per channel"),
        prop("scale", T::Number, "1/255", "applied first"),
        prop("dtype", T::Choice, "f32", "output dtype", {"f32", "f16", "bf16"}),
        prop("order", T::Choice, "rgb", "channel order of the output planes", {"rgb", "bgr"}),
        prop("fit", T::Choice, "stretch",
             "stretch to the size, or letterbox: keep the aspect ratio and pad (boxes map back "
             "through the frame's geometry)",
             {"stretch", "letterbox"}),
        prop("pad", T::Number, "114", "letterbox padding, a pixel level 0..255"),
        prop("batch", T::Choice, "false", "add a leading batch dimension: [1, 3, H, W]",
             {"false", "true"}),
        prop("stores", T::Choice, "auto",
             "write the tensor through the caches or around them (streaming stores): auto "
             "follows the host's measured rule; the values are the same either way",
             {"auto", "cached", "streamed"}),
        kInterp, kColorimetry},
       [](ElementArgs& a, ElementRole) -> Result<BuiltElement> {
         PreprocessParams pp;
         NEAT_ASSIGN_OR_RETURN(pp.resize_mode,
                               a.choice<ResizeMode>("fit", ResizeMode::Stretch,
                                                    {{"stretch", ResizeMode::Stretch},
                                                     {"letterbox", ResizeMode::Letterbox}}));
         NEAT_ASSIGN_OR_RETURN(pp.pad_value, a.number("pad", pp.pad_value));
         if (!(pp.pad_value >= 0.f && pp.pad_value <= 255.f)) {
           return a.fail("pad=" + std::to_string(pp.pad_value) +
                         " is not a pixel level from 0 to 255");
         }
         NEAT_ASSIGN_OR_RETURN(pp.batch_dim,
                               a.choice<bool>("batch", false, {{"false", false}, {"true", true}}));
         NEAT_ASSIGN_OR_RETURN(pp.stores, a.choice<StoreMode>("stores", StoreMode::Auto,
                                                              {{"auto", StoreMode::Auto},
                                                               {"cached", StoreMode::Cached},
                                                               {"streamed", StoreMode::Streamed}}));
         NEAT_ASSIGN_OR_RETURN(auto size, a.size("size", false));
         if (size.first > 0) pp.width = size.first, pp.height = size.second;
         NEAT_ASSIGN_OR_RETURN(pp.scale, a.number("scale", pp.scale));
         NEAT_ASSIGN_OR_RETURN(pp.mean, a.numbers3("mean", pp.mean));
         NEAT_ASSIGN_OR_RETURN(pp.std, a.numbers3("std", pp.std));
         NEAT_ASSIGN_OR_RETURN(
             pp.out_dtype,
             a.choice<DType>("dtype", DType::F32,
                             {{"f32", DType::F32}, {"f16", DType::F16}, {"bf16", DType::BF16}}));
         NEAT_ASSIGN_OR_RETURN(
             pp.channel_order,
             a.choice<PixelFormat>("order", PixelFormat::RGB,
                                   {{"rgb", PixelFormat::RGB}, {"bgr", PixelFormat::BGR}}));
         NEAT_ASSIGN_OR_RETURN(pp.interpolation, a.interpolation());
         NEAT_ASSIGN_OR_RETURN(pp.colorimetry, a.colorimetry());
         return stage(preprocess_stage(pp));
       }});
}

// The model and the detections decoded from its output.
void add_inference_stages(std::vector<ElementSpec>& r) {
  r.push_back(
      {"infer",
       {R::Stage},
       "runs a model (ONNX on OpenCV DNN, or TorchScript on libtorch); hands on one of its "
       "outputs (OpenCV: setInput's copy and each output's copy out of the net are recorded "
       "every frame; libtorch: nothing is copied)",
       {required("model", T::Text, "PATH",
                 "the ONNX or TorchScript file (models:NAME is a model generated with the build, "
                 "e.g. models:detector)"),
        prop("output", T::Text, "", "the output to hand on (default: the first)"),
        prop("threads", T::Integer, "0",
             "the engine's thread pool size (process-wide: held while the model lives, restored "
             "after; 0: the machine's hardware threads, the kernel stages keep one)"),
        prop("input-shape", T::Text, "",
             "a TorchScript file's input shape NxCxHxW (e.g. 1x3x640x640), for a .pt that does "
             "not carry it (make_models.py's do)"),
        prop("backend", T::Choice, "auto",
             "the engine: auto (by the file), opencv (ONNX), torch (TorchScript)",
             {"auto", "opencv", "torch"})},
       [](ElementArgs& a, ElementRole) -> Result<BuiltElement> {
         InferOptions o;
         NEAT_ASSIGN_OR_RETURN(o.model.backend,
                               a.choice<ModelBackend>("backend", ModelBackend::Auto,
                                                      {{"auto", ModelBackend::Auto},
                                                       {"opencv", ModelBackend::OpenCv},
                                                       {"torch", ModelBackend::Torch}}));
         auto model = resolve_model_path(a.take("model").value_or(""), o.model.backend);
         if (!model.ok()) return a.fail(model.error());
         o.model.path = std::move(*model);
         o.output = a.take("output").value_or("");
         NEAT_ASSIGN_OR_RETURN(o.model.input_shape, a.shape("input-shape"));
         NEAT_ASSIGN_OR_RETURN(std::int64_t threads, a.integer("threads", 0));
         if (threads < 0 || threads > 1024) return a.fail("threads must be from 0 to 1024");
         o.model.threads = static_cast<int>(threads);
         auto st = infer_stage(std::move(o));
         if (!st.ok()) return a.fail(st.error());
         return stage(std::move(*st));
       }});
  r.push_back(
      {"yolo",
       {R::Stage},
       "decodes a YOLOv8 [1, 4 + classes, anchors] or YOLOv5 [1, anchors, 5 + classes] output "
       "into f32 [N, 6] detections (x1, y1, x2, y2, score, class) in source-frame pixels",
       {prop("conf", T::Number, "0.25", "minimum score"),
        prop("iou", T::Number, "0.45", "NMS overlap threshold"),
        prop("max", T::Integer, "300", "most detections per frame"),
        prop("classes", T::Text, "", "keep only these class ids, e.g. 0,2 (default: all)"),
        prop("num_classes", T::Integer, "0",
             "the class count the model must have (0: from its output)"),
        prop("layout", T::Choice, "auto", "the output's layout", {"auto", "v8", "v5"}),
        prop("agnostic", T::Choice, "false", "one NMS over all classes", {"false", "true"})},
       [](ElementArgs& a, ElementRole) -> Result<BuiltElement> {
         YoloParams p;
         NEAT_ASSIGN_OR_RETURN(p.confidence, a.number("conf", p.confidence));
         NEAT_ASSIGN_OR_RETURN(p.iou, a.number("iou", p.iou));
         NEAT_ASSIGN_OR_RETURN(std::int64_t max, a.integer("max", p.max_detections));
         if (max <= 0 || max > 100000) return a.fail("max must be from 1 to 100000");
         p.max_detections = static_cast<int>(max);
         NEAT_ASSIGN_OR_RETURN(std::int64_t nc, a.integer("num_classes", 0));
         if (nc < 0 || nc > 1000000) return a.fail("num_classes must be from 0 to 1000000");
         p.num_classes = static_cast<int>(nc);
         if (auto list = a.take("classes"); list && !list->empty()) {
           std::string_view rest = *list;
           while (!rest.empty()) {
             const auto comma = rest.find(',');
             const std::string_view item = rest.substr(0, comma);
             int id = -1;
             auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), id);
             if (ec != std::errc() || ptr != item.data() + item.size() || id < 0) {
               return a.fail("classes=" + *list + ": '" + std::string(item) +
                             "' is not a class id (a number from 0)");
             }
             p.classes.push_back(id);
             rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
           }
         }
         NEAT_ASSIGN_OR_RETURN(p.layout, a.choice<YoloLayout>("layout", YoloLayout::Auto,
                                                              {{"auto", YoloLayout::Auto},
                                                               {"v8", YoloLayout::V8},
                                                               {"v5", YoloLayout::V5}}));
         NEAT_ASSIGN_OR_RETURN(
             p.class_agnostic,
             a.choice<bool>("agnostic", false, {{"false", false}, {"true", true}}));
         auto st = yolo_stage(std::move(p));
         if (!st.ok()) return a.fail(st.error());
         return stage(std::move(*st));
       }});
}

// Stages that shape the graph: an observer and the branch point.
void add_graph_stages(std::vector<ElementSpec>& r) {
  r.push_back(
      {"inspect",
       {R::Stage},
       "hands every frame on unchanged",
       {},
       [](ElementArgs&, ElementRole) -> Result<BuiltElement> { return stage(inspect_stage()); }});
  r.push_back({"tee",
               {R::Stage},
               "a named branch point, as in gst-launch: `SOURCE ! tee name=t ! ... SINK  t. ! "
               "... SINK`; every branch gets the same frames, shared read-only (no copy); "
               "any source or stage can also start a branch by its name (`NAME. ! ...`)",
               {},
               [](ElementArgs& a, ElementRole) -> Result<BuiltElement> {
                 return a.fail("a tee is a branch point, not a node (declare_pipeline handles it)");
               }});
}

// Sinks: frames handed to the application.
void add_sinks(std::vector<ElementSpec>& r) {
  r.push_back({"appsink",
               {R::Sink},
               "hands frames to the application (neat run pulls them)",
               {prop("capacity", T::Integer, std::to_string(AppSinkOptions{}.capacity),
                     "frames it queues for the application"),
                prop("overflow", T::Choice, "block",
                     "when full: hold the graph back or drop "
                     "the oldest frame",
                     {"block", "drop-oldest"})},
               [](ElementArgs& a, ElementRole) -> Result<BuiltElement> {
                 NEAT_ASSIGN_OR_RETURN(
                     std::int64_t cap,
                     a.integer("capacity", static_cast<std::int64_t>(AppSinkOptions{}.capacity)));
                 if (cap <= 0) return a.fail("capacity must be positive");
                 if (cap > (1 << 16)) return a.fail("capacity must be at most 65536");
                 NEAT_ASSIGN_OR_RETURN(Overflow overflow,
                                       a.choice<Overflow>("overflow", Overflow::Block,
                                                          {{"block", Overflow::Block},
                                                           {"drop-oldest", Overflow::DropOldest}}));
                 BuiltElement b;
                 b.appsink = AppSink::create(
                     {.capacity = static_cast<std::size_t>(cap), .overflow = overflow});
                 b.sink = b.appsink;
                 return b;
               }});
}

// Properties every element takes.
void add_common_properties(std::vector<ElementSpec>& r) {
  for (ElementSpec& e : r) {
    e.properties.push_back(prop("name", T::Text, "",
                                "the node's name (default: the element's "
                                "name, numbered when repeated)"));
    if (e.has_role(R::Stage) && e.name != "tee") {
      e.properties.push_back(prop("policy", T::Choice, "", "the policy of the input edge",
                                  {"strict", "trace", "silent"}));
      e.properties.push_back(prop("max-latency", T::Duration, "0",
                                  "drop a frame older than this since its capture before the "
                                  "stage (oldest first, counted per stream as late); 0: none"));
    }
    if (e.has_role(R::Source)) {
      e.properties.push_back(prop("stall-timeout", T::Duration, "5s",
                                  "no frame for this long after the first: the stream is "
                                  "stalled and its source restarted; 0: no watchdog"));
      e.properties.push_back(prop("restart", T::Choice, "live",
                                  "restart the source when its stream goes down (error, stall, "
                                  "end of a live stream): live sources only, always, or never "
                                  "(the run fails fast)",
                                  {"live", "always", "never"}));
      e.properties.push_back(prop("backoff-min", T::Duration, "0.5s",
                                  "the wait before the first restart attempt; doubled per "
                                  "failed attempt (with up to 25% jitter) up to backoff-max"));
      e.properties.push_back(
          prop("backoff-max", T::Duration, "30s", "the longest wait between restart attempts"));
      e.properties.push_back(prop("rate", T::Number, "0",
                                  "the most frames per second to take (by timestamp; the rest "
                                  "are skipped and counted); 0: all"));
    }
  }
}

std::vector<ElementSpec> make_registry() {
  std::vector<ElementSpec> r;
  add_sources(r);
  add_image_stages(r);
  add_preprocess_stage(r);
  add_inference_stages(r);
  add_graph_stages(r);
  add_output_stages(r);
  add_sinks(r);
  add_output_sinks(r);
  add_common_properties(r);
  return r;
}

std::string property_line(const PropertySpec& p) {
  std::string type(to_string(p.type));
  if (p.type == T::Choice) {
    type.clear();
    for (const std::string& c : p.choices)
      type += (type.empty() ? "" : "|") + c;
  }
  std::string line = "  " + p.name + "=" + type;
  if (line.size() < 34) line.resize(34, ' ');
  line += p.required ? "required" : (p.default_value.empty() ? "" : "default " + p.default_value);
  if (line.size() < 54) line.resize(54, ' ');
  return line + "  " + p.help + "\n";
}

}  // namespace

const PropertySpec* ElementSpec::property(std::string_view key) const noexcept {
  for (const PropertySpec& p : properties) {
    if (p.name == key) return &p;
  }
  return nullptr;
}

bool ElementSpec::has_role(ElementRole r) const noexcept {
  return std::find(roles.begin(), roles.end(), r) != roles.end();
}

const std::vector<ElementSpec>& pipeline_elements() {
  static const std::vector<ElementSpec> registry = make_registry();
  return registry;
}

const ElementSpec* find_pipeline_element(std::string_view name) noexcept {
  for (const ElementSpec& e : pipeline_elements()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::string element_names(ElementRole r) {
  std::string out;
  for (const ElementSpec& e : pipeline_elements()) {
    if (!e.has_role(r)) continue;
    out += (out.empty() ? "" : ", ") + (e.name == "gst" ? std::string("gst:\"...\"") : e.name);
  }
  return out;
}

std::string describe_elements() {
  std::string out;
  for (ElementRole r : {R::Source, R::Stage, R::Sink}) {
    out += r == R::Source ? "Sources (first):\n" : r == R::Stage ? "Stages:\n" : "Sinks (last):\n";
    for (const ElementSpec& e : pipeline_elements()) {
      if (!e.has_role(r)) continue;
      std::string line = "  " + e.name;
      if (line.size() < 14) line.resize(14, ' ');
      out += line + e.summary + "\n";
    }
  }
  out += "Details: neat elements NAME\n";
  return out;
}

std::string describe_element(const ElementSpec& e) {
  std::string roles;
  for (ElementRole r : e.roles)
    roles += (roles.empty() ? "" : ", ") + std::string(to_string(r));
  std::string out = e.name + " (" + roles + "): " + e.summary + "\n";
  out += e.properties.empty() ? "" : "Properties:\n";
  for (const PropertySpec& p : e.properties)
    out += property_line(p);
  return out;
}

}  // namespace neat
