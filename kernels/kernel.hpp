// The common shape of every conversion kernel (color, dtype, layout, resize,
// normalize, preprocess): ConversionOptions (contract/neat_tensor.hpp), and
// run_conversion(), which takes a
// source, a freshly allocated destination and a kernel, and runs the kernel
// through the copy gate (admit under the policy, time, record) with both
// tensors mapped. Kernels written on top of it cannot copy without the gate
// seeing it. Stages use the same options to convert implicitly.
//
// Threading: as the kernels: each call is independent; the destination is
// private to the call until it returns.
#pragma once

#include <exception>
#include <new>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>

#include "neat/contract/copy_gate.hpp"
#include "neat/contract/mapping.hpp"
#include "neat/contract/neat_tensor.hpp"

namespace neat {

/// What a conversion is, for the gate and the trace.
struct ConversionSpec {
  ConversionKind kind = ConversionKind::Convert;
  ConversionReason reason = ConversionReason::PixelFormat;
  std::string_view operation;  ///< the API name, e.g. "convert_color"
  std::string_view fix;        ///< for implicit refusals: the explicit call to make
  std::string_view detail;     ///< for the trace (e.g. the colour standard); static or outliving
};

/// Runs `kernel(const Mapping& in, const Mapping& out) -> Status` through the
/// gate. `dst` must be freshly allocated (held only here). Returns `dst`
/// (writable while the caller holds it alone) or the refusal / kernel error.
template <class Kernel>
Result<NeatTensor> run_conversion(const NeatTensor& src, NeatTensor dst, const ConversionSpec& spec,
                                  const ConversionOptions& options, std::source_location where,
                                  Kernel&& kernel);

/// Allocation options for a kernel's destination (not zero-filled: kernels write every byte).
inline AllocOptions destination_alloc(const ConversionOptions& o) {
  return AllocOptions{false, o.allocator};
}
inline ImageAllocOptions destination_image_alloc(const ConversionOptions& o,
                                                 Layout layout = Layout::None) {
  ImageAllocOptions a;
  a.zero_fill = false;
  a.layout = layout;
  a.allocator = o.allocator;
  return a;
}

/// A range of rows to process; see parallel_rows().
class RowBody {
 public:
  virtual void run(std::int64_t begin, std::int64_t end) const = 0;

 protected:
  ~RowBody() = default;
};

/// Splits [0, rows) into `threads` stripes run in parallel on OpenCV's thread
/// pool; threads <= 1 runs everything on the calling thread.
void parallel_rows(std::int64_t rows, int threads, const RowBody& body);

/// As above for any callable `f(begin, end)`; the adapter lives on the stack.
template <class F>
void parallel_rows(std::int64_t rows, int threads, F&& f) {
  struct Body final : RowBody {
    explicit Body(F& fn) : fn_(fn) {}
    void run(std::int64_t b, std::int64_t e) const override { fn_(b, e); }
    F& fn_;
  } body(f);
  parallel_rows(rows, threads, static_cast<const RowBody&>(body));
}

// ---- implementation -----------------------------------------------------------

template <class Kernel>
Result<NeatTensor> run_conversion(const NeatTensor& src, NeatTensor dst, const ConversionSpec& spec,
                                  const ConversionOptions& options, std::source_location where,
                                  Kernel&& kernel) {
  CopyRequest request;
  request.kind = spec.kind;
  request.reason = spec.reason;
  request.explicit_call = !options.implicit;
  request.bytes = dst.nbytes();
  request.bytes_read = src.nbytes();
  request.source = src.description();
  request.destination = dst.description();
  request.where = where;
  request.policy = options.policy;
  request.operation = options.requested_by.empty() ? spec.operation : options.requested_by;
  request.fix = spec.fix;
  request.detail = spec.detail;
  NEAT_ASSIGN_OR_RETURN(NeatTensor out, std::move(dst).make_writable());
  // The same frame: its number, timestamps and geometry (kernels that move
  // pixels update the geometry).
  if (out.meta().empty()) out.set_meta(src.meta());
  {
    NEAT_ASSIGN_OR_RETURN(Mapping in, src.map(MapMode::Read));
    NEAT_ASSIGN_OR_RETURN(Mapping wr, out.map(MapMode::Write));
    NEAT_RETURN_IF_ERROR(run_through_gate(request, [&]() -> Status {
      // A kernel's working buffers (row caches, tables, OpenCV's scratch) grow
      // on first use; running out of memory there is a typed error, not a throw
      // out of a function that returns one.
      try {
        return kernel(in, wr);
      } catch (const std::bad_alloc&) {
        return resource_exhausted(std::string(request.operation) + " of " + src.to_string() +
                                  ": out of memory for its working buffers (the output, " +
                                  std::to_string(request.bytes) +
                                  " bytes, was allocated); free memory or use a smaller output");
      } catch (const std::exception& e) {
        return internal_error(std::string(request.operation) + " of " + src.to_string() +
                              ": the kernel threw: " + e.what());
      }
    }));
  }
  return out;
}

}  // namespace neat
