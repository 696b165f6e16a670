// The elements of the pipeline syntax (pipeline.hpp) as one registry: each
// element's name, roles (source, stage, sink), summary, properties (types,
// defaults, help) and factory. The parser checks every element against it,
// its errors name what an element takes from it, and `neat elements` prints
// it: adding an element is one entry in elements.cpp.
//
// Ownership: the registry is built once, read-only, and lives for the process.
// Threading: reading it is thread-safe.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "neat/contract/conversion.hpp"
#include "neat/contract/error.hpp"
#include "neat/contract/image.hpp"
#include "neat/kernels/preprocess.hpp"
#include "neat/stages/appsink.hpp"
#include "neat/stages/sink.hpp"
#include "neat/stages/source.hpp"
#include "neat/stages/stage.hpp"
#include "neat/stages/streams.hpp"
#include "neat/stages/track.hpp"

namespace neat {

/// One element as written: its name and key=value properties.
struct PipelineElement {
  std::string name;  ///< "preprocess", or "gst" for gst:"..."
  std::string gst;   ///< the GStreamer description of gst:"..."
  std::vector<std::pair<std::string, std::string>> properties;
  std::size_t offset = 0;  ///< where the element's name starts in the text
  std::size_t length = 0;
  /// Set on the first element of a branch (`NAME. ! element`): it takes the
  /// frames of the element (or tee) named NAME. Where `NAME.` stands in the text.
  std::string branch_from;
  std::size_t branch_offset = 0;
  std::size_t branch_length = 0;
  /// Set on the last element of a chain that links into an element named
  /// elsewhere (`element ! NAME.`): its frames go to NAME (a node fed by
  /// several streams). Where `NAME.` stands in the text.
  std::string link_to;
  std::size_t link_offset = 0;
  std::size_t link_length = 0;
  /// The element starts a chain of its own (the first element, or one after
  /// `! NAME.`): a source, or a node fed only by links into it.
  bool chain_start = false;
};

struct PipelineOptions {
  std::string graph_name = "pipeline";
  std::optional<ConversionPolicy> policy;  ///< the graph's policy
  /// Frames of the `default` source (videotestsrc num-buffers).
  std::int64_t default_frames = 300;
  /// GStreamer sources (gst:, file, default): how long build() waits for the
  /// first frame, how the user sets it (named in the timeout's message), and a
  /// flag polled while waiting (GstSourceOptions).
  std::chrono::milliseconds first_frame_timeout = std::chrono::seconds(20);
  std::string timeout_setting = "PipelineOptions::first_frame_timeout";
  std::function<bool()> cancelled;
  /// Every source's stream supervision unless its stall-timeout=, restart=
  /// or rate= say otherwise (`neat run --stall-timeout`, `--restart`).
  SourceOptions streams;
  /// Where the pipeline's track stages post track starts and ends for its
  /// message sinks (mqtt, kafka); declare_pipeline makes one when null.
  std::shared_ptr<TrackJournal> tracks;
  /// Named in the messages of mqtt and kafka sinks: declare_pipeline sets
  /// it to the model= of the pipeline's infer element.
  std::string model_name;
};

/// "pipeline: <what> (column N)\n  <text>\n  <caret>": an InvalidArgument error
/// pointing at [offset, offset + length) of the pipeline text.
Error pipeline_error(std::string_view text, std::size_t offset, std::size_t length,
                     const std::string& what);

enum class ElementRole : std::uint8_t { Source, Stage, Sink };
std::string_view to_string(ElementRole r) noexcept;

enum class PropertyType : std::uint8_t {
  Integer,      ///< "300"
  Number,       ///< "0.5"
  Numbers3,     ///< "0.485,0.456,0.406"
  Size,         ///< "640x640"
  Choice,       ///< one of PropertySpec::choices
  Text,         ///< any text ("..." for spaces)
  Format,       ///< GRAY8 RGB BGR RGBA BGRA NV12 NV21 I420 YV12
  DType,        ///< u8 i8 u16 i16 u32 i32 i64 f16 bf16 f32 f64
  Colorimetry,  ///< bt601 | bt709 | bt2020, each with -full or -limited
  Duration,     ///< "5s", "250ms", "0.5" (seconds)
};
std::string_view to_string(PropertyType t) noexcept;

struct PropertySpec {
  std::string name;
  PropertyType type = PropertyType::Text;
  bool required = false;
  std::string default_value;         ///< as text; empty: none
  std::vector<std::string> choices;  ///< PropertyType::Choice
  std::string placeholder;           ///< the value in "needs KEY=...", e.g. "PATH"
  std::string help;
};

/// Typed access to one element's properties; every error points at the
/// element in the pipeline text. Each property is taken once.
class ElementArgs {
 public:
  ElementArgs(std::string_view text, const PipelineElement& element,
              const PipelineOptions& options);
  const PipelineElement& element() const noexcept { return el_; }
  const PipelineOptions& options() const noexcept { return options_; }
  Error fail(const std::string& what) const;
  /// A stage's own error pointed at this element: its code, place and fixes kept.
  Error fail(const Error& cause) const;

