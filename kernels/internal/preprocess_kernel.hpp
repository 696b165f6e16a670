// Internal (not installed): the SIMD engine behind preprocess(). The public
// function in kernels/preprocess.cpp validates, builds a PreprocessJob and
// runs preprocess_rows() over stripes of output rows; the engine is written
// once with Highway and dispatched at run time to the best instruction set
// the CPU has (kernels/preprocess_simd.cpp).
//
// The sampling is separable and defined on the full-resolution grid of the
// frame, as if its chroma were first upsampled by replication (what
// cv::cvtColor does before a cv::resize): every output pixel samples Y, U and
// V at the same source position, each plane through its own tap tables
// (ResampleAxis), and YUV -> RGB runs once per output pixel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "neat/contract/dtype.hpp"
#include "neat/kernels/internal/yuv_planes.hpp"
#include "neat/kernels/preprocess.hpp"
#include "neat/kernels/yuv_matrix.hpp"

namespace neat::detail {

/// Area's fixed-point vertical pass (preprocess_box-inl.h) for one output
/// row: the source rows [full_first, full_first + n_full) of full weight
/// summed exactly, times 2^f; each partial row part[i] (at the row's edges)
/// times b[i] / 256, rounded: a sum in units of 2^-f level below 2^15, where
/// `units` of it make one level of the weighted mean. No rows: no plan (the
/// rows are taken as they come). `ahead`: from 1.5 rows down, how many rows on
/// the next output row's rows start (0: none, or no next row), prefetched
/// as these are summed.
struct RowSumPlan {
  std::int32_t full_first = 0;
  std::int16_t n_full = 0, n_part = 0;
  std::int32_t part[2] = {};
  std::int16_t b[2] = {};
  int f = 0;
  float units = 0.f;
  std::int32_t ahead = 0;
};

/// One axis of a separable resampling: output sample o is
/// sum over t < taps of weight[t * stride + o] * source[first[o] + t].
/// Tables are padded to `stride` (a multiple of every vector width) with
/// first = 0 and weight = 0, so whole vectors may be read past `count`; a tap
/// with weight 0 may point one sample past the source (readers pad).
struct ResampleAxis {
  std::int64_t count = 0;   ///< output samples
  std::int64_t source = 0;  ///< stored source samples
  std::int64_t stride = 0;  ///< padded table length
  int taps = 0;
  std::vector<std::int32_t> first;
  std::vector<float> weight;
  /// The same weights output-major, each output's in a row of by_output_taps
  /// (8 or 16; 0 and empty beyond 16 taps): where the float path's samples
  /// lie too far apart for lane permutes, AVX2 loads each output's taps as
  /// one or two vectors from `first` instead of gathering them tap by tap.
  int by_output_taps = 0;
  std::vector<float> by_output;
  /// A periodic pattern (0: none): outputs come in groups of group_out
  /// (1 or 2) that read group_in (1..4) source samples each, group g reading
  /// [g * group_in, (g + 1) * group_in), output phase p weighting sample q
  /// with lane_weight[p][q]. Exact ratios give one: luma 1920 -> 640 is
  /// 1 output per 3 samples, its chroma on the full-resolution grid 2 per 3.
  int group_out = 0, group_in = 0;
  float lane_weight[2][4] = {};
  bool lane_used[4] = {};  ///< lane q has a non-zero weight in some phase
  /// Per output: the same taps and weights as the output before (a resampled
  /// row may be reused).
  std::vector<std::uint8_t> same_as_previous;
  /// Every output takes one stored sample with weight 1 (nearest; bilinear at
  /// an odd integer ratio, whose outputs fall on samples): the horizontal
  /// pass picks bytes, with no multiply.
  bool picks = false;
  /// Picks in a periodic pattern whose 16 outputs (a vector) read at most 64
  /// bytes (0: not so): vector v takes the pick_span bytes at v x pick_span,
  /// its output i byte pick_base[i] of them (plus the channel), with one
  /// AVX-512 VBMI permute. 1080p -> 640 bilinear: luma 48 bytes (every third),
  /// NV12 chroma 48 (two outputs per three UV pairs).
  int pick_span = 0;
  std::int32_t pick_base[16] = {};
  /// The pattern is a period of 16 outputs found from the picks alone (no
  /// group pattern: 720p -> 512 nearest, 2.5 samples an output), which only
  /// the fused nearest rows and the pattern picks take.
  bool pick_period = false;
  /// The most source samples a block of 4, 8 or 16 consecutive outputs
  /// (starting at a multiple of the block) reads, taps included: the window
  /// a vector of outputs can take its samples from with lane permutes.
  std::int64_t window[3] = {};
  /// The byte-shuffle tables of the blocks path (preprocess_simd.cpp), for
  /// rows whose samples are `step` bytes apart, channel c being byte c of a
  /// sample (1: a plane of its own; 2: the interleaved UV plane, or a row of
  /// 16-bit sums, low byte first; 4: 16-bit sums of the UV plane). Outputs
  /// come in blocks of 4: block b reads the 16 bytes at block_base[b] of a
  /// row; pass p (taps 2p and 2p + 1) picks each output's two samples as
  /// 16-bit lanes with shuffle[channel] (0x80: no sample) and weighs them with
  /// pair_weight, in 1/32767. When some block's taps do not fit in 16 bytes
  /// (large ratios) and each output has one tap pair, `gather`: lane i of
  /// block b (output o) is the 4 bytes at lane_base[o] instead. `blocks` is
  /// false when neither applies (large area ratios); the other path runs then.
  bool blocks = false;
  bool gather = false;
  int step = 1;
  int passes = 0;
  std::int64_t block_count = 0;  ///< stride / 4 (padding blocks read nothing)
  std::vector<std::int32_t> block_base;
  std::vector<std::int32_t> lane_base;  ///< gather: per output
  /// Blocks 32 bytes wide, where the 16-byte blocks do not fit (x86 without
  /// AVX-512 VBMI takes them in place of a gather, or of the taps output by
  /// output; empty where some block's taps do not fit in 32 bytes): block
  /// b reads the 16 bytes at wide_base[b] and the 16 after them, and pass p
  /// picks its pairs from the first with shuffle_wide[0][channel], from the
  /// second with shuffle_wide[1][channel] (0x80: not from that one), ORed;
  /// laid out as `shuffle`.
  std::vector<std::int32_t> wide_base;
  std::vector<std::uint8_t> shuffle_wide[2][4];
  /// The byte-permute tables for CPUs with AVX-512 VBMI (any number of taps):
  /// 16 outputs (one vector) read their samples from `windows` (1, 2 or 4;
  /// 0: the tables do not apply) windows of 128 bytes at window_base, an
  /// equal share of the outputs from each; permute[channel] gives each
  /// output's samples of pass p (pass-major, 64 bytes per vector) as the low
  /// bytes of 16-bit lanes, weighed with pair_weight.
  /// Each window starts on a 64-byte line of the row where it still holds
  /// its taps, else at its first tap's byte.
  int windows = 0;
  std::vector<std::int32_t> window_base;  ///< 4 per vector
  std::vector<std::uint8_t> permute[4];
  /// permute as word indices (each lane's byte halved): the word permutes
  /// of 16-bit samples and of UV pairs.
  std::vector<std::uint16_t> permute_words[4];
  /// Picks whose every vector of 16 outputs reads at most 64 bytes (empty:
  /// not so; 720p -> 416 nearest, 3.08 samples an output): vector v loads
  /// the 64 bytes at span_base[v] (inside the row) and takes output i's
  /// sample from byte span_permute[channel][v * 64 + 4 i] of them, one
  /// AVX-512 VBMI permute per channel. Spans start on a 64-byte line of
  /// the row where they still hold their samples (as the windows).
  std::vector<std::int32_t> span_base;
  std::vector<std::uint8_t> span_permute[4];
  /// Up to 8 taps (not picks) where every vector of 16 outputs reads at
  /// most 64 bytes (empty: not so): vector v loads the 64 bytes at
  /// pair_span_base[v] (inside the row), and pass p takes output i's two
  /// samples from bytes pair_span_permute[channel][(p * vectors + v) * 64 +
  /// 4 i] and [... + 4 i + 2] of them into the low bytes of 16-bit lanes
  /// (as `shuffle` lays them out), one AVX-512 VBMI permute per vector,
  /// pass and channel; weighed with pair_weight. Placed as span_base.
  std::vector<std::int32_t> pair_span_base;
  std::vector<std::uint8_t> pair_span_permute[4];
  std::vector<std::uint8_t> shuffle[4];   ///< pass-major, 16 bytes per block
  std::vector<std::int16_t> pair_weight;  ///< pass-major, 8 per block
  /// The pair weights output by output, each output's taps in order in a row
  /// of q_taps (4, 8, 16, 32 or 64; 0 and empty beyond 64 taps, and for
  /// nearest): on AVX2 (and AVX-512 without VBMI), rows whose taps fit
  /// neither the blocks, a gather nor the wide blocks, and rows of 16-bit
  /// sums; with VBMI,
  /// rows of more than 16 taps or that no permute window fits: each output's
  /// samples are loaded from `first` (one to eight 16-element vectors) and
  /// weighed in multiply-adds (preprocess_by_output-inl.h).
  int q_taps = 0;
  std::vector<std::int16_t> by_output_q;
  /// q_taps 4: the same weights as ByOutputRow's UV pairs load them, 16 at
  /// a time: per 8 outputs from o, for i < 4, output o + i's 4 weights
  /// twice, then o + i + 4's twice. Empty for other q_taps.
  std::vector<std::int16_t> by_output_twice;
  /// Area: each output row's plan for the fixed-point vertical pass
  /// (plan_row_sums); empty for the other samplings.
  std::vector<RowSumPlan> row_sums;
};

/// Nearest: OpenCV's INTER_NEAREST source index floor(o * grid / count), one
/// tap of weight 1 (chroma: the stored sample of the luma index).
enum class Sampling : std::uint8_t { Bilinear, Area, Nearest };

/// Fills `axis` for `count` outputs over a full-resolution grid of `grid`
/// samples stored as grid >> shift samples (shift 0: luma; 1: 4:2:0 chroma,
/// each stored sample standing for two grid samples, as an upsampling by
/// replication would place it). Bilinear: OpenCV's INTER_LINEAR mapping on
/// the grid, s = (o + 0.5) * grid / count - 0.5, clamped at the edges. Area:
/// the average of the grid interval [o * r, (o + 1) * r), r = grid / count,
/// partial samples weighted by their overlap (OpenCV's INTER_AREA); bilinear
/// when enlarging (r < 1). `step`: the bytes between stored samples of a row
/// (1, or 2 for an interleaved UV plane), for the blocks path's tables.
/// Defined in kernels/preprocess_axis.cpp.
void build_axis(ResampleAxis& axis, std::int64_t count, std::int64_t grid, int shift,
                Sampling sampling, int step = 1);

/// Fills axis.row_sums from its taps (build_axis does, for area).
void plan_row_sums(ResampleAxis& axis);

/// Whether the tables-free rows (BoxSums16, XBoxRows, XPickRow) have
/// vectors for g = k x step bytes or sums per output (k samples a step apart).
constexpr bool fits_without_tables(int g) {
  return g == 1 || g == 2 || g == 3 || g == 4 || g == 6 || g == 12;
}

struct PreprocessJob : YuvPlanes {  // the source planes
  // Resampling of each plane to box_w x box_h.
  const ResampleAxis* luma_x = nullptr;
  const ResampleAxis* luma_y = nullptr;
  const ResampleAxis* chroma_x = nullptr;
  const ResampleAxis* chroma_y = nullptr;
  /// Area with many vertical taps (luma too: bilinear whose two vertical taps
  /// weigh half each, at an even ratio): the horizontal resampling again, for
  /// rows of 16-bit sums of source rows (luma: step 2; chroma: step 4 when
  /// interleaved, 2 when planar); nullptr when not used.
  const ResampleAxis* luma_sum_x = nullptr;
  const ResampleAxis* chroma_sum_x = nullptr;
  /// Area: where the sums are taken as 16-bit samples (SumsAsWords: the word
  /// permutes of VBMI, or output by output on AVX2), each output row's
  /// partial rows are weighed into its sum too (the fixed-point vertical
  /// pass, preprocess_box-inl.h), and the row is resampled once.
  bool weigh_rows = false;
  /// 2, 3, 4, 6 or 12 when every output is the plain mean of a box_k x box_k block of
  /// luma and of the box_k/2 x box_k/2 chroma under it (the exact-box path);
  /// 0 otherwise.
  int box_k = 0;
  /// The chroma under the box is a box too (box_k even): box_k 3 leaves it
  /// (a 1.5x area) to the blocks path.
  bool box_chroma = false;
  /// Area whose horizontal axis alone is an exact box (its vertical one is
  /// not): the samples per output of luma and of chroma (0: the tables), for
  /// the blocks path's rows summed without tables (XBoxRows).
  int luma_x_box = 0, chroma_x_box = 0;
  /// Nearest at an integer ratio across, or bilinear at an odd one (its
  /// outputs fall on samples): the stored samples between the picks of luma
  /// and of chroma (0: the tables), for XPickRow.
  int luma_x_pick = 0, chroma_x_pick = 0;
  /// Bilinear at 4x or 6x both ways (720p -> 320 letterboxed; 1080p -> 320
  /// letterboxed, 4K -> 640): 4 or 6 when each luma output is the mean of
  /// the 2 x 2 samples the two rows luma_y names and luma_x.first[0] + k o
  /// and the one after give, and each chroma output the mean of the 2 x 2
  /// under them (4x, as box_k 4's) or the one sample under them (6x): the
  /// one-pass rows (BoxRowFused); 0 otherwise. The other fields stay as
  /// bilinear's, for targets without the one-pass rows.
  int pair_box = 0;
  /// Bilinear at an even ratio across (4x, 6x, 12x; chroma 2x, 6x): each
  /// output weighs the pick and the sample after it by half each (XPickRow's
  /// pairs).
  bool luma_x_pair = false, chroma_x_pair = false;
  /// Bilinear or area whose content is as wide as the frame (720p
  /// letterboxed into 1280, 640x480 into 640): output x reads luma sample x
  /// alone, so that a row of one tap down is read by the final pass straight
  /// from the frame's bytes (RowTaps::bytes), with no resampled row between.
  bool luma_x_identity = false;
  // Output: three planes of out_w x out_h (CHW), the content at (box_x, box_y).
  std::int64_t out_w = 0, out_h = 0;
  std::int64_t box_x = 0, box_y = 0, box_w = 0, box_h = 0;
  DType out_dtype = DType::F32;  ///< F32, F16 or BF16
  std::byte* planes[3] = {};
  int r_plane = 0, b_plane = 2;  ///< the output planes holding R and B (G is plane 1)
  float a[3] = {}, b[3] = {};    ///< per output plane: out = rgb * a + b
  float pad[3] = {};             ///< per output plane, already normalized
  /// a and b the same in every plane, a > 0 and b >= 0 (scale 1/255 and no
  /// mean, as most detectors take): the final pass of the blocks path and
  /// of the one-pass boxes folds a into its row weights and b into its luma
  /// (Conv::Scaled in kernels/preprocess_simd.cpp).
  bool uniform_affine = false;
  /// The colour standard: float coefficients for bilinear and area; nearest
  /// uses the integer ones (convert_color's formula, kYuvShift) so that its
  /// values equal the unfused chain's exactly.
  const YuvToRgb* yuv = nullptr;
  bool nearest = false;
  /// Store the output with streaming (non-temporal) stores: set when it is
  /// larger than StorePlan::stream_above, where it would not be in the
  /// caches by the time the next call writes it; writing it then skips
  /// reading every destination line first (about 30% of the time of a
  /// 640x640 F32 tensor when the caches are busy with other work).
  bool stream = false;
  /// The letterbox bars too: set with `stream` unless the frame and the
  /// tensor together take at most StorePlan::bars_cached_within (for the
  /// fused nearest rows, StorePlan::nearest_cached_within), where the
  /// bars' lines are likely still cached from the last call on a pooled
  /// tensor. The fused nearest rows (preprocess_simd.cpp) follow it for
  /// their pixels too: their stores are most of their time (under Auto,
  /// measured per geometry: StoreTuner). Beside every
  /// other content row (the blocks path's, the fused 2x and 4x boxes') the
  /// kernel streams the bars whenever `stream` is set (BarStores,
  /// kernels/internal/preprocess_stores-inl.h).
  bool stream_bars = false;
  /// F32 rows of the blocks and vertical-first paths written to a cached
  /// row per plane first, then each plane's row streamed on its own (set,
  /// in place of `stream`, where StorePlan::by_rows says: hosts whose
  /// streaming stores to three planes in turn are slow, but to one row at a
  /// time are not).
  bool stream_rows = false;
};

/// Which stores of an output bypass the caches (PreprocessParams::stores
/// Auto), by the host. Measured in one process, calls alternated, with other
/// work taking part of the caches between calls (as the table's recipes do,
/// and a pipeline's model between frames):
/// * AMD Zen 4 (L2 1 MiB; sysconf's L3 is one CCD's 32 MiB, shared by its 8
///   cores): streamed above the L2; bars through the cache while the frame
///   and the tensor fit a third of the L3 (1080p -> 640 letterboxed on two
///   threads: 0.133 -> 0.092 ms; from 4K, or into 1280, 5-20% slower).
///   Zen 5 (EPYC, family 26) takes it too: there sysconf's L3 is the
///   socket's 508 MiB, so the bars never stream, and streamed bars
///   measured 1.05-1.18x the time of cached ones.
/// * Intel Xeon (L2 2 MiB; sysconf's L3 is the whole socket's, 260 MiB,
///   shared by every core on it and so by other tenants of a cloud host):
///   stores through the cache lose from half the L2 up, bars and pixels
///   alike (one thread, time streamed / cached: 1080p -> 640 letterboxed
///   bilinear 0.80-0.82, -> 512 0.78-0.82, -> 320 and 416 letterboxed
///   0.74-0.84, -> 640 nearest 0.78-0.84; 4K -> 640 letterboxed 0.79; two
///   threads 0.87-0.96). No last-level cache is counted on there.
/// * AMD Zen 3 (EPYC, L2 512 KiB, L3 32 MiB, no AVX-512): streaming lost
///   at every size (time cached / streamed, one thread, 24 MiB written
///   between calls: 1080p -> 640 bilinear 0.80, -> 416 letterboxed 0.87;
///   into 1280 the streamed rows took up to 5x the time). What is slow
///   there is the interleaving, not streaming: each output row computed
///   into a cached row per plane, then each plane's row streamed, took
///   0.65-0.88 of the time of cached stores for 3 x 416 x 416 to 3 x 1280 x
///   1280 F32 (a final-pass microbenchmark: 1280 2026 -> 1479 µs, 640 605
///   -> 405, 416 263 -> 170), so there the F32 rows above the L2 are
///   streamed row by row (`by_rows`), and nothing else streams. No host
///   not measured streams at all.
/// The fused nearest rows (pixels and bars alike, `stream_bars`) take
/// their own bound, `nearest_cached_within`: on Zen 4 a core's share of a
/// CCD's L3 (8 cores), taken as 4 x the L2, 4 MiB, and never above the
/// bars' own bound. Inside the table's rotating loop (the recipes' buffers
/// between calls, as a model's would be; 4 passes each way, alternated,
/// median speed-up over libyuv, one thread): above 4 MiB of frame and
/// tensor (720p into 512-1280, 1080p into 320-1280, NV12 and I420)
/// streamed was faster in 18 of 20 rows (1080p -> 608 NV12 2.16 ->
/// 2.55x, -> 320 NV12 1.75 -> 1.85x) and at most 4% slower in two (720p ->
/// 512 NV12 2.20 -> 2.11x); below it (720p -> 320 and 416) cached was
/// faster in 3 of 4 (720p -> 320 NV12 1.89x against 1.59x). The tuner
/// (StoreTuner) still times both and keeps the other where it is 3% faster.
struct StorePlan {
  std::int64_t stream_above = 0;           ///< bytes of tensor
  std::int64_t bars_cached_within = 0;     ///< bytes of frame and tensor
  bool by_rows = false;                    ///< stream_rows in place of stream
  std::int64_t nearest_cached_within = 0;  ///< bytes of frame and tensor, nearest rows
};

/// The hosts the rule tells apart: Intel (a socket-wide L3), AMD with
/// AVX-512 (Zen 4 and later: one CCD's L3), AMD without it (Zen 3 and
/// earlier: rows streamed a plane at a time), and every other (other
/// vendors and architectures), which stores through the caches.
enum class StoreHost : std::uint8_t { SocketWideL3, CcdL3, AmdBeforeZen4, Unmeasured };

/// The plan for caches of these sizes in bytes (<= 0: unknown, taken as 1
/// MiB and 8 MiB) on such a host.
StorePlan store_plan(std::int64_t l2, std::int64_t l3, StoreHost host);

/// This host's kind, by CPUID.
StoreHost store_host();

/// This host's plan: its cache sizes from sysconf and its kind, read once.
const StorePlan& host_store_plan();

/// The plan StoreMode::Auto follows: this host's, or the one a test set.
const StorePlan& active_store_plan();

/// Tests: Auto follows `plan` (kept alive by the caller) in place of this
/// host's until called again with nullptr. Set it between calls only.
void override_store_plan(const StorePlan* plan);

/// The job's store flags (PreprocessJob::stream, stream_bars, stream_rows)
/// for a call: the user's mode, or Auto by the plan, for a tensor and a
/// frame of these sizes in bytes, the tensor's dtype, and whether the
/// fused nearest rows write it (their bound: nearest_cached_within).
struct StoreChoice {
  bool stream = false;
  bool stream_bars = false;
  bool stream_rows = false;
  bool operator==(const StoreChoice&) const = default;
};
StoreChoice choose_stores(StoreMode mode, const StorePlan& plan, std::int64_t tensor_bytes,
                          std::int64_t frame_bytes, DType dtype, bool nearest = false);

/// StoreMode::Auto's stores for one geometry, measured where the plan alone
/// cannot tell: the fused nearest rows' pixels and bars (`stream_bars`),
/// most of whose time is stores. Two Zen 5 hosts of one CPUID family
/// measured them opposite ways (cached faster on one; on the other,
/// streamed took 0.72x the time at 720p -> 1280 with the tensor evicted
/// between calls, and cached 0.65x at 720p -> 640 letterboxed with nothing
/// between), and what runs between calls (a model, other cameras) decides
/// it as much as the host. So where the tensor is larger than the plan's
/// stream_above (a consumer would not find it in the L2 either way), a
/// geometry's calls, after kWarmup by the plan's stores (a new geometry's
/// first calls meet buffers touched for the first time, here and in the
/// work around them), try each candidate the caller offers (the plan's
/// first; repeats dropped) in runs of two calls, the second timed (the
/// first meets the caches as the last candidate's stores left them),
/// kRounds runs each in an order that rotates every round, and keep the one
/// whose least time but one is least (the plan's unless another is at
/// least 3% faster): a call's time only grows with what interrupts it.
/// They measure again kFirstRetuneAfter calls after the first choice (made
/// while the process was starting: in the table's loop of eight ways it
/// kept the slower stores in one run of two, 0.043 ms against 0.028 at
/// 720p -> 320 letterboxed nearest), then every kRetuneAfter calls, as the
/// work around them may have changed. The values are the same whichever
/// stores write them. Not
/// thread-safe: each geometry's state is lent to one call at a time
/// (AxisSet's lease in preprocess.cpp).
class StoreTuner {
 public:
  static constexpr int kWarmup = 8;
  static constexpr int kRounds = 7;
  static constexpr std::int64_t kFirstRetuneAfter = 64;
  static constexpr std::int64_t kRetuneAfter = 4096;
  static constexpr int kMaxCandidates = 3;
  struct Pick {
    int index = 0;       ///< the candidate this call stores by
    bool timed = false;  ///< record() its time
  };
  /// The candidates for this geometry (the plan's first); starts over when
  /// they differ from the last call's (a test's plan, say).
  void offer(const StoreChoice* candidates, int n);
  Pick pick();
  /// The time of the call pick() last timed, in nanoseconds; nothing for
  /// any other.
  void record(int index, std::int64_t ns);
  const StoreChoice& candidate(int index) const { return candidates_[index]; }
  int candidates() const { return n_; }
  /// The candidate chosen, or -1 before the first measurement ends.
  int chosen() const { return chosen_; }

