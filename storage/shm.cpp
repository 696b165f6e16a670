#include "neat/storage/shm.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "internal/block_cache.hpp"

namespace neat {
namespace {

std::atomic<std::int64_t> g_live_storages{0};
std::atomic<std::int64_t> g_live_mapped{0};

std::string fd_text(int fd) {
  return "fd " + std::to_string(fd);
}

// MAP_SHARED of the whole object; a zero-byte object gets no mapping.
Result<std::byte*> map_object(int fd, std::int64_t bytes, bool read_only, std::string_view what) {
  if (bytes == 0) return static_cast<std::byte*>(nullptr);
  const int prot = read_only ? PROT_READ : (PROT_READ | PROT_WRITE);
  void* p = ::mmap(nullptr, static_cast<std::size_t>(bytes), prot, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    return os_error(std::string(what) + ": mmap of " + std::to_string(bytes) + " B", errno);
  }
  return static_cast<std::byte*>(p);
}

std::string unique_posix_name() {
  static std::atomic<std::uint64_t> n{0};
  return "/neat-" + std::to_string(::getpid()) + "-" + std::to_string(n.fetch_add(1));
}

}  // namespace

struct ShmStorage::Private {};

ShmStorage::ShmStorage(const Private&, UniqueFd fd, std::byte* base, std::int64_t mapped,
                       std::int64_t size, FdIdentity identity, ShmKind kind, bool read_only,
                       bool shared, bool sealed, std::string unlink_name)
    : Storage(StorageKind::Shm, kCpu, size, read_only, base, fd_buffer_id(identity)),
      fd_(std::move(fd)),
      base_(base),
      mapped_(mapped),
      identity_(identity),
      unlink_name_(std::move(unlink_name)),
      kind_(kind),
      shrink_sealed_(sealed),
      shared_(shared) {
  g_live_storages.fetch_add(1, std::memory_order_relaxed);
  g_live_mapped.fetch_add(mapped_, std::memory_order_relaxed);
}

namespace detail {

// A ShmPool's kept objects. Storages it handed out hold it (std::shared_ptr),
// so releases after the pool object is gone still land here and are closed
// when the last one goes.
struct ShmPoolState {
  struct Object {
    UniqueFd fd;
    std::byte* base = nullptr;
    std::int64_t capacity = 0;
    FdIdentity identity;
    bool sealed = false;
  };
  explicit ShmPoolState(ShmPoolConfig c) : config(c) {
    free.reserve(static_cast<std::size_t>(c.max_cached_buffers));
  }
  ~ShmPoolState() {
    for (auto& o : free)
      ::munmap(o.base, static_cast<std::size_t>(o.capacity));
  }
  // Called by ShmStorage's destructor. True when the object was kept (the
  // caller then neither unmaps nor closes it).
  bool release(UniqueFd& fd, std::byte* base, std::int64_t capacity, const FdIdentity& identity,
               bool sealed, bool reusable) noexcept {
    std::lock_guard lock(mutex);
    if (!reusable || static_cast<int>(free.size()) >= config.max_cached_buffers ||
        cached_bytes + capacity > config.max_cached_bytes) {
      not_recycled += 1;
      return false;
    }
    free.push_back(Object{std::move(fd), base, capacity, identity, sealed});  // capacity reserved
    cached_bytes += capacity;
    recycled += 1;
    return true;
  }