  std::optional<std::string> take(const std::string& key);
  bool has(const std::string& key) const;
  /// An error naming the first property no getter took.
  Status done() const;
  Result<std::int64_t> integer(const std::string& key, std::int64_t fallback);
  Result<float> number(const std::string& key, float fallback);
  Result<std::array<float, 3>> numbers3(const std::string& key, std::array<float, 3> fallback);
  /// {0, 0} when absent and not required.
  Result<std::pair<std::int64_t, std::int64_t>> size(const std::string& key, bool required);
  /// "1x3x640x640": positive extents separated by 'x' (empty when absent).
  Result<std::vector<std::int64_t>> shape(const std::string& key);
  template <class T>
  Result<T> choice(const std::string& key, T fallback,
                   std::initializer_list<std::pair<const char*, T>> options);
  Result<PixelFormat> format(const std::string& key, PixelFormat fallback);
  Result<DType> dtype(const std::string& key, DType fallback);
  Result<Colorimetry> colorimetry();
  Result<Interpolation> interpolation();
  Result<std::optional<ConversionPolicy>> policy();
  /// "5s", "250ms" or "0.5" (seconds) as milliseconds; >= 0.
  Result<std::chrono::milliseconds> duration(const std::string& key,
                                             std::chrono::milliseconds fallback);
  /// A source's stall-timeout=, restart= and rate= over the pipeline's defaults.
  Result<SourceOptions> source_options();

 private:
  Result<float> parse_float(const std::string& key, const std::string& v) const;
  std::string_view text_;
  const PipelineElement& el_;
  const PipelineOptions& options_;
  std::vector<bool> used_;
};

/// What an element's factory makes: a source, a stage or a sink.
struct BuiltElement {
  std::unique_ptr<Source> source;
  std::unique_ptr<Stage> stage;
  std::shared_ptr<Sink> sink;
  std::shared_ptr<AppSink> appsink;  ///< set when the sink is an appsink
};

struct ElementSpec {
  std::string name;  ///< "resize"; "gst" stands for gst:"..."
  std::vector<ElementRole> roles;
  std::string summary;
  /// Its own properties; every element also takes name=, stages policy=.
  std::vector<PropertySpec> properties;
  /// Builds the element in `role` from its properties.
  std::function<Result<BuiltElement>(ElementArgs&, ElementRole)> make;

  const PropertySpec* property(std::string_view key) const noexcept;
  bool has_role(ElementRole r) const noexcept;
};

/// Every element, sources first, then stages, then sinks.
const std::vector<ElementSpec>& pipeline_elements();
/// The element named `name`, or nullptr.
const ElementSpec* find_pipeline_element(std::string_view name) noexcept;
/// "convert, resize, ..." of the elements that can take role `r`.
std::string element_names(ElementRole r);
/// What `neat elements` prints: every element with its summary.
std::string describe_elements();
/// What `neat elements NAME` prints: roles, summary, and every property with
/// its type, default and help.
std::string describe_element(const ElementSpec& element);

// ---- implementation -----------------------------------------------------------

template <class T>
Result<T> ElementArgs::choice(const std::string& key, T fallback,
                              std::initializer_list<std::pair<const char*, T>> options) {
  auto v = take(key);
  if (!v) return fallback;
  std::string names;
  for (const auto& [n, value] : options) {
    if (*v == n) return value;
    names += (names.empty() ? "" : ", ") + std::string(n);
  }
  return fail(key + "=" + *v + " is not one of: " + names);
}

}  // namespace neat