 private:
  void decide();
  StoreChoice offered_[kMaxCandidates] = {};
  int n_offered_ = 0;
  StoreChoice candidates_[kMaxCandidates] = {};
  int n_ = 0;
  std::int64_t ns_[kMaxCandidates][kRounds] = {};
  int got_[kMaxCandidates] = {};
  int current_ = 0;         ///< the candidate of the run under way
  bool in_run_ = false;     ///< its first call made, its timed call next
  int awaiting_ = -1;       ///< the candidate of the timed call last picked
  bool measuring_ = false;  ///< timing candidates in turn
  int chosen_ = -1;
  std::int64_t since_ = 0;  ///< calls since the last choice
  int warmup_ = 0;          ///< calls before the first measurement
  int decisions_ = 0;       ///< choices made
};

/// Writes output rows [row_begin, row_end). Thread-safe for disjoint rows;
/// its scratch rows are lent from a process-wide pool and reused across
/// calls (no allocation once warm).
void preprocess_rows(const PreprocessJob& job, std::int64_t row_begin, std::int64_t row_end);

/// Grows the scratch rows of `stripes` pool slots to the job (the slots a
/// call's stripes take, however they are scheduled), before a call on
/// several threads: once warm, no stripe allocates.
void reserve_scratch(const PreprocessJob& job, int stripes);

/// The instruction set the dispatcher chose, e.g. "AVX3" or "AVX2".
const char* preprocess_simd_target();

}  // namespace neat::detail