  ShmPoolConfig config;
  mutable std::mutex mutex;
  std::vector<Object> free;
  BlockCache blocks{static_cast<std::size_t>(config.max_cached_buffers) + 16, 0};
  std::int64_t cached_bytes = 0;
  std::uint64_t hits = 0, misses = 0, recycled = 0, not_recycled = 0;
};

}  // namespace detail

ShmStorage::~ShmStorage() {
  bool kept = false;
  if (pool_ != nullptr && base_ != nullptr) {
    const bool reusable = !read_only() && !shared_.load(std::memory_order_relaxed);
    kept = pool_->release(fd_, base_, mapped_, identity_, shrink_sealed_, reusable);
  }
  if (base_ != nullptr && !kept) ::munmap(base_, static_cast<std::size_t>(mapped_));
  if (!unlink_name_.empty()) ::shm_unlink(unlink_name_.c_str());
  g_live_storages.fetch_sub(1, std::memory_order_relaxed);
  g_live_mapped.fetch_sub(mapped_, std::memory_order_relaxed);
}

bool ShmStorage::donatable() const noexcept {
  return !read_only() && !shared_.load(std::memory_order_relaxed);
}

std::string ShmStorage::describe() const {
  std::string out = kind_ == ShmKind::Memfd ? "memfd " : "posix shm ";
  out += std::to_string(size_bytes());
  out += " B (";
  out += fd_text(fd_.get());
  out += ", inode ";
  out += std::to_string(identity_.inode);
  if (read_only()) out += ", read-only";
  out += ')';
  return out;
}

Result<std::shared_ptr<ShmStorage>> ShmStorage::create(std::int64_t bytes, ShmOptions options) {
  if (bytes < 0) return invalid_argument("shm create: negative size " + std::to_string(bytes));
  UniqueFd fd;
  std::string unlink_name;
  bool sealed = false;
  if (options.kind == ShmKind::Memfd) {
    const std::string name = options.name.empty() ? "neat" : std::string(options.name);
    const unsigned flags = MFD_CLOEXEC | (options.seal ? MFD_ALLOW_SEALING : 0U);
    fd.reset(::memfd_create(name.c_str(), flags));
    if (!fd) return os_error("memfd_create(\"" + name + "\")", errno);
  } else {
    std::string name = options.name.empty() ? unique_posix_name() : std::string(options.name);
    if (name.size() < 2 || name[0] != '/' || name.find('/', 1) != std::string::npos) {
      return invalid_argument("shm create: POSIX shm name \"" + name +
                              "\" must be one '/' followed by a name without '/'");
    }
    fd.reset(::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd) return os_error("shm_open(\"" + name + "\")", errno);
    unlink_name = std::move(name);
  }
  auto fail = [&](Error e) -> Result<std::shared_ptr<ShmStorage>> {
    if (!unlink_name.empty()) ::shm_unlink(unlink_name.c_str());
    return e;
  };
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
    return fail(os_error("shm create: ftruncate to " + std::to_string(bytes) + " B", errno));
  }
  if (options.kind == ShmKind::Memfd && options.seal) {
    if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) {
      return fail(os_error("shm create: sealing the memfd (F_ADD_SEALS)", errno));
    }
    sealed = true;
  }
  NEAT_ASSIGN_OR_RETURN(FdIdentity identity, neat::fd_identity(fd.get()));
  auto base = map_object(fd.get(), bytes, false, "shm create");
  if (!base.ok()) return fail(std::move(base).error());
  try {
    return std::make_shared<ShmStorage>(Private{}, std::move(fd), *base, bytes, bytes, identity,
                                        options.kind, false, false, sealed, std::move(unlink_name));
  } catch (const std::bad_alloc&) {
    if (*base != nullptr) ::munmap(*base, static_cast<std::size_t>(bytes));
    return fail(resource_exhausted("shm create: out of memory for the storage object"));
  }
}

Result<std::shared_ptr<ShmStorage>> ShmStorage::import(int fd, ShmImportOptions options) {
  const std::string what = "shm import of " + fd_text(fd);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) return os_error(what + " (fstat)", fd < 0 ? EBADF : errno);
  if (!S_ISREG(st.st_mode)) {
    return invalid_argument(what +
                            ": not a memfd or shm object (not a regular file); "
                            "DMA-BUF fds import with wrap_dmabuf()");
  }
  if (st.st_size <= 0) {
    return invalid_argument(what +
                            ": the object is empty (0 bytes); the exporter must size it "
                            "(ftruncate) before sending it");
  }
  const int seals = ::fcntl(fd, F_GET_SEALS);
  const bool sealed = seals >= 0 && (seals & F_SEAL_SHRINK) != 0;
  if (options.require_shrink_seal && !sealed) {
    return failed_precondition(what +
                               ": the file is not sealed against shrinking (F_SEAL_SHRINK); "
                               "a peer could truncate it under the mapping");
  }
  const int accmode = ::fcntl(fd, F_GETFL) & O_ACCMODE;
  if (!options.read_only && accmode == O_RDONLY) {
    return failed_precondition(what +
                               ": the fd was opened read-only; import it with read_only = true");
  }
  NEAT_ASSIGN_OR_RETURN(UniqueFd own, UniqueFd::duplicate(fd));
  const auto size = static_cast<std::int64_t>(st.st_size);
  NEAT_ASSIGN_OR_RETURN(std::byte * base, map_object(own.get(), size, options.read_only, what));
  const FdIdentity identity{static_cast<std::uint64_t>(st.st_dev),
                            static_cast<std::uint64_t>(st.st_ino), 0};
  const ShmKind kind = seals >= 0 ? ShmKind::Memfd : ShmKind::Posix;
  try {
    return std::make_shared<ShmStorage>(Private{}, std::move(own), base, size, size, identity, kind,
                                        options.read_only, !options.exclusive, sealed,
                                        std::string());
  } catch (const std::bad_alloc&) {
    ::munmap(base, static_cast<std::size_t>(size));
    return resource_exhausted(what + ": out of memory for the storage object");
  }
}

