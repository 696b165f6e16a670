// The libtorch engine's loader. The engine itself (kernels/torch_model.cpp,
// kernels/torch_block_cache.cpp) is a plugin, libneat_torch.so, beside
// libneat: libtorch and the ~280 libraries it needs are loaded the first time
// a TorchScript model opens, never by a process that only preprocesses,
// records or runs ONNX (loading them took 0.6 s of every start, most of it
// the dynamic linker and torch's operator registry, and their memory).
//
// Where it looks: NEAT_TORCH_ENGINE if set (a path to the plugin), else the
// directory libneat itself was loaded from, else the loader's search path.
// A plugin of another NeatTensor build is refused, with both versions named.

#include <dlfcn.h>

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "neat/kernels/internal/model_engine.hpp"

namespace neat {
namespace {

#if NEAT_WITH_TORCH

constexpr const char* kPluginFile = "libneat_torch.so";

std::atomic<const TorchEngine*> g_engine{nullptr};
std::mutex g_loading;
std::int64_t g_pending_limit = -1;  // set before the engine loaded (under g_loading)

// The directory of the loaded libneat (empty if the loader does not say).
std::string library_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&library_directory), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  return std::filesystem::path(info.dli_fname).parent_path().string();
}

Error engine_error(const std::string& where, const std::string& what) {
  return Error(ErrorCode::Unavailable, where, "the libtorch engine did not load: " + what,
               {Fix{"install libtorch (apt install libtorch-dev) and keep " +
                        std::string(kPluginFile) + " beside libneat",
                    {}},
                Fix{"set NEAT_TORCH_ENGINE to the path of " + std::string(kPluginFile), {}},
                Fix{"give an ONNX export with backend=opencv", {}}});
}

Result<const TorchEngine*> load_engine(const std::string& where) {
  if (const TorchEngine* e = g_engine.load(std::memory_order_acquire)) return e;
  const std::lock_guard lock(g_loading);
  if (const TorchEngine* e = g_engine.load(std::memory_order_relaxed)) return e;

  std::vector<std::string> candidates;
  if (const char* env = std::getenv("NEAT_TORCH_ENGINE"); env != nullptr && *env != '\0') {
    candidates.emplace_back(env);  // the user's choice, alone
  } else {
    if (const std::string dir = library_directory(); !dir.empty())
      candidates.push_back(dir + "/" + kPluginFile);
    candidates.emplace_back(kPluginFile);  // the loader's search path
  }
  std::string tried;
  for (const std::string& path : candidates) {
    auto engine = detail::open_torch_engine(path);
    if (engine.ok()) {
      if (g_pending_limit >= 0) (void)(*engine)->set_block_cache_limit(g_pending_limit);
      g_engine.store(*engine, std::memory_order_release);
      return *engine;
    }
    tried += (tried.empty() ? "" : "; ") + std::string(engine.error().what());
  }
  return engine_error(where, tried);
}

#endif  // NEAT_WITH_TORCH

}  // namespace

namespace detail {

Result<const TorchEngine*> open_torch_engine(const std::string& path) {
#if NEAT_WITH_TORCH
  // Kept loaded whatever happens next: dlclose of a library that loaded
  // libtorch is not safe (its registries outlive the handle).
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Error(ErrorCode::Unavailable, path, why != nullptr ? why : "dlopen failed", {});
  }
  using Entry = const TorchEngine* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, kTorchEngineEntry));
  if (entry == nullptr) {
    return Error(ErrorCode::Unavailable, path,
                 path + " has no " + kTorchEngineEntry + ": not a NeatTensor libtorch engine", {});
  }
  const TorchEngine* engine = entry();
  if (engine == nullptr || engine->abi != kTorchEngineAbi || engine->version == nullptr ||
      std::string_view(engine->version) != NEAT_PROJECT_VERSION || engine->open == nullptr ||
      engine->block_cache_stats == nullptr || engine->set_block_cache_limit == nullptr) {
    const std::string theirs =
        engine != nullptr && engine->version != nullptr ? engine->version : "?";
    return Error(ErrorCode::Unavailable, path,
                 path + " was built for NeatTensor " + theirs + " (engine interface " +
                     std::to_string(engine != nullptr ? engine->abi : 0) + "); this libneat is " +
                     NEAT_PROJECT_VERSION + " (" + std::to_string(kTorchEngineAbi) + ")",
                 {Fix{"install the libneat_torch.so of the same NeatTensor build", {}}});
  }
  return engine;
#else
  return Error(ErrorCode::Unavailable, path,
               "this build of NeatTensor has no libtorch (TorchScript) engine", {});
#endif
}

}  // namespace detail

Result<std::int64_t> torch_block_cache_limit_from_env(const char* value) {
  if (value == nullptr || *value == '\0') return kDefaultTorchBlockCacheBytes;
  const std::string_view v(value);
  std::int64_t mib = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), mib);
  if (ec != std::errc() || end != v.data() + v.size() || mib < 0 || mib > (std::int64_t{1} << 40)) {
    return Error(
        ErrorCode::InvalidArgument, "NEAT_TORCH_BLOCK_CACHE_MIB",
        "'" + std::string(v) + "' is not a whole number of MiB (0 keeps libtorch's own allocator)",
        {Fix{"set it to a number such as 512, or unset it for the default (" +
                 std::to_string(kDefaultTorchBlockCacheBytes >> 20) + " MiB)",
             {}}});
  }
  return mib << 20;
}

bool torch_engine_loaded() noexcept {
#if NEAT_WITH_TORCH
  return g_engine.load(std::memory_order_acquire) != nullptr;
#else
  return false;
#endif
}

Result<std::unique_ptr<Model::Impl>> open_torch_model(const ModelOptions& options) {
#if NEAT_WITH_TORCH
  NEAT_ASSIGN_OR_RETURN(const TorchEngine* engine, load_engine("model '" + options.path + "'"));
  return engine->open(options);
#else
  return Error(ErrorCode::Unavailable, "model '" + options.path + "'",
               "this build of NeatTensor has no libtorch (TorchScript) engine",
               {Fix{"install libtorch-dev and rebuild", {}},
                Fix{"give an ONNX export with backend=opencv", {}}});
#endif
}

TorchBlockCacheStats torch_block_cache_stats() {
#if NEAT_WITH_TORCH
  if (const TorchEngine* e = g_engine.load(std::memory_order_acquire)) {
    return e->block_cache_stats();
  }
  const std::lock_guard lock(g_loading);
  TorchBlockCacheStats s;
  s.limit_bytes = g_pending_limit >= 0 ? g_pending_limit : kDefaultTorchBlockCacheBytes;
  return s;
#else
  return {};
#endif
}

Status set_torch_block_cache_limit(std::int64_t bytes) {
  if (bytes < 0) {
    return Error(ErrorCode::InvalidArgument, "set_torch_block_cache_limit",
                 "the limit is " + std::to_string(bytes) + " bytes; it cannot be negative",
                 {Fix{"give 0 to hold no free blocks, or a size in bytes", {}}});
  }
#if NEAT_WITH_TORCH
  const std::lock_guard lock(g_loading);
  if (const TorchEngine* e = g_engine.load(std::memory_order_relaxed)) {
    return e->set_block_cache_limit(bytes);
  }
  g_pending_limit = bytes;  // given to the engine when it loads
#endif
  return {};
}

}  // namespace neat