Result<std::shared_ptr<ShmStorage>> ShmStorage::open_posix(std::string_view name,
                                                           ShmImportOptions options) {
  const std::string n(name);
  UniqueFd fd(::shm_open(n.c_str(), (options.read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC, 0));
  if (!fd) return os_error("shm_open(\"" + n + "\")", errno);
  return import(fd.get(), options);
}

namespace {

class ShmAllocator final : public StorageAllocator {
 public:
  Result<std::shared_ptr<Storage>> allocate(const AllocRequest& request) override {
    NEAT_ASSIGN_OR_RETURN(std::shared_ptr<ShmStorage> s, ShmStorage::create(request.bytes));
    return std::shared_ptr<Storage>(std::move(s));
  }
};

}  // namespace

StorageAllocator& shm_allocator() noexcept {
  static ShmAllocator allocator;
  return allocator;
}

// ---- ShmPool ------------------------------------------------------------------

std::shared_ptr<ShmPool> ShmPool::create(ShmPoolConfig config) {
  config.max_cached_buffers = std::max(config.max_cached_buffers, 0);
  config.max_cached_bytes = std::max<std::int64_t>(config.max_cached_bytes, 0);
  return std::shared_ptr<ShmPool>(new ShmPool(std::make_shared<detail::ShmPoolState>(config)));
}

ShmPool::ShmPool(std::shared_ptr<detail::ShmPoolState> state) : state_(std::move(state)) {}
ShmPool::~ShmPool() = default;

Result<std::shared_ptr<Storage>> ShmPool::allocate(const AllocRequest& request) {
  if (request.bytes < 0) {
    return invalid_argument("shm pool allocation of " + std::to_string(request.bytes) +
                            " bytes: the size is negative");
  }
  static const std::int64_t page = ::sysconf(_SC_PAGESIZE);
  const std::int64_t capacity = std::max<std::int64_t>(1, (request.bytes + page - 1) / page) * page;
  detail::ShmPoolState::Object o;
  bool hit = false;
  {
    std::lock_guard lock(state_->mutex);
    auto& fb = state_->free;
    for (std::size_t i = fb.size(); i-- > 0;) {  // most recently released first
      if (fb[i].capacity == capacity) {
        o = std::move(fb[i]);
        fb.erase(fb.begin() + static_cast<std::ptrdiff_t>(i));
        state_->cached_bytes -= capacity;
        state_->hits += 1;
        hit = true;
        break;
      }
    }
    if (!hit) state_->misses += 1;
  }
  if (hit) {
    if (request.zero_fill) std::memset(o.base, 0, static_cast<std::size_t>(request.bytes));
  } else {
    // A new sealed memfd; its fd and mapping move into the pooled storage.
    NEAT_ASSIGN_OR_RETURN(std::shared_ptr<ShmStorage> fresh, ShmStorage::create(capacity));
    o.fd = std::move(fresh->fd_);
    o.base = fresh->base_;
    o.capacity = capacity;
    o.identity = fresh->identity_;
    o.sealed = fresh->shrink_sealed_;
    fresh->base_ = nullptr;  // its destructor now releases nothing
  }
  try {
    auto storage = std::allocate_shared<ShmStorage>(
        detail::CachedBlockAllocator<ShmStorage, detail::ShmPoolState>(state_),
        ShmStorage::Private{}, std::move(o.fd), o.base, capacity, request.bytes, o.identity,
        ShmKind::Memfd, false, false, o.sealed, std::string());
    storage->pool_ = state_;
    return std::shared_ptr<Storage>(std::move(storage));
  } catch (const std::bad_alloc&) {
    ::munmap(o.base, static_cast<std::size_t>(capacity));  // o.fd closes itself
    return resource_exhausted("shm pool: out of memory for the storage object");
  }
}

ShmPoolStats ShmPool::stats() const {
  std::lock_guard lock(state_->mutex);
  ShmPoolStats s;
  s.hits = state_->hits;
  s.misses = state_->misses;
  s.recycled = state_->recycled;
  s.not_recycled = state_->not_recycled;
  s.cached_buffers = static_cast<std::int64_t>(state_->free.size());
  s.cached_bytes = state_->cached_bytes;
  return s;
}

void ShmPool::trim() {
  std::vector<detail::ShmPoolState::Object> drop;
  {
    std::lock_guard lock(state_->mutex);
    drop.swap(state_->free);
    state_->free.reserve(static_cast<std::size_t>(state_->config.max_cached_buffers));
    state_->cached_bytes = 0;
  }
  for (auto& o : drop)
    ::munmap(o.base, static_cast<std::size_t>(o.capacity));
}

Result<NeatTensor> wrap_shm(int fd, DType dtype, DimsRef shape, DimsRef strides,
                            std::int64_t byte_offset, ShmImportOptions options) {
  NEAT_ASSIGN_OR_RETURN(std::shared_ptr<ShmStorage> s, ShmStorage::import(fd, options));
  return NeatTensor::from_storage(std::move(s), dtype, shape, strides, byte_offset);
}

ShmStats shm_stats() noexcept {
  return ShmStats{g_live_storages.load(std::memory_order_relaxed),
                  g_live_mapped.load(std::memory_order_relaxed)};
}

}  // namespace neat
